"""Helpers shared by the split and worker tests (test_workers, the cluster test): one batch, the table."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

from sitemapcrawl.config import Settings
from sitemapcrawl.jobs.detect import detect
from sitemapcrawl.jobs.fetch import FetchOptions, fetch
from sitemapcrawl.jobs.generate import CrawlMode, GenerateOptions, generate
from sitemapcrawl.jobs.inject import inject
from sitemapcrawl.jobs.parse import parse_batch
from sitemapcrawl.model.cells import decode
from sitemapcrawl.model.webpage import WEBPAGE_TABLE, WebPage
from sitemapcrawl.storage.store import Store
from sitemapcrawl.testweb import TestWebServer
from sitemapcrawl.web import rowkeys
from sitemapcrawl.web.http import PoliteHttpClient
from sitemapcrawl.web.rules import UrlRules

AGENT = "sitemapcrawl-test/1.0"
START = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)
FIELDS = ("status", "http_code", "depth", "radius", "in_sitemap", "is_sitemap", "sitemap_source", "score",
          "priority", "changefreq", "sitemaps_listing", "link_inlinks", "fetch_interval")


def split_settings(settings: Settings) -> Settings:
    return dataclasses.replace(settings, user_agent=AGENT, delay=0.0, max_connections=4, hbase_batch_size=5,
                               lease_seconds=3.0)


def table(store: Store) -> dict[str, tuple[object, ...]]:
    """URL -> the fields a round decides (no times, no batch ids), and which marks are set."""
    rows = {}
    for key, cells in store.scan(WEBPAGE_TABLE):
        url = rowkeys.url_from_row_key(key.decode())
        row = decode(WebPage, url, cells)
        rows[url] = (*(getattr(row, name) for name in FIELDS), row.parse_mark is not None,
                     row.update_mark is not None, len(row.inlinks or {}), row.next_fetch is not None)
    return rows


def prepare_batch(store: Store, settings: Settings, web: TestWebServer, parsed: bool = True) -> str:
    """One fetched (and parsed) batch: round one of `run_rounds` without its updatedb (and parse)."""
    rules = UrlRules.from_settings(settings)
    client = PoliteHttpClient.from_settings(settings)
    try:
        inject(store, [f"{u}\n" for u in web.base_urls()], rules, clock=lambda: START)
        detect(store, client, rules, clock=lambda: START)
        generate(store, rules, GenerateOptions(batch_id="b0", mode=CrawlMode.MIXED), clock=lambda: START)
        fetch(store, client, rules, FetchOptions.from_settings(settings, "b0"), clock=lambda: START)
        if parsed:
            parse_batch(store, rules, "b0", mode=CrawlMode.MIXED, clock=lambda: START)
    finally:
        client.close()
    return "b0"
