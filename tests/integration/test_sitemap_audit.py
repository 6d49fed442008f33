"""The sitemap audit in sitemap-only mode (issue 46): on a loopback site, each list holds exactly the URLs that
earn it and no honest page, in `report --jsonl`, the HTML report, `/api/audit` and `export --audit`.

The site: noindex by meta robots, by googlebot's meta and by X-Robots-Tag; canonical by `<link>` and by a
Link header on a PDF; a Cloudflare-style challenge beside a real 404; an hreflang alternate that does not name
its page back beside pairs that do (in the heads, and in the sitemap's xhtml:link); a future lastmod; a
sitemap giving every URL one timestamp; a news entry three days old beside a fresh one; and honest pages,
among them traps that look alike (another crawler's noindex, a canonical naming itself).
"""

from __future__ import annotations

import dataclasses
import json
import threading
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from changing_crawl import make_due
from cli_helpers import cli

from sitemapcrawl.config import Settings
from sitemapcrawl.jobs.crawl import CrawlOptions, crawl
from sitemapcrawl.model.cells import encode
from sitemapcrawl.model.webpage import WebPage
from sitemapcrawl.modes import CrawlMode
from sitemapcrawl.report.html import write_report
from sitemapcrawl.report.panels import panel_data, take_counted_snapshot, take_snapshot
from sitemapcrawl.report.serve import ServeOptions, make_server, server_url
from sitemapcrawl.storage.dueindex import write_pages
from sitemapcrawl.storage.store import Store
from sitemapcrawl.storage.tables import Unreadable, read_page
from sitemapcrawl.testweb import (
    Entry,
    Fault,
    FaultSpec,
    Page,
    Resource,
    Robots,
    Site,
    Sitemap,
    TestWebServer,
    Web,
)
from sitemapcrawl.web import rowkeys
from sitemapcrawl.web.http import PoliteHttpClient
from sitemapcrawl.web.rules import UrlRules

HOST = "127.0.46.30"
AGENT = "AuditBot/1.0 (+http://127.0.0.1/bot)"
HONEST = ("/", "/plain-1.html", "/plain-2.html", "/otherbot.html", "/self-canonical.html", "/original.html",
          "/pt.html", "/br.html", "/fr.html", "/es.html", "/de.html", "/news/fresh.html")
#: The lists of the issue, and the paths each must hold exactly.
EXPECTED = {
    "noindex": {"/noindex-meta.html", "/noindex-googlebot.html", "/noindex-header.html"},
    "canonical": {"/dup.html", "/doc.pdf"},
    "blocked-by-site": {"/challenged.html"},
    "http-error": {"/missing.html"},
    "hreflang-no-return": {"/en.html"},
    "lastmod-suspect": {"/future.html", *(f"/same/{n}.html" for n in range(5))},
    "news-stale": {"/news/old.html"},
}


def audit_site(now: datetime) -> Site:
    pages = (
        Page("/"), Page("/plain-1.html"), Page("/plain-2.html"),
        Page("/noindex-meta.html", meta_robots="noindex, follow"),
        Page("/noindex-googlebot.html", googlebot="noindex"),
        Page("/noindex-header.html", headers=(("X-Robots-Tag", "noindex"),)),
        Page("/otherbot.html", headers=(("X-Robots-Tag", "otherbot: noindex, nofollow"),)),
        Page("/dup.html", canonical="/original.html"), Page("/original.html", canonical="/original.html"),
        Page("/self-canonical.html", canonical="/self-canonical.html"),
        Page("/challenged.html"),
        Page("/en.html", alternates=(("en", "/en.html"), ("de", "/de.html"))),
        Page("/de.html"),  # read, and names no alternate: it does not name /en.html back
        Page("/pt.html", alternates=(("pt-pt", "/pt.html"), ("pt-br", "/br.html"))),
        Page("/br.html", alternates=(("pt-br", "/br.html"), ("pt-pt", "/pt.html"))),
        Page("/fr.html"), Page("/es.html"),  # their pair is in the sitemap
        Page("/future.html"),
        Page("/news/old.html"), Page("/news/fresh.html"),
        *(Page(f"/same/{n}.html") for n in range(5)),
    )
    day = lambda n: f"2024-03-{n:02d}"  # noqa: E731 - a distinct past date per entry
    main = [Entry(path, lastmod=day(n + 1)) for n, path in enumerate(
        ("/", "/plain-1.html", "/plain-2.html", "/noindex-meta.html", "/noindex-googlebot.html",
         "/noindex-header.html", "/otherbot.html", "/dup.html", "/original.html", "/self-canonical.html",
         "/challenged.html", "/missing.html", "/en.html", "/de.html", "/pt.html", "/br.html", "/doc.pdf"))]
    main += [Entry("/fr.html", lastmod=day(20), alternates=(("fr", "/fr.html"), ("es", "/es.html"))),
             Entry("/es.html", lastmod=day(21), alternates=(("es", "/es.html"), ("fr", "/fr.html"))),
             Entry("/future.html", lastmod="2099-01-01")]
    iso = lambda moment: moment.strftime("%Y-%m-%dT%H:%M:%SZ")  # noqa: E731
    news = (Entry("/news/old.html", lastmod=iso(now - timedelta(days=3)), news_date=iso(now - timedelta(days=3)),
                  news_title="Old news"),
            Entry("/news/fresh.html", lastmod=iso(now - timedelta(hours=1)), news_date=iso(now - timedelta(hours=1)),
                  news_title="Fresh news", images=1))
    same = tuple(Entry(f"/same/{n}.html", lastmod="2024-01-01") for n in range(5))
    return Site(HOST, "audit", pages=pages,
                resources=(Resource("/doc.pdf", headers=(("Link", '</doc.html>; rel="canonical"'),)),),
                robots=Robots(sitemaps=("/sitemap.xml", "/sitemap-news.xml", "/sitemap-same.xml")),
                sitemaps=(Sitemap("/sitemap.xml", entries=tuple(main)), Sitemap("/sitemap-news.xml", entries=news),
                          Sitemap("/sitemap-same.xml", entries=same)),
                faults=(("/challenged.html", FaultSpec(Fault.CHALLENGE)),
                        ("/missing.html", FaultSpec(Fault.NOT_FOUND))))


def test_each_list_holds_exactly_the_urls_that_earn_it_in_sitemap_only_mode(
        store: Store, settings: Settings, make_testweb: Callable[[Web], TestWebServer], tmp_path) -> None:  # type: ignore[no-untyped-def]
    server = make_testweb(Web((audit_site(datetime.now(UTC)),), "audit"))
    settings = dataclasses.replace(settings, user_agent=AGENT, delay=0.0)
    client = PoliteHttpClient.from_settings(settings)
    try:
        crawl(store, client, UrlRules.from_settings(settings), [server.base_url(HOST) + "\n"],
              CrawlOptions(mode=CrawlMode.SITEMAP_ONLY, rounds=3))
    finally:
        client.close()

    def url(path: str) -> str:
        return server.url(HOST, path)

    expected = {name: {url(path) for path in paths} for name, paths in EXPECTED.items()}
    honest = {url(path) for path in HONEST}
    now = datetime.now(UTC).replace(microsecond=0)
    scanned = panel_data(take_snapshot(store, now), "audit")
    counted = panel_data(take_counted_snapshot(store, now), "audit")  # what serve shows: the counters
    for audit in (scanned, counted):
        lists = audit["lists"]
        for name, urls in expected.items():
            assert set(lists[name]["urls"]) == urls and lists[name]["total"] == len(urls), name
            assert lists[name]["export"] == f"sitemapcrawl export --audit {name}"
        for name, item in lists.items():
            assert not honest & set(item["urls"]) or name == "orphans", (name, honest & set(item["urls"]))
        reasons = lists["noindex"]["reasons"]
        assert reasons[url("/noindex-header.html")] == "X-Robots-Tag: noindex"
        assert reasons[url("/noindex-googlebot.html")] == "meta googlebot: noindex"
        assert lists["canonical"]["reasons"][url("/doc.pdf")] == f"names {url('/doc.html')}"
        assert lists["blocked-by-site"]["reasons"][url("/challenged.html")] == "cloudflare (HTTP 403)"
        assert lists["hreflang-no-return"]["reasons"][url("/en.html")] == f"de {url('/de.html')} does not name it back"
        assert lists["lastmod-suspect"]["reasons"][url("/future.html")] == "lastmod in the future"
        assert lists["lastmod-suspect"]["reasons"][url("/same/0.html")] == "its sitemap gives every URL one timestamp"
        assert lists["news-stale"]["reasons"][url("/news/old.html")].startswith("published ")
    assert scanned["lists"] == counted["lists"]
    hosts = panel_data(take_snapshot(store, now), "hosts")["hosts"]
    assert [(h["host"], h["blocked_by_site"], h["errors"]) for h in hosts] == [(HOST, 1, 1)]  # the 404 only

    # report --jsonl, /api/audit, the HTML page and export --audit say the same.
    done = cli(settings, "report", "--jsonl")
    assert done.exit_code == 0, done.output
    audit = next(json.loads(line) for line in done.stdout.splitlines() if json.loads(line)["kind"] == "audit")
    assert {name: set(audit["lists"][name]["urls"]) for name in expected} == expected
    http = make_server(store, ServeOptions(port=0, refresh=1.0))
    thread = threading.Thread(target=http.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        with urllib.request.urlopen(server_url(http) + "api/audit", timeout=30) as answer:  # noqa: S310 - loopback
            served = json.loads(answer.read())
    finally:
        http.shutdown()
        http.server_close()
        thread.join(timeout=30)
    assert {name: set(served["lists"][name]["urls"]) for name in expected} == expected
    page = tmp_path / "audit.html"
    write_report(take_snapshot(store, now), page)
    shown = page.read_text(encoding="utf-8")
    assert "cloudflare (HTTP 403)" in shown and "lastmod in the future" in shown
    for name, urls in expected.items():
        exported = cli(settings, "export", "--format", "jsonl", "--audit", name)
        assert exported.exit_code == 0, exported.output
        rows = [json.loads(line) for line in exported.stdout.splitlines()]
        assert {row["url"] for row in rows} == urls, name
        assert all(any(line.startswith(f"{name}: ") for line in row["audit"]) for row in rows)
    everything = cli(settings, "export", "--format", "jsonl").stdout.splitlines()
    export = {row["url"]: row for row in map(json.loads, everything)}
    assert export[url("/noindex-header.html")]["x_robots_tag"] == "noindex"
    assert export[url("/fr.html")]["hreflang"] == [{"hreflang": "fr", "href": url("/fr.html")},
                                                   {"hreflang": "es", "href": url("/es.html")}]
    assert (export[url("/news/fresh.html")]["news_title"], export[url("/news/fresh.html")]["images"]) == (
        "Fresh news", 1)
    assert export[url("/future.html")]["lastmod_verdict"] == "future"
    assert export[url("/plain-1.html")]["lastmod_verdict"] == "ok" and export[url("/plain-1.html")]["audit"] == [
        "orphans: linked from no crawled page"]


def test_a_lastmod_that_moved_without_a_change_and_one_that_stayed_after_a_change_are_named(
        store: Store, settings: Settings, make_testweb: Callable[[Web], TestWebServer]) -> None:
    """Two fetches apart: /moved.html's body stayed the same while its lastmod moved on; /stayed.html's body
    changed while its lastmod stayed a month old. The first fetch is put ten and five days back (as if the
    crawl had run then), so the tests' one-day slack is passed."""
    now = datetime.now(UTC).replace(microsecond=0)
    day = lambda n: (now - timedelta(days=n)).strftime("%Y-%m-%d")  # noqa: E731

    def web(moved_lastmod: str) -> Web:
        entries = (Entry("/moved.html", lastmod=moved_lastmod), Entry("/stayed.html", lastmod=day(30)),
                   Entry("/honest.html", lastmod=day(40)))
        return Web((Site(HOST, "lastmods", pages=(Page("/moved.html"), Page("/stayed.html"), Page("/honest.html")),
                         robots=Robots(sitemaps=("/sitemap.xml",)),
                         sitemaps=(Sitemap("/sitemap.xml", entries=entries),)),), "lastmods")

    server = make_testweb(web(day(20)))
    settings = dataclasses.replace(settings, user_agent=AGENT, delay=0.0)

    def run(seeds: list[str], rounds: int) -> None:
        client = PoliteHttpClient.from_settings(settings)
        try:
            crawl(store, client, UrlRules.from_settings(settings), seeds,
                  CrawlOptions(mode=CrawlMode.SITEMAP_ONLY, rounds=rounds))
        finally:
            client.close()

    run([server.base_url(HOST) + "\n"], 3)
    back = {"/moved.html": 10, "/stayed.html": 5, "/honest.html": 10}
    puts = [(rowkeys.row_key(server.url(HOST, path)).encode(), encode(WebPage(
        "", fetch_time=now - timedelta(days=n), content_changed=now - timedelta(days=n), prev_fetch_time=None,
        next_fetch=now - timedelta(minutes=1)))) for path, n in back.items()]
    write_pages(store, puts)
    server.change_web(web(day(2)))  # the sitemap moves /moved.html's lastmod on; its body is as it was
    server.touch(server.url(HOST, "/stayed.html"))  # a new body under the same old lastmod
    make_due(store, sitemaps_only=True)
    run([], 2)

    verdicts = {path: read_page(store, rowkeys.row_key(server.url(HOST, path)).encode(), ["lastmod_verdict"],
                                "test", Unreadable()) for path in back}
    assert {path: row.lastmod_verdict if row else None for path, row in verdicts.items()} == {
        "/moved.html": "moved-same-content", "/stayed.html": "stayed-content-changed", "/honest.html": None}
    audit = panel_data(take_counted_snapshot(store, datetime.now(UTC).replace(microsecond=0)), "audit")
    assert audit["lists"]["lastmod-suspect"]["reasons"] == {
        server.url(HOST, "/moved.html"): "lastmod moved while the content stayed the same",
        server.url(HOST, "/stayed.html"): "content changed while the lastmod stayed"}
