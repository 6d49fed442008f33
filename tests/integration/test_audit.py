"""The audit in `report --html`, `report --jsonl` and `serve`, after two crawls of a site that changed."""

from __future__ import annotations

import dataclasses
import json
import threading
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

from changing_crawl import HOST, crawl_settings, make_due, run_crawl
from chromium import Chromium
from typer.testing import CliRunner

from sitemapcrawl.cli.app import app
from sitemapcrawl.config import Settings
from sitemapcrawl.report.html import write_report
from sitemapcrawl.report.panels import AUDIT_CAP, panel_data, take_snapshot
from sitemapcrawl.report.serve import ServeOptions, make_server, server_url
from sitemapcrawl.storage.store import Store
from sitemapcrawl.testweb import changing_web


def test_audit_lists_history_and_the_page_at_1280_px(
        store: Store, settings: Settings, make_testweb, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    settings = crawl_settings(settings)
    server = make_testweb(changing_web(1))
    run_crawl(store, settings, server)
    first = panel_data(take_snapshot(store, datetime.now(UTC).replace(microsecond=0)), "audit")
    assert first["lists"]["multi-listed"]["urls"] == [server.url(HOST, "/news/1.html")]  # news and pages
    before = server.truth
    server.change_web(changing_web(2))
    make_due(store, sitemaps_only=True)
    run_crawl(store, settings, server, rounds=3)

    def url(path: str) -> str:
        return server.url(HOST, path)

    snapshot = take_snapshot(store, datetime.now(UTC).replace(microsecond=0))
    audit = panel_data(snapshot, "audit")
    lists = {name: set(item["urls"]) for name, item in audit["lists"].items()}
    assert audit["mixed"] is True and audit["cap"] == AUDIT_CAP
    assert lists["http-error"] == {url("/broken.html"), url("/gone.html")}
    assert lists["redirect"] == {url("/moved.html")}
    assert lists["blocked"] == {url("/blocked/secret.html")}
    assert lists["noindex"] == {url("/noindex.html")}
    assert lists["canonical"] == {url("/dup.html")}
    # Links as crawled: the home page was read in the first crawl only (not due again), so the new
    # articles are orphans until it is read again; the retired page is in no sitemap any more.
    linked = {t for targets in before.link_graph().values() for t in targets}
    assert lists["orphans"] == (server.truth.sitemap_listed() | {url("/old/1.html"), url("/old/2.html")}) - linked
    assert lists["orphans"] == {url(p) for p in ("/orphan.html", "/gone.html", "/old/1.html", "/old/2.html",
                                                 "/news/4.html", "/news/5.html")}
    assert lists["unlisted"] == {url("/linked-only.html")}
    assert lists["multi-listed"] == set()  # news/1 left the news sitemap: listed once now
    assert all(item["total"] == len(item["urls"]) for item in audit["lists"].values())

    history = {h["url"]: h["parses"] for h in panel_data(snapshot, "history")["sitemaps"]}
    news = history[url("/sitemap-news.xml")]
    assert [(p["entries"], p["first"], p["added"], p["removed"]) for p in news] == [(3, True, 0, 0), (4, False, 2, 1)]
    assert news[-1]["statuses"].get("fetched") == 4  # the new articles were fetched in the next rounds
    months = dict(panel_data(snapshot, "freshness")["lastmod_by_month"])
    assert months["2024-05"] == 5 and months["2024-06"] == 1 and months["2024-03"] == 0
    assert list(months)[0] == "2022-01" and len(months) == 30  # every month, 2022-01 to 2024-06

    # report --jsonl carries the same.
    common = ["--hbase", settings.hbase, "--table-prefix", settings.table_prefix]
    done = CliRunner().invoke(app, [*common, "report", "--jsonl"])
    assert done.exit_code == 0, done.output
    records = [json.loads(line) for line in done.stdout.splitlines()]
    by_kind = {r["kind"]: r for r in records}
    assert records[-1]["kind"] == "totals"
    assert set(by_kind["audit"]["lists"]["orphans"]["urls"]) == lists["orphans"]
    assert dict(map(tuple, by_kind["lastmod_by_month"]["months"])) == months
    assert sum(r["kind"] == "sitemap_history" for r in records) == 4

    # The page: no console errors, the lists and the history chart shown, the why column on screen at 1280 px.
    path = tmp_path / "audit.html"
    write_report(snapshot, path)
    with Chromium(tmp_path) as browser:
        tab = browser.open(path.as_uri())
        shown = tab.text()
        shot = tab.screenshot(tmp_path / "audit.png")
        assert tab.console_errors() == []
        assert tab.evaluate("window.innerWidth") == 1280
        why = tab.evaluate("JSON.stringify(document.querySelector('#sitemaps th.why').getBoundingClientRect())")
        assert 0 < json.loads(why)["right"] <= 1280, why
        assert tab.evaluate("document.querySelectorAll('#history svg').length") == 4
        assert tab.evaluate("document.querySelectorAll('#freshness svg rect').length") >= 30
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for heading in ("Sitemap audit: what to fix", "Orphans: in a sitemap, linked from no crawled page",
                    "Missing from the sitemaps: reached by links, listed nowhere", "Pages by lastmod month",
                    "Sitemap history"):
        assert heading in shown, heading
    for path_ in ("/broken.html", "/moved.html", "/blocked/secret.html", "/noindex.html", "/dup.html",
                  "/orphan.html", "/linked-only.html"):
        assert url(path_) in shown

    # serve: the same panels as JSON and HTML fragments.
    with Store(dataclasses.replace(settings)) as served:
        http = make_server(served, ServeOptions(port=0, refresh=1.0))
        thread = threading.Thread(target=http.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        thread.start()
        try:
            base = server_url(http)
            with urllib.request.urlopen(base + "api/audit", timeout=30) as answer:  # noqa: S310 - loopback
                served_audit = json.loads(answer.read())
            with urllib.request.urlopen(base + "api/history?limit=1", timeout=30) as answer:  # noqa: S310
                served_history = json.loads(answer.read())
            with urllib.request.urlopen(base + "fragment/audit", timeout=30) as answer:  # noqa: S310
                fragment = answer.read().decode()
        finally:
            http.shutdown()
            http.server_close()
            thread.join(timeout=30)
    assert set(served_audit["lists"]["unlisted"]["urls"]) == {url("/linked-only.html")}
    assert served_history["count"] == 4 and len(served_history["sitemaps"]) == 1
    assert url("/orphan.html") in fragment
