"""`report --html`: one self-contained page from a real crawl, rendered in headless Chromium."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

from chromium import Chromium
from quality_web import crawl_quality_web, quality_settings, quality_web, sitemap_urls
from typer.testing import CliRunner

from sitemapcrawl.cli.app import app
from sitemapcrawl.config import Settings
from sitemapcrawl.model.cells import encode
from sitemapcrawl.model.webpage import WEBPAGE_TABLE, WebPage
from sitemapcrawl.report.html import write_report
from sitemapcrawl.report.panels import panel_data, take_snapshot
from sitemapcrawl.storage.store import Store
from sitemapcrawl.web import rowkeys

HOSTILE = '<img src="x" onerror="console.error(1)"><script>console.error(2)</script>'


def test_the_html_report_shows_the_crawl_and_opens_without_network_or_console_errors(
        store: Store, settings: Settings, make_testweb, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    server = make_testweb(quality_web())
    settings = quality_settings(settings)
    crawl_quality_web(store, settings, server)
    sm = sitemap_urls(server)
    # A problem line a hostile site could cause must show as text, never as markup.
    odd = "http://127.0.0.9/odd.xml"
    store.write(WEBPAGE_TABLE, [(rowkeys.row_key(odd).encode(), encode(WebPage(
        odd, is_sitemap=True, sitemap_problems=(HOSTILE,))))])
    snapshot = take_snapshot(store, datetime.now(UTC).replace(microsecond=0))
    path = tmp_path / "report.html"
    size = write_report(snapshot, path)
    text = path.read_text(encoding="utf-8")
    assert size == len(text.encode("utf-8"))

    # Self-contained: nothing is loaded from anywhere; charts are inline SVG.
    assert not re.search(r"""(?:src|href)\s*=\s*["'](?!data:|#)""", text), "external resource"
    assert "<script" not in text.replace("&lt;script", "")
    assert text.count("<svg") >= 8

    with Chromium(tmp_path) as browser:
        tab = browser.open(path.as_uri())
        shown = tab.text()
        shot = tab.screenshot(tmp_path / "report.png")
        assert tab.console_errors() == []
        assert tab.evaluate("document.querySelectorAll('section[data-panel] svg').length") >= 8
        assert tab.evaluate("document.images.length") == 0
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000

    totals = panel_data(snapshot, "totals")
    for heading in ("Crawl totals", "Rows by status", "Found via sitemaps or links", "Sitemaps and their quality",
                    "Hosts: errors and politeness", "Freshness", "Pages by changefreq", "Rows by when they are due"):
        assert heading in shown, heading
    assert f"{totals['rows']}\nrows" in shown and totals["rows"] == 55  # 4 sitemaps, 50 pages, the odd one
    for url in sm.values():
        assert url in shown
    assert "blacklisted: quality" in shown and "all 10 entries share one lastmod" in shown
    assert "URL limit: kept the first 20 entries" in shown
    assert "crawl delay 0.01s" in shown
    assert HOSTILE in shown  # the literal text, not markup
    sitemaps = panel_data(snapshot, "sitemaps")["sitemaps"]
    assert [s["url"] for s in sitemaps[:4]] == [sm["broken"], sm["fake"], sm["big"], sm["clean"]]


def test_report_html_command(store: Store, settings: Settings, tmp_path: Path) -> None:
    page = "http://cli.test/a.html"
    store.write(WEBPAGE_TABLE, [(rowkeys.row_key(page).encode(), encode(WebPage(page, in_sitemap=True)))])
    common = ["--hbase", settings.hbase, "--table-prefix", settings.table_prefix]
    path = tmp_path / "out.html"
    done = CliRunner().invoke(app, [*common, "report", "--html", str(path)])
    assert done.exit_code == 0, done.output
    assert done.stdout == "" and f"report: wrote {path}" in done.stderr
    assert "cli.test" in path.read_text(encoding="utf-8")
    both = CliRunner().invoke(app, [*common, "report", "--html", str(path), "--jsonl"])
    assert both.exit_code == 2 and "--html" in both.stderr
    nowhere = CliRunner().invoke(app, [*common, "report", "--html", str(tmp_path / "no" / "dir.html")])
    assert nowhere.exit_code == 2 and "cannot write" in nowhere.stderr
