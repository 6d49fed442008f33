"""A loopback web with four sitemaps of plainly different quality, and a crawl of it.

On 127.0.0.2: `clean.xml` (ten real pages, varied recent lastmods),
`broken.xml` (ten URLs that answer 404), `fake.xml` (ten real pages, every
lastmod the same day a month ahead) and `big.xml` (thirty real pages, over
the URL limit of twenty that `quality_settings` sets); robots.txt asks for a
crawl delay of 0.01 s. Every entry has
priority 0.8, so only quality can tell the sitemaps' pages apart. Shared by
the quality, report and serve integration tests.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

from sitemapcrawl.config import Settings
from sitemapcrawl.jobs.crawl import CrawlOptions, CrawlResult, crawl
from sitemapcrawl.modes import CrawlMode
from sitemapcrawl.storage.store import Store
from sitemapcrawl.testweb import Entry, PageRange, Robots, RobotsGroup, Site, Sitemap, TestWebServer, Web
from sitemapcrawl.web.http import PoliteHttpClient
from sitemapcrawl.web.rules import UrlRules

HOST = "127.0.0.2"
NAMES = ("clean", "broken", "fake", "big")
URL_LIMIT = 20
AGENT = "sitemapcrawl-test/1.0"


def _day(days_ago: int) -> str:
    return (datetime.now(UTC) - timedelta(days=days_ago)).strftime("%Y-%m-%d")


def quality_web() -> Web:
    """The description (dates relative to today, so freshness holds whenever it runs)."""
    clean = tuple(Entry(f"/a/{i}.html", lastmod=_day(3 + 2 * i), priority="0.8") for i in range(10))
    broken = tuple(Entry(f"/missing/{i}.html", lastmod=_day(3 + i), priority="0.8") for i in range(10))
    fake = tuple(Entry(f"/b/{i}.html", lastmod=_day(-30), priority="0.8") for i in range(10))
    big = tuple(Entry(f"/c/{i}.html", lastmod=_day(2 + i), priority="0.8") for i in range(30))
    return Web((Site(
        HOST, name="quality", robots=Robots(groups=(RobotsGroup(("*",), crawl_delay=0.01),)),
        ranges=(PageRange("/a/", 10, links=False), PageRange("/b/", 10, links=False),
                PageRange("/c/", 30, links=False)),
        sitemaps=(Sitemap("/clean.xml", entries=clean), Sitemap("/broken.xml", entries=broken),
                  Sitemap("/fake.xml", entries=fake), Sitemap("/big.xml", entries=big)),
    ),), name="quality")


def quality_settings(settings: Settings, **changes: object) -> Settings:
    """Fast, polite-enough settings for the loopback crawl, with the small URL limit."""
    return dataclasses.replace(settings, user_agent=AGENT, delay=0.0, max_connections=4,  # type: ignore[arg-type]
                               max_sitemap_urls=URL_LIMIT, **changes)


def sitemap_urls(server: TestWebServer) -> dict[str, str]:
    """Name -> URL of the four sitemaps."""
    return {name: server.url(HOST, f"/{name}.xml") for name in NAMES}


def crawl_quality_web(store: Store, settings: Settings, server: TestWebServer, rounds: int = 2) -> CrawlResult:
    """Inject the four sitemaps and crawl them, sitemap-only: round 1 the sitemaps, round 2 their pages."""
    client = PoliteHttpClient.from_settings(settings)
    seeds = [f"{url}\tsitemap=true\n" for url in sitemap_urls(server).values()]
    try:
        return crawl(store, client, UrlRules.from_settings(settings), seeds,
                     CrawlOptions(mode=CrawlMode.SITEMAP_ONLY, rounds=rounds))
    finally:
        client.close()
