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
`probe_known_paths`), one put per origin and per new sitemap row, and the
counting of the rows no batch has counted yet (`scoring.new_rows`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import logging
import queue
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from urllib.parse import urlsplit

from sitemapcrawl.clock import Clock, utc_now
from sitemapcrawl.config import Settings
from sitemapcrawl.errors import InvalidUrlError, UsageError
from sitemapcrawl.model.cells import column_names, encode, equals_filter
from sitemapcrawl.model.newrows import new_page
from sitemapcrawl.model.webpage import HOST_TABLE, WEBPAGE_TABLE, HostRow, RobotsStatus, SitemapSource, WebPage
from sitemapcrawl.scoring import new_rows
from sitemapcrawl.sitemaps.scope import format_vouchers, merge_vouchers, parse_vouchers, vouch_host
from sitemapcrawl.storage.dueindex import chunks, write_pages
from sitemapcrawl.storage.hosts import origin_key, origins_in_table, origins_of_host
from sitemapcrawl.storage.politeness import (
    KeyGate,
    KeyState,
    Resolver,
    host_of_origin,
    load_states,
    queue_key,
    state_rows,
)
from sitemapcrawl.storage.store import Store
from sitemapcrawl.storage.tables import Unreadable, decode_page, read_pages, scan_pages
from sitemapcrawl.storage.tables import hosts as host_rows
from sitemapcrawl.urlparts import port_of
from sitemapcrawl.web import rowkeys, urls
from sitemapcrawl.web.http import AsyncHttpClient, PoliteHttpClient
from sitemapcrawl.web.robots_txt import HostReport, check_origin_async, robots_host_row
from sitemapcrawl.web.rules import UrlRules

log = logging.getLogger(__name__)

#: Seed scans of a batch of hosts run this many at a time (each waits on its own round trip).
SIDE_BY_SIDE = 4
#: Origins listed (and their host rows and states read) before their checks start.
LIST_CHUNK = 100


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


def _record(store: Store, reports: list[HostReport], rules: UrlRules, now: datetime, unreadable: Unreadable,
            pace: _Pace, side: ThreadPoolExecutor) -> None:
    """Write the sitemap rows of some hosts, then their host rows and politeness states, in few round trips.

    The seed scans of the hosts run side by side (`side`); then one multi-get
    of their sitemaps' rows, one write of those rows, one of the host rows. A
    stored sitemap row that does not decode is counted in `unreadable` and
    taken as absent: it gets the cells of a new row, which repairs it.
    """
    settings = rules.settings
    scans = [(Unreadable(), report.origin) for report in reports]
    allowances = list(side.map(lambda scan: _seed_allowance(store, scan[1], scan[0]), scans))
    unreadable.rows += sum(counted.rows for counted, _ in scans)
    keys = list(dict.fromkeys(rowkeys.row_key(s.url).encode("utf-8") for r in reports for s in r.sitemaps))
    wanted = list(dict.fromkeys(["status", "is_sitemap", "sitemap_source", "cross_submitters", "vouched_by",
                                 *new_rows.FIELDS]))
    existing: dict[bytes, WebPage] = read_pages(store, keys, wanted, "detect", unreadable) if keys else {}
    before = dict(existing)
    puts = []
    for report, (depth, radius) in zip(reports, allowances, strict=True):
        puts.extend(_sitemap_puts(report, existing, depth, radius, settings, now))
    write_pages(store, puts, now=now)  # new sitemaps are due now: their due index entries too
    # In the row counts `serve` and the crawl's summary read: a sitemap no batch fetches is a row too.
    new_rows.count_written(store, [(key, before.get(key), decode_page(key, cells)) for key, cells in puts],
                           "detect", unreadable)
    hosts = [(origin_key(r.origin), encode(_host_row(r, now, settings.robots_retry_interval))) for r in reports]
    store.write(HOST_TABLE, hosts + [put for r in reports for put in pace.state_rows(r.origin)])


def _sitemap_puts(report: HostReport, existing: dict[bytes, WebPage], depth: int | None, radius: int | None,
                  settings: Settings, now: datetime) -> list[tuple[bytes, dict[bytes, bytes]]]:
    """The puts for one host's sitemaps; `existing` is updated with what they write (another host of the same
    batch may list the same sitemap)."""
    puts = []
    robots_url = report.origin + "/robots.txt"
    voucher = vouch_host(robots_url)
    for found in report.sitemaps:
        key = rowkeys.row_key(found.url).encode("utf-8")
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
            existing[key] = row
        else:
            row = WebPage(
                found.url,
                is_sitemap=True,
                sitemap_source=found.source if old.sitemap_source is None else None,
                cross_submitters=submitters,
                vouched_by=vouched,
            )
            existing[key] = dataclasses.replace(
                old, is_sitemap=True, sitemap_source=old.sitemap_source or found.source,
                cross_submitters=submitters or old.cross_submitters, vouched_by=vouched or old.vouched_by)
        puts.append((key, encode(row)))
    return puts


class _Pace:
    """Politeness across jobs for detect: one turn per politeness key, after its stored delay.

    `learn` reads what the table knows of some origins (their keys, Crawl-delays and stored states) on the
    job's thread; `check_all` checks them on the HTTP client's loop.
    """

    def __init__(self, rules: UrlRules) -> None:
        self.by = rules.settings.queue_by
        self.rules = rules
        self._resolve = Resolver()
        self.keys: dict[str, Hashable] = {}
        self.delays: dict[Hashable, float] = {}
        self.gate = KeyGate({})
        self._room: asyncio.Semaphore | None = None

    def learn(self, store: Store, origins: list[str], unreadable: Unreadable) -> dict[Hashable, KeyState]:
        """Key and delay of each origin (two multi-gets); returns the stored states of their keys."""
        settings = self.rules.settings
        for origin in origins:
            name = queue_key(host_of_origin(origin) or origin, self.by, self._resolve)
            self.keys[origin] = name
            self.delays.setdefault(name, settings.delay)
        stored = store.rows(HOST_TABLE, [origin_key(o) for o in origins],
                            columns=column_names(HostRow, ["crawl_delay"]))
        known = dict(host_rows(((key, cells) for key, cells in stored.items() if cells), "detect", unreadable,
                               ["crawl_delay"]))
        for origin in origins:
            host_row = known.get(origin_key(origin))
            delay = host_row.crawl_delay if host_row is not None else None
            if delay is not None and delay <= settings.max_crawl_delay:
                politeness_key = self.keys[origin]
                self.delays[politeness_key] = max(self.delays[politeness_key], delay)
        return load_states(store, {self.keys[o] for o in origins}, self.by)

    async def check_all(self, origins: list[str], states: dict[Hashable, KeyState], client: AsyncHttpClient,
                        probe_known_paths: bool, connections: int, found: Callable[[HostReport], None]) -> None:
        """Check these origins at once (on the client's loop), each in its key's turn, at most `connections`
        requests at a time over every call; hand each report to `found` as it comes."""
        self.gate.learn(states)
        if self._room is None:
            self._room = asyncio.Semaphore(max(1, connections))
        room = self._room

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
            known = [o for o in known if port_of(o) == urlsplit(url).port]
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
    clock: Clock = utc_now,
) -> DetectCounts:
    """Check robots.txt of each origin (all in the table, or `hosts`); return the totals.

    `on_host` hears of each host as it is recorded; `clock`, read once, stamps
    the host rows and new sitemap rows. Per-host failures are data
    on the host row; only the store's errors (StoreUnavailableError,
    TableMissingError) and a bad `hosts` entry (UsageError) raise. Stopped
    early (Ctrl-C, a store error), it starts no request, waits for those in
    flight (each ends by its deadline) and writes the politeness state of
    every key it asked.
    """
    store.require_tables(WEBPAGE_TABLE, HOST_TABLE)
    now = clock()
    counts = DetectCounts()
    origins: Iterable[str] = (_origins_from_hosts(store, hosts, rules) if hosts
                              else origins_in_table(store, unreadable=counts.unreadable))
    pace = _Pace(rules)
    reports: queue.SimpleQueue[HostReport] = queue.SimpleQueue()
    running: list[concurrent.futures.Future[None]] = []
    settings = rules.settings
    try:
        with ThreadPoolExecutor(max_workers=SIDE_BY_SIDE, thread_name_prefix="detect-seeds") as side:
            # The origins are listed a chunk at a time (a round trip each), and each chunk is checked while
            # the next is listed and what came back is recorded.
            for chunk in chunks(origins, LIST_CHUNK):
                states = pace.learn(store, chunk, counts.unreadable)
                running.append(client.submit(pace.check_all(chunk, states, client.aio, probe_known_paths,
                                                            settings.max_connections, reports.put)))
                for came in _as_they_come(reports, running, settings.hbase_batch_size, wait=False):
                    _note(store, came, rules, now, counts, pace, side, on_host)
            for came in _as_they_come(reports, running, settings.hbase_batch_size, wait=True):
                _note(store, came, rules, now, counts, pace, side, on_host)
    except BaseException:
        for future in running:
            client.submit(_stop(pace.gate))
            _wait_for(future)
        store.write(HOST_TABLE, state_rows(pace.gate.taken(), pace.by))
        raise
    log.info("detect: %s", counts.summary())
    return counts


def _note(store: Store, came: list[HostReport], rules: UrlRules, now: datetime, counts: DetectCounts, pace: _Pace,
          side: ThreadPoolExecutor, on_host: Callable[[HostReport], None]) -> None:
    """Record reports that came, count them, tell `on_host` of each."""
    _record(store, came, rules, now, counts.unreadable, pace, side)
    for report in came:
        counts.hosts += 1
        counts.robots[report.robots_status.value] += 1
        counts.sitemaps_found += len(report.usable_sitemaps)
        counts.sitemaps_new += report.new_sitemaps
        counts.blacklisted += sum(1 for s in report.sitemaps if s.blacklisted)
        counts.disallowed += sum(1 for s in report.sitemaps if s.disallowed)
        counts.errors += 1 if report.robots_status is RobotsStatus.ERROR else 0
        on_host(report)


def _as_they_come(reports: queue.SimpleQueue[HostReport], running: list[concurrent.futures.Future[None]],
                  most: int, wait: bool) -> Iterator[list[HostReport]]:
    """The reports in the order they come, in lists of those that came meanwhile (at most `most` a list):
    with `wait`, until every check is over (their error, if any, raised); else only those here now."""
    while True:
        try:
            came = [reports.get(timeout=0.2) if wait else reports.get_nowait()]
        except queue.Empty:
            if not wait:
                return
            if all(future.done() for future in running):
                for future in running:
                    future.result()
                if reports.empty():
                    return
            continue
        while len(came) < most and not reports.empty():
            came.append(reports.get_nowait())
        yield came


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
