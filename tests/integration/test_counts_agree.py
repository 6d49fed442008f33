"""The crawl's summary and `serve` (the row counts in the `host` table) and `report` (a scan) agree."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

from sitemapcrawl.config import Settings
from sitemapcrawl.jobs.crawl import CrawlOptions, crawl
from sitemapcrawl.jobs.inject import inject
from sitemapcrawl.model.cells import column_names
from sitemapcrawl.model.webpage import WEBPAGE_TABLE, FetchStatus, WebPage
from sitemapcrawl.modes import CrawlMode
from sitemapcrawl.report.panels import take_counted_snapshot
from sitemapcrawl.report.text import Report, build_report
from sitemapcrawl.storage.store import Store
from sitemapcrawl.storage.tables import Unreadable, scan_pages
from sitemapcrawl.testweb import TestWebServer, demo_web
from sitemapcrawl.web.http import PoliteHttpClient
from sitemapcrawl.web.rules import UrlRules

WEB = demo_web()  # served by the shared `web` fixture
NOW = datetime(2026, 12, 5, tzinfo=UTC)


def shown(report: Report) -> dict[str, object]:
    """What the crawl's summary, `serve` and `report` show of a table: the first lines, the totals, each
    host's counts and each sitemap's summary."""
    hosts = {host: dataclasses.replace(summary, robots=[]) for host, summary in report.hosts.items()}
    return {"lines": list(report.lines())[:3], "totals": report.totals, "hosts": hosts,
            "sitemaps": sorted(report.sitemaps, key=lambda sitemap: sitemap.url)}


def assert_counts_agree(store: Store) -> dict[str, object]:
    """The counted snapshot (`serve`, the crawl's summary) shows what a scan (`report`) shows; that."""
    scanned = shown(build_report(store))
    assert shown(take_counted_snapshot(store, NOW).report) == scanned
    return scanned


def crawl_demo(store: Store, settings: Settings, seeds: list[str], **options: object) -> None:
    settings = dataclasses.replace(settings, user_agent="sitemapcrawl-test/1.0", delay=0.0, max_connections=4)
    client = PoliteHttpClient.from_settings(settings)
    try:
        crawl(store, client, UrlRules.from_settings(settings), [seed + "\n" for seed in seeds],
              CrawlOptions(mode=CrawlMode.SITEMAP_ONLY, probe_known_paths=True, **options))  # type: ignore[arg-type]
    finally:
        client.close()


def unfetched(store: Store) -> list[WebPage]:
    fields = ["status", "seed", "is_sitemap"]
    return [row for _key, row in scan_pages(store, "test", Unreadable(), fields)
            if row.status is FetchStatus.UNFETCHED]


def test_the_summary_counts_the_rows_report_counts_during_and_after_a_sitemap_only_crawl(
        store: Store, settings: Settings, web: TestWebServer) -> None:
    """As the demo's crawl: a seed whose home page sitemap-only never fetches, sitemaps detect found that
    no round fetched yet (one URL a round), then the whole crawl, then the same seeds injected again."""
    seeds = list(web.truth.seeds())
    crawl_demo(store, settings, seeds, rounds=1, top_n=1)
    waiting = unfetched(store)
    assert any(row.seed for row in waiting) and any(row.is_sitemap for row in waiting)
    assert_counts_agree(store)

    crawl_demo(store, settings, [], rounds=5)
    done = assert_counts_agree(store)
    assert [row.url for row in unfetched(store)] == [web.url("127.0.0.3", "/")]  # never fetched: sitemap-only

    inject(store, [seed + "\n" for seed in seeds], UrlRules.from_settings(settings), clock=lambda: NOW)
    assert assert_counts_agree(store) == done


def test_a_rerun_of_a_stopped_inject_counts_its_rows_once(store: Store, settings: Settings,
                                                           web: TestWebServer) -> None:
    """Stopped after the count cells, before the rows' `m:hc` (taken off here): the rerun finds its run
    again and writes the same cells, adding nothing."""
    rules = UrlRules.from_settings(settings)
    lines = [seed + "\n" for seed in web.truth.seeds()]
    inject(store, lines, rules, clock=lambda: NOW)
    counted = assert_counts_agree(store)
    store.delete_many(WEBPAGE_TABLE, [(key, column_names(WebPage, ["counted"])) for key, _cells in
                                      store.scan(WEBPAGE_TABLE)])
    inject(store, lines, rules, clock=lambda: NOW.replace(hour=1))
    assert assert_counts_agree(store) == counted
