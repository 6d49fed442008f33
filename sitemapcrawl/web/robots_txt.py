"""One origin's robots.txt, checked and summarised: a part shared by detect and fetch.

detect checks every origin of the table this way; fetch checks an origin
whose stored robots.txt is stale before it fetches from it. Both write the
same host row cells (`robots_host_row`), so the two never disagree on what
a robots.txt outcome means. No HBase here: a client in, a report out.
Finding the sitemaps is `discover.discover_sitemaps`, the path `sitemap
tree` takes too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sitemapcrawl.model.webpage import HostRow, RobotsStatus, SitemapSource
from sitemapcrawl.web import urls
from sitemapcrawl.web.discover import SiteSitemaps, discover_sitemaps, discover_sitemaps_async
from sitemapcrawl.web.http import AsyncHttpClient, HttpClient
from sitemapcrawl.web.rules import UrlRules


@dataclass(frozen=True)
class FoundSitemap:
    """A sitemap URL found for a host, and what became of it."""

    url: str
    source: SitemapSource
    blacklisted: str | None = None
    disallowed: bool = False
    cross_submitted: bool = False


@dataclass
class HostReport:
    """What detect learned about one origin."""

    origin: str
    robots_status: RobotsStatus
    http_code: int | None
    error: str | None = None
    crawl_delay: float | None = None
    robots_text: str | None = None
    robots_truncated: bool = False
    sitemaps: list[FoundSitemap] = field(default_factory=list)
    invalid_sitemap_lines: int = 0
    new_sitemaps: int = 0

    @property
    def usable_sitemaps(self) -> list[FoundSitemap]:
        """Sitemaps that become (or stay) rows to fetch."""
        return [s for s in self.sitemaps if s.blacklisted is None and not s.disallowed]


def check_origin(origin: str, client: HttpClient, rules: UrlRules, probe_known_paths: bool) -> HostReport:
    """Fetch and interpret one origin's robots.txt (and probe if asked). No HBase.

    Discovery itself is `discover.discover_sitemaps`, which `sitemap tree` uses too.
    """
    site = discover_sitemaps(origin, client, rules.settings, canonical=rules.canonical,
                             blacklist=rules.blacklist, probe=probe_known_paths)
    return host_report(site, rules)


async def check_origin_async(origin: str, client: AsyncHttpClient, rules: UrlRules,
                             probe_known_paths: bool) -> HostReport:
    """`check_origin` on the event loop of an `AsyncHttpClient` (detect)."""
    site = await discover_sitemaps_async(origin, client, rules.settings, canonical=rules.canonical,
                                         blacklist=rules.blacklist, probe=probe_known_paths)
    return host_report(site, rules)


def host_report(site: SiteSitemaps, rules: UrlRules) -> HostReport:
    """What discovery found on one origin, judged by the crawl's rules (blacklist, robots.txt). No I/O."""
    origin = site.origin
    report = HostReport(origin, site.robots_status, site.http_code, error=site.error,
                        crawl_delay=site.policy.crawl_delay, robots_text=site.robots_text,
                        robots_truncated=site.robots_truncated,
                        invalid_sitemap_lines=site.invalid_sitemap_lines)
    for found in site.sitemaps:
        same_origin = urls.origin(found.url) == origin
        report.sitemaps.append(FoundSitemap(
            found.url,
            found.source,
            blacklisted=rules.blacklist.match(found.url),
            disallowed=same_origin and not site.policy.allowed(found.url),
            cross_submitted=not same_origin,
        ))
    return report


def robots_host_row(report: HostReport, now: datetime, retry_after: int) -> HostRow:
    """The robots.txt cells of a host row; fetch writes these when it refreshes robots.txt.

    A failing robots.txt is due again `retry_after` seconds from now; any
    other outcome is recorded as fresh now.
    """
    failing = report.robots_status is RobotsStatus.ERROR
    return HostRow(
        report.origin,
        robots_fetch_time=now,
        robots_status=report.robots_status,
        robots_http_code=report.http_code,
        robots_retry_at=now + timedelta(seconds=retry_after) if failing else now,
        robots_error=report.error or "",
        robots_text=report.robots_text or "",
        robots_truncated=report.robots_truncated,
        crawl_delay=report.crawl_delay,
    )
