"""Two crawls of `changing_web`: version 1, then version 2 after its sitemaps changed.

Shared by the change-tracking, export and audit integration tests. Between
the crawls the sitemap rows are made due (as if their fetch interval had
passed), so the second crawl re-reads them.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

from sitemapcrawl.config import Settings
from sitemapcrawl.jobs.crawl import CrawlOptions, CrawlResult, crawl
from sitemapcrawl.model.cells import column_names, decode, encode, equals_filter
from sitemapcrawl.model.changes import Hints
from sitemapcrawl.model.codec import format_time
from sitemapcrawl.model.webpage import WEBPAGE_TABLE, WebPage
from sitemapcrawl.modes import CrawlMode
from sitemapcrawl.sitemaps.normalize import parse_lastmod, parse_priority
from sitemapcrawl.storage import dueindex
from sitemapcrawl.storage.store import Store
from sitemapcrawl.testweb import SitemapChange, TestWebServer
from sitemapcrawl.web import rowkeys
from sitemapcrawl.web.http import PoliteHttpClient
from sitemapcrawl.web.rules import UrlRules

HOST = "127.0.0.2"
AGENT = "sitemapcrawl-test/1.0"


def crawl_settings(settings: Settings, **changes: object) -> Settings:
    """Fast settings for loopback crawls."""
    return dataclasses.replace(settings, user_agent=AGENT, delay=0.0, max_connections=4, **changes)  # type: ignore[arg-type]


def run_crawl(store: Store, settings: Settings, server: TestWebServer, rounds: int = 5,
              mode: CrawlMode = CrawlMode.MIXED, top_n: int | None = None) -> CrawlResult:
    """A crawl from the site's home page."""
    client = PoliteHttpClient.from_settings(settings)
    try:
        return crawl(store, client, UrlRules.from_settings(settings), [server.base_url(HOST) + "\n"],
                     CrawlOptions(mode=mode, rounds=rounds, top_n=top_n))
    finally:
        client.close()


def make_due(store: Store, sitemaps_only: bool) -> int:
    """Move the next fetch time of sitemap rows (or of every scheduled row) into the past."""
    past = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=1)
    row_filter = equals_filter(WebPage, "is_sitemap", True) if sitemaps_only else None
    puts = []
    for key, cells in store.scan(WEBPAGE_TABLE, columns=column_names(WebPage, ["next_fetch", "is_sitemap"]),
                                 filter=row_filter):
        row = decode(WebPage, rowkeys.url_from_row_key(key.decode()), cells)
        if row.next_fetch is not None:
            puts.append((key, encode(WebPage(row.url, next_fetch=past))))
    return dueindex.write_pages(store, puts).rows


def normalized(change: SitemapChange) -> tuple[str, str, str, str | None, str | None]:
    """A truth change as the crawler records it: (sitemap, url, change, old, new), hints normalised."""
    def value(text: str) -> str | None:
        if not text:
            return None
        if change.kind == "lastmod":
            moment = parse_lastmod(text)
            return format_time(moment) if moment else None
        if change.kind == "priority":
            number = parse_priority(text)
            return Hints(priority=f"{number:g}").priority if number is not None else None
        return text

    return change.sitemap, change.url, change.kind, value(change.old), value(change.new)
