"""`detect`: read each host's robots.txt, record its rules, inject its sitemaps.

For every origin in the table (or the ones asked for), robots.txt is fetched
politely and summarised on the `host` row (fetch time, outcome, crawl delay,
`Sitemap:` URLs, the capped text), so later jobs check allow/deny without
refetching. Its sitemaps are found by `web.discover.discover_sitemaps_async`
(the steps `sitemap tree` takes too) and become sitemap rows vouched for by
the robots.txt's host. The origins are checked at once on the HTTP client's
event loop, up to `max_connections` requests in flight, one at a time per
politeness key; this job's thread records each as it comes. The politeness
state of each key is read before its first request and written back with the
host row, also when stopped early. The rules in full: docs/commands.md
(detect), docs/sitemaps.md, docs/politeness.md.

Cost: a skip scan of `webpage`, one round trip per origin
(`storage.hosts`), one robots.txt request per origin (plus probes with
`probe_known_paths`), one put per origin and per new sitemap row.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import logging
import queue
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from urllib.parse import urlsplit

from sitemapcrawl.errors import InvalidUrlError, UsageError
from sitemapcrawl.model.cells import column_names, encode, equals_filter
from sitemapcrawl.model.newrows import new_page
from sitemapcrawl.model.webpage import HOST_TABLE, WEBPAGE_TABLE, HostRow, RobotsStatus, SitemapSource, WebPage
from sitemapcrawl.sitemaps.scope import format_vouchers, merge_vouchers, parse_vouchers, vouch_host
from sitemapcrawl.storage.dueindex import write_pages
from sitemapcrawl.storage.hosts import origin_key, origins_in_table, origins_of_host
from sitemapcrawl.storage.politeness import (
    KeyGate,
    QueueBy,
    Resolver,
    host_of_origin,
    load_states,
    queue_key,
    state_rows,
)
from sitemapcrawl.storage.store import Store
from sitemapcrawl.storage.tables import Unreadable, read_pages, scan_pages
from sitemapcrawl.storage.tables import hosts as host_rows
from sitemapcrawl.web import rowkeys, urls
from sitemapcrawl.web.http import AsyncHttpClient, PoliteHttpClient
from sitemapcrawl.web.robots_txt import HostReport, check_origin_async, robots_host_row
from sitemapcrawl.web.rules import UrlRules

log = logging.getLogger(__name__)


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
    unreadable: Unreadable = field(default_factory=Unreadable)
    """Stored rows (seeds, sitemaps, host rows) that did not decode: logged, taken as absent."""

    def summary(self) -> str:
        """One line for the end of the command."""
        return (
            f"hosts {self.hosts}, sitemaps found {self.sitemaps_found}, new {self.sitemaps_new}, "
            f"blacklisted {self.blacklisted}, disallowed {self.disallowed}, errors {self.errors}"
            + (f"; {self.unreadable.rows} unreadable rows skipped" if self.unreadable.rows else "")
        )


def _host_row(report: HostReport, now: datetime, retry_after: int) -> HostRow:
    """What detect writes: the robots.txt cells, the Sitemap: lines and the counters."""
    return dataclasses.replace(
        robots_host_row(report, now, retry_after),
        sitemaps=tuple(s.url for s in report.sitemaps),
        sitemaps_found=len(report.usable_sitemaps),
        sitemaps_new=report.new_sitemaps,
    )


def _seed_allowance(store: Store, origin: str, unreadable: Unreadable) -> tuple[int | None, int | None]:
    """The largest depth and radius among the origin's seed rows (one scan)."""
    depth = radius = None
    prefix = rowkeys.origin_row_prefix(origin + "/").encode("utf-8")
    seeds_only = equals_filter(WebPage, "seed", True)
    for _key, row in scan_pages(store, "detect", unreadable, ["seed", "depth", "radius"], prefix=prefix,
                                row_filter=seeds_only):
        if row.depth is not None:
            depth = row.depth if depth is None else max(depth, row.depth)
        if row.radius is not None:
            radius = row.radius if radius is None else max(radius, row.radius)
    return depth, radius


def _record(store: Store, report: HostReport, rules: UrlRules, now: datetime, unreadable: Unreadable) -> None:
    """Write the sitemap rows of one host, then its host row.

    A stored sitemap row that does not decode is counted in `unreadable` and
    taken as absent: it gets the cells of a new row, which repairs it.
    """
    settings = rules.settings
    depth, radius = _seed_allowance(store, report.origin, unreadable)
    keys = [rowkeys.row_key(s.url).encode("utf-8") for s in report.sitemaps]
    wanted = ["status", "is_sitemap", "sitemap_source", "cross_submitters", "vouched_by"]
    existing = read_pages(store, keys, wanted, "detect", unreadable)
    puts = []
    robots_url = report.origin + "/robots.txt"
    voucher = vouch_host(robots_url)
    for key, found in zip(keys, report.sitemaps, strict=True):
        old = existing.get(key)
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
        vouched = None
        if found.source is SitemapSource.ROBOTS and voucher is not None:
            # robots.txt vouches for the sitemaps it lists (probed ones keep the folder rule)
            known_vouchers = parse_vouchers(old.vouched_by or ()) if old is not None else {}
            vouched = format_vouchers(merge_vouchers(known_vouchers, {voucher: 0}))
        if old is None:
            report.new_sitemaps += 1
            row = new_page(
                found.url, now, settings.default_fetch_interval, score=settings.seed_score,
                depth=depth if depth is not None else settings.seed_depth,
                radius=radius if radius is not None else settings.seed_radius,
                also=WebPage(found.url, is_sitemap=True, sitemap_source=found.source, cross_submitters=submitters,
                             vouched_by=vouched),
            )
        else:
            row = WebPage(
                found.url,
                is_sitemap=True,
                sitemap_source=found.source if old.sitemap_source is None else None,
                cross_submitters=submitters,
                vouched_by=vouched,
            )
        puts.append((key, encode(row)))
    write_pages(store, puts, now=now)  # new sitemaps are due now: their due index entries too
    store.write(HOST_TABLE, [(origin_key(report.origin),
                              encode(_host_row(report, now, settings.robots_retry_interval)))])


class _Pace:
    """Politeness across jobs for detect: one turn per politeness key, after its stored delay."""

    def __init__(self, store: Store, rules: UrlRules, origins: list[str], unreadable: Unreadable) -> None:
        settings = rules.settings
        try:
            self.by = QueueBy(settings.queue_by)
        except ValueError:
            raise UsageError(f"queue_by {settings.queue_by!r}: choose host or ip") from None
        self.rules = rules
        resolve = Resolver()
        self.keys = {origin: queue_key(host_of_origin(origin) or origin, self.by, resolve) for origin in origins}
        self.delays: dict[str, float] = {key: settings.delay for key in self.keys.values()}
        stored = store.rows(HOST_TABLE, [origin_key(o) for o in origins],
                            columns=column_names(HostRow, ["crawl_delay"]))
        known = dict(host_rows(((key, cells) for key, cells in stored.items() if cells), "detect", unreadable,
                               ["crawl_delay"]))
        for origin in origins:
            host_row = known.get(origin_key(origin))
            delay = host_row.crawl_delay if host_row is not None else None
            if delay is not None and delay <= settings.max_crawl_delay:
                key = self.keys[origin]
                self.delays[key] = max(self.delays[key], delay)
        self.gate = KeyGate(load_states(store, set(self.keys.values()), self.by))

    async def check_all(self, origins: list[str], client: AsyncHttpClient, probe_known_paths: bool,
                        connections: int, found: Callable[[HostReport], None]) -> None:
        """Check every origin at once (on the client's loop), each in its key's turn, at most `connections`
        at a time; hand each report to `found` as it comes."""
        room = asyncio.Semaphore(max(1, connections))

        async def check(origin: str) -> None:
            key = self.keys[origin]
            async with self.gate.turn(key, self.delays[key]) as go:
                if not go:
                    return
                async with room:
                    try:
                        report = await check_origin_async(origin, client, self.rules, probe_known_paths)
                    except Exception as exc:  # a bug must not end detect: this origin fails, the rest go on
                        log.exception("detect: unexpected error on %s", origin)
                        report = HostReport(origin, RobotsStatus.ERROR, None,
                                            error=f"unexpected error: {type(exc).__name__}")
            found(report)

        await asyncio.gather(*(check(origin) for origin in origins))

    def state_rows(self, origin: str) -> list[tuple[bytes, dict[bytes, bytes]]]:
        """The put recording the politeness state of the origin's key."""
        key = self.keys[origin]
        return state_rows({key: self.gate.state(key)}, self.by)


def _port(origin: str) -> int | None:
    parts = urlsplit(origin)
    return parts.port or {"http": 80, "https": 443}.get(parts.scheme)


def _origins_from_hosts(store: Store, hosts: Iterable[str], rules: UrlRules) -> list[str]:
    """The origins `--host` values name: an origin as given; for a bare host name
    (no scheme), every origin of that host the table knows (with a port: that
    port only), or `http://HOST[:PORT]` when the table knows none."""
    origins: list[str] = []
    for host in hosts:
        bare = "://" not in host
        url = f"http://{host}/" if bare else host
        try:
            origin = urls.origin(url, rules.canonical)
        except InvalidUrlError as exc:
            raise UsageError(f"--host {host!r}: {exc}") from None
        known = origins_of_host(store, origin) if bare else []
        if bare and urlsplit(url).port is not None:
            known = [o for o in known if _port(o) == urlsplit(url).port]
        if bare and not known:
            log.info("detect: the table has no rows of %s; checking %s", host, origin)
        origins.extend(known or [origin])
    return list(dict.fromkeys(origins))


def detect(
    store: Store,
    client: PoliteHttpClient,
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
    TableMissingError) and a bad `hosts` entry (UsageError) raise. Stopped
    early (Ctrl-C, a store error), it starts no request, waits for those in
    flight (each ends by its deadline) and writes the politeness state of
    every key it asked.
    """
    store.require_tables(WEBPAGE_TABLE, HOST_TABLE)
    now = (now or datetime.now(UTC)).replace(microsecond=0)
    counts = DetectCounts()
    origins = (_origins_from_hosts(store, hosts, rules) if hosts
               else list(origins_in_table(store, unreadable=counts.unreadable)))
    if not origins:
        log.info("detect: %s", counts.summary())
        return counts
    pace = _Pace(store, rules, origins, counts.unreadable)
    reports: queue.SimpleQueue[HostReport] = queue.SimpleQueue()
    running = client.submit(pace.check_all(origins, client.aio, probe_known_paths, rules.settings.max_connections,
                                           reports.put))
    try:
        for report in _as_they_come(reports, running):
            _record(store, report, rules, now, counts.unreadable)
            store.write(HOST_TABLE, pace.state_rows(report.origin))
            counts.hosts += 1
            counts.robots[report.robots_status.value] += 1
            counts.sitemaps_found += len(report.usable_sitemaps)
            counts.sitemaps_new += report.new_sitemaps
            counts.blacklisted += sum(1 for s in report.sitemaps if s.blacklisted)
            counts.disallowed += sum(1 for s in report.sitemaps if s.disallowed)
            counts.errors += 1 if report.robots_status is RobotsStatus.ERROR else 0
            on_host(report)
    except BaseException:
        client.submit(_stop(pace.gate))
        _wait_for(running)
        store.write(HOST_TABLE, state_rows(pace.gate.taken(), pace.by))
        raise
    log.info("detect: %s", counts.summary())
    return counts


def _as_they_come(reports: queue.SimpleQueue[HostReport],
                  running: concurrent.futures.Future[None]) -> Iterator[HostReport]:
    """The reports in the order they come, until the checks are over (their error, if any, raised)."""
    while True:
        try:
            yield reports.get(timeout=0.2)
        except queue.Empty:
            if running.done():
                running.result()
                while not reports.empty():
                    yield reports.get_nowait()
                return


async def _stop(gate: KeyGate) -> None:
    gate.stop()


def _wait_for(running: concurrent.futures.Future[None]) -> None:
    """Wait for the checks under way to end (each by its deadline); a Ctrl-C does not cut the wait short."""
    while True:
        try:
            running.exception()
            return
        except KeyboardInterrupt:
            log.warning("detect: still waiting for the robots.txt requests in flight (each ends by its "
                        "deadline) to record them")
        except concurrent.futures.CancelledError:
            return
