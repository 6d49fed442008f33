"""`detect`: read each host's robots.txt, record its rules, inject its sitemaps.

For every origin in the table (or the ones asked for), robots.txt is fetched
politely (one request at a time per host, the configured delay, user agent,
timeout and size cap), parsed with protego, and summarised on the `host`
row: fetch time and outcome, crawl delay for our agent, the `Sitemap:` URLs
and the (capped) text, so later jobs check allow/deny without refetching.

Sitemaps listed there become sitemap rows (source `robots`), unless
blacklisted (an existing row records why) or disallowed by that robots.txt.
A sitemap on another host than the robots.txt that lists it is a
cross-submission: the listing robots.txt is recorded on the sitemap row, and
the sitemap may then list that host's URLs. With `probe_known_paths`, a host
whose robots.txt names no sitemap is probed at the well-known locations;
only bodies that really parse as sitemaps count.

robots.txt 4xx: allow all. 5xx or no answer: disallow all and retry after
`robots_retry_interval`. Hosts are checked in parallel (`threads`), each
host by one thread at a time.
"""

from __future__ import annotations

import dataclasses
import logging
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from sitemapcrawl import urls
from sitemapcrawl.errors import InvalidUrlError, SitemapError, UsageError
from sitemapcrawl.http import HttpClient
from sitemapcrawl.jobs.hosts import origin_key, origins_in_table
from sitemapcrawl.jobs.rules import UrlRules
from sitemapcrawl.robots import RobotsPolicy, status_for_http
from sitemapcrawl.sitemaps.discovery import WELL_KNOWN_SITEMAP_PATHS
from sitemapcrawl.sitemaps.document import parse_sitemap
from sitemapcrawl.sitemaps.limits import SitemapLimits
from sitemapcrawl.store import Store
from sitemapcrawl.webpage import (
    HOST_TABLE,
    WEBPAGE_TABLE,
    FetchStatus,
    HostRow,
    RobotsStatus,
    SitemapSource,
    WebPage,
    column_names,
    decode,
    encode,
    equals_filter,
)

log = logging.getLogger(__name__)


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


@dataclass
class DetectCounts:
    """Totals over all hosts, for the closing summary."""

    hosts: int = 0
    sitemaps_found: int = 0
    sitemaps_new: int = 0
    blacklisted: int = 0
    disallowed: int = 0
    errors: int = 0
    robots: Counter[str] = field(default_factory=Counter)

    def summary(self) -> str:
        """One line for the end of the command."""
        return (
            f"hosts {self.hosts}, sitemaps found {self.sitemaps_found}, new {self.sitemaps_new}, "
            f"blacklisted {self.blacklisted}, disallowed {self.disallowed}, errors {self.errors}"
        )


def _body_text(body: bytes) -> str:
    return body.decode("utf-8", errors="replace").lstrip("\ufeff")


def is_real_sitemap(body: bytes, url: str, limits: SitemapLimits) -> bool:
    """Does this body parse as a sitemap with at least one entry? (sniffed, not trusted)."""
    try:
        document = parse_sitemap(body, url, limits=limits)
        return next(iter(document), None) is not None
    except SitemapError:
        return False


def check_origin(origin: str, client: HttpClient, rules: UrlRules, probe_known_paths: bool) -> HostReport:
    """Fetch and interpret one origin's robots.txt (and probe if asked). No HBase."""
    settings = rules.settings
    robots_url = origin + "/robots.txt"
    response = client.get(robots_url, max_bytes=settings.max_robots_bytes)
    status = RobotsStatus.ERROR if response.error else status_for_http(response.status)
    text = _body_text(response.body) if status is RobotsStatus.OK else None
    policy = RobotsPolicy.from_text(status, text, settings.user_agent or "")
    report = HostReport(origin, status, response.status, error=response.error,
                        crawl_delay=policy.crawl_delay, robots_text=text,
                        robots_truncated=response.truncated and status is RobotsStatus.OK)
    if status is RobotsStatus.ERROR and report.error is None:
        report.error = f"HTTP {response.status}"

    listed: list[tuple[str, SitemapSource]] = []
    report.invalid_sitemap_lines = policy.malformed_sitemap_lines
    # Relative Sitemap lines resolve against where the text came from (after redirects).
    for raw in policy.sitemaps(response.url or robots_url):
        try:
            listed.append((urls.canonicalize(raw, rules.canonical), SitemapSource.ROBOTS))
        except InvalidUrlError:
            report.invalid_sitemap_lines += 1
    if not listed and probe_known_paths and status is not RobotsStatus.ERROR:
        limits = SitemapLimits.from_settings(settings)
        for path in WELL_KNOWN_SITEMAP_PATHS:
            candidate = f"{origin}/{path}"
            if not policy.allowed(candidate) or rules.blacklist.match(candidate):
                continue
            probe = client.get(candidate, max_bytes=settings.max_sitemap_bytes)
            if probe.status == 200 and not probe.error and is_real_sitemap(probe.body, probe.url, limits):
                listed.append((urls.canonicalize(candidate, rules.canonical), SitemapSource.PROBE))
    for url, source in listed:
        same_origin = urls.origin(url) == origin
        report.sitemaps.append(FoundSitemap(
            url,
            source,
            blacklisted=rules.blacklist.match(url),
            disallowed=same_origin and not policy.allowed(url),
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


def _host_row(report: HostReport, now: datetime, retry_after: int) -> HostRow:
    """What detect writes: the robots.txt cells, the Sitemap: lines and the counters."""
    return dataclasses.replace(
        robots_host_row(report, now, retry_after),
        sitemaps=tuple(s.url for s in report.sitemaps),
        sitemaps_found=len(report.usable_sitemaps),
        sitemaps_new=report.new_sitemaps,
    )


def _seed_allowance(store: Store, origin: str) -> tuple[int | None, int | None]:
    """The largest depth and radius among the origin's seed rows (one scan)."""
    depth = radius = None
    prefix = urls.origin_row_prefix(origin + "/").encode("utf-8")
    columns = column_names(WebPage, ["seed", "depth", "radius"])
    seeds_only = equals_filter(WebPage, "seed", True)
    for _key, cells in store.scan(WEBPAGE_TABLE, prefix=prefix, columns=columns, filter=seeds_only):
        row = decode(WebPage, origin, cells)
        if row.depth is not None:
            depth = row.depth if depth is None else max(depth, row.depth)
        if row.radius is not None:
            radius = row.radius if radius is None else max(radius, row.radius)
    return depth, radius


def _record(store: Store, report: HostReport, rules: UrlRules, now: datetime) -> None:
    """Write the sitemap rows of one host, then its host row."""
    settings = rules.settings
    depth, radius = _seed_allowance(store, report.origin)
    keys = [urls.row_key(s.url).encode("utf-8") for s in report.sitemaps]
    wanted = column_names(WebPage, ["status", "is_sitemap", "sitemap_source", "cross_submitters"])
    existing = store.rows(WEBPAGE_TABLE, keys, columns=wanted)
    puts = []
    robots_url = report.origin + "/robots.txt"
    for key, found in zip(keys, report.sitemaps, strict=True):
        cells = existing.get(key)
        old = decode(WebPage, found.url, cells) if cells else None
        if found.blacklisted is not None:
            if old is not None:
                puts.append((key, encode(WebPage(found.url, blacklisted=found.blacklisted))))
            continue
        if found.disallowed:
            continue
        submitters = None
        if found.cross_submitted:
            known = old.cross_submitters if old is not None and old.cross_submitters else ()
            submitters = tuple(sorted(set(known) | {robots_url}))
        if old is None:
            report.new_sitemaps += 1
            row = WebPage(
                found.url,
                status=FetchStatus.UNFETCHED,
                next_fetch=now,
                fetch_interval=settings.default_fetch_interval,
                is_sitemap=True,
                sitemap_source=found.source,
                score=settings.seed_score,
                depth=depth if depth is not None else settings.seed_depth,
                radius=radius if radius is not None else settings.seed_radius,
                cross_submitters=submitters,
            )
        else:
            row = WebPage(
                found.url,
                is_sitemap=True,
                sitemap_source=found.source if old.sitemap_source is None else None,
                cross_submitters=submitters,
            )
        puts.append((key, encode(row)))
    store.write(WEBPAGE_TABLE, puts)
    store.write(HOST_TABLE, [(origin_key(report.origin),
                              encode(_host_row(report, now, settings.robots_retry_interval)))])


def _origins_from_hosts(hosts: Iterable[str], rules: UrlRules) -> list[str]:
    origins = []
    for host in hosts:
        url = host if "://" in host else f"http://{host}/"
        try:
            origins.append(urls.origin(url, rules.canonical))
        except InvalidUrlError as exc:
            raise UsageError(f"--host {host!r}: {exc}") from None
    return origins


def detect(
    store: Store,
    client: HttpClient,
    rules: UrlRules,
    *,
    hosts: Iterable[str] = (),
    probe_known_paths: bool = False,
    on_host: Callable[[HostReport], None] = lambda report: None,
    now: datetime | None = None,
) -> DetectCounts:
    """Check robots.txt of each origin (all in the table, or `hosts`); return the totals.

    `on_host` hears of each host as it is recorded. Per-host failures are data
    on the host row; only the store's errors (StoreUnavailableError,
    TableMissingError) and a bad `hosts` entry (UsageError) raise.
    """
    store.require_tables(WEBPAGE_TABLE, HOST_TABLE)
    now = (now or datetime.now(UTC)).replace(microsecond=0)
    origins = _origins_from_hosts(hosts, rules) if hosts else list(origins_in_table(store))
    counts = DetectCounts()
    with ThreadPoolExecutor(max_workers=max(1, rules.settings.threads)) as pool:
        reports = pool.map(lambda o: check_origin(o, client, rules, probe_known_paths), origins)
        for report in reports:
            _record(store, report, rules, now)
            counts.hosts += 1
            counts.robots[report.robots_status.value] += 1
            counts.sitemaps_found += len(report.usable_sitemaps)
            counts.sitemaps_new += report.new_sitemaps
            counts.blacklisted += sum(1 for s in report.sitemaps if s.blacklisted)
            counts.disallowed += sum(1 for s in report.sitemaps if s.disallowed)
            counts.errors += 1 if report.robots_status is RobotsStatus.ERROR else 0
            on_host(report)
    log.info("detect: %s", counts.summary())
    return counts
