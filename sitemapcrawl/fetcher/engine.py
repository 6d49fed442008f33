"""The fetch engine: every ready host asked at once from one event loop, within a connection cap.

`Engine.run` runs on the HTTP client's loop (`web.http.PoliteHttpClient.submit`).
It starts a request for every ready queue (`fetcher.queues`) admitted by its
pacing (a paced key needs its reservation in HBase: `fetcher.pacing`) and
within `max_connections` in flight, so what is in flight follows the ready
hosts, not a thread count. It holds back while the writer is behind
(`fetcher.write`) and never waits for HBase itself. A host's last request
asks the server to close its connection, and hosts are begun only while the
open-file limit has room (`host_budget`): thousands of hosts need no setting.

`request` is the one place a page request is made: robots.txt first (fetched
as its queue's first request when the table has no fresh copy, read by the
code `detect` runs), the conditional GET, the body caps, redirects followed
within the host's queue. An unexpected error in one item is that item's
recorded failure, never the run's. `stop` (thread-safe) lets no request
start; those in flight get `grace` seconds, then are abandoned.

Cost: O(1) bookkeeping per request besides the request itself; memory of
the bodies in flight, each capped.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import time
from collections import Counter, deque
from collections.abc import Callable, Hashable
from datetime import datetime, timedelta

from sitemapcrawl.clock import Clock
from sitemapcrawl.errors import InvalidUrlError
from sitemapcrawl.fetcher.model import FetchCounts, FetchItem, FetchOptions, RobotsItem, RobotsRule
from sitemapcrawl.fetcher.outcomes import outcome_row, retry_or_gone, with_fields
from sitemapcrawl.fetcher.pacing import Pacing, StateWrite
from sitemapcrawl.fetcher.queues import FetchQueues, Lease
from sitemapcrawl.fetcher.write import Outbox, Outcome
from sitemapcrawl.model.linkvalues import Inlink, InlinkKind, format_inlink
from sitemapcrawl.model.newrows import new_page
from sitemapcrawl.model.webpage import FetchStatus, RobotsStatus, SitemapSource, WebPage
from sitemapcrawl.web import rowkeys, urls
from sitemapcrawl.web.discover import read_robots, robots_url
from sitemapcrawl.web.http import AsyncHttpClient, HttpResponse, conditional_headers
from sitemapcrawl.web.robots import RobotsPolicy
from sitemapcrawl.web.robots_txt import host_report, robots_host_row
from sitemapcrawl.web.rules import UrlRules
from sitemapcrawl.web.warc import Unrecorded

log = logging.getLogger(__name__)

#: Seconds between two hand-overs of dirty politeness states to the writer (when none is urgent).
STATE_PERIOD = 0.2
#: Open files kept for what is not a host's connection (HBase, WARC, logs, the interpreter).
_RESERVED_FILES = 256


def host_budget(slots_per_host: int) -> int:
    """How many hosts may be under way at once: the open-file limit (raised to its hard limit first) over
    the connections each may hold."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and (hard == resource.RLIM_INFINITY or soft < hard):
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass
    if soft == resource.RLIM_INFINITY:
        return 1_000_000
    return max(16, (int(soft) - _RESERVED_FILES) // max(1, slots_per_host))


class Engine:
    """One fetch run's requests (see the module docstring)."""

    def __init__(self, client: AsyncHttpClient, rules: UrlRules, options: FetchOptions,
                 queues: FetchQueues[FetchItem | RobotsItem], pacing: Pacing, outbox: Outbox,
                 writer_ready: Callable[[], bool], counts: FetchCounts, seen: set[str],
                 clock: Clock, connections: int, hosts_at_once: int) -> None:
        self.client = client
        self.rules = rules
        self.settings = rules.settings
        self.options = options
        self.queues = queues
        self.pacing = pacing
        self.outbox = outbox
        self.writer_ready = writer_ready
        self.counts = counts
        self.seen = seen
        self.clock = clock
        self.connections = max(1, connections)
        self.hosts_at_once = max(1, hosts_at_once)
        self.user_agent = rules.settings.user_agent or ""
        self.longest_robots = (self.settings.max_redirects + 1) * (self.settings.http_deadline + self.settings.delay)
        """The longest a robots.txt request may take: each redirect hop has its own deadline and delay."""
        self.robots: dict[str, RobotsRule] = {}
        self.robots_pending: set[str] = set()
        self.abandoned = 0
        """Requests still in flight when the grace after a stop ran out (their rows stay as they were)."""
        self._tasks: set[asyncio.Task[None]] = set()
        self._active: set[Hashable] = set()
        """Keys begun and not yet idle (each may hold a kept-alive connection)."""
        self._waiting_hosts: deque[Hashable] = deque()
        """Keys parked because `hosts_at_once` were under way."""
        self._stopping = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None

    @property
    def active_hosts(self) -> int:
        """Hosts under way now (safe to read from any thread)."""
        return len(self._active)

    # ------------------------------------------------------------ set-up --

    def expect_robots(self, origins: list[str]) -> None:
        """These origins' robots.txt items are queued: their URLs wait for them."""
        self.robots_pending.update(origins)

    def adopt(self, origin: str, queue: Hashable, rule: RobotsRule) -> None:
        """Start using a robots.txt rule; a Crawl-delay within the cap slows the queue."""
        self.robots[origin] = rule
        self.robots_pending.discard(origin)
        delay = rule.crawl_delay
        if delay is not None and delay <= self.settings.max_crawl_delay:
            self.pacing.raise_delay(queue, delay)

    # ---------------------------------------------------- from other threads --

    def stop(self) -> None:
        """Start no request from now on (thread-safe); those in flight end or are abandoned by `run`."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._stop)

    def confirmed(self, written: list[StateWrite]) -> None:
        """The writer wrote these states (thread-safe): their reservations hold."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._confirm, written)

    def _stop(self) -> None:
        self._stopping = True
        self.queues.close()
        self.pacing.stop()
        self._poke()

    def _confirm(self, written: list[StateWrite]) -> None:
        for key in self.pacing.confirm(written):
            self.queues.unpark(key)
        self._poke()

    def _poke(self) -> None:
        if self._wake is not None:
            self._wake.set()

    # --------------------------------------------------------------- loop --

    async def run(self, grace: float) -> None:
        """Fetch until the queues are finished, or until stopped (then wait `grace` s for those in flight)."""
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        ticker = self._loop.call_later(STATE_PERIOD, self._tick)
        try:
            while not self._stopping and not (self.queues.finished and not self._tasks):
                self._start_ready()
                if self.pacing.asking:
                    self.outbox.add_states(self.pacing.take_dirty(), urgent=True)
                await self._sleep()
            await self._wind_down(grace)
        finally:
            ticker.cancel()
            self.outbox.add_states(self.pacing.take_dirty(), urgent=True)

    def _tick(self) -> None:
        assert self._loop is not None
        self.outbox.add_states(self.pacing.take_dirty(), urgent=self.pacing.asking)
        self._poke()  # also what lets a held-back engine look again
        if not self._stopping:
            self._loop.call_later(STATE_PERIOD, self._tick)

    def _start_ready(self) -> None:
        assert self._loop is not None
        while len(self._tasks) < self.connections and not self.outbox.full and self.writer_ready():
            lease = self.queues.take(self._admit)
            if lease is None:
                return
            task = self._loop.create_task(self._handle(lease))
            self._tasks.add(task)
            task.add_done_callback(self._ended)

    def _admit(self, key: Hashable) -> bool:
        if key not in self._active:
            if len(self._active) >= self.hosts_at_once:
                self._waiting_hosts.append(key)
                return False
            if not self.pacing.admit(key):
                return False
            self._active.add(key)
            return True
        return self.pacing.admit(key)

    def _ended(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self._poke()

    async def _sleep(self) -> None:
        """Until a queue's slot frees, a request ends, a reservation is confirmed, a stop, or the next tick.

        At the connection cap, or held back by the writer, only a request's end or a tick can change
        anything: no timer then (the next slot's time may have passed, and would wake the loop at once).
        """
        assert self._loop is not None and self._wake is not None
        self._wake.clear()
        blocked = len(self._tasks) >= self.connections or self.outbox.full or not self.writer_ready()
        at = None if blocked else self.queues.next_ready()
        timer = self._loop.call_at(at, self._wake.set) if at is not None else None
        await self._wake.wait()
        if timer is not None:
            timer.cancel()

    async def _wind_down(self, grace: float) -> None:
        """After a stop: those in flight get `grace` seconds, then are cancelled and counted as abandoned."""
        if not self._tasks:
            return
        _, late = await asyncio.wait(set(self._tasks), timeout=grace)
        if late:
            self.abandoned = len(late)
            for task in late:
                task.cancel()
            await asyncio.wait(late)

    # ------------------------------------------------------------- items --

    def _release(self, lease: Lease[FetchItem | RobotsItem], ended: float | None = None, pause: float = 0.0,
                 hold: float = 0.0) -> None:
        """Give the lease's slot back; a key left with nothing to do releases its reservation and its place."""
        self.queues.release(lease, ended=ended, pause=pause)
        if hold > 0:
            self.queues.hold(lease.key, time.monotonic() + hold)
        if not self.queues.waiting(lease.key):
            self.pacing.idle(lease.key)
            if lease.key in self._active:
                self._active.discard(lease.key)
                if self._waiting_hosts:
                    self.queues.unpark(self._waiting_hosts.popleft())

    async def _handle(self, lease: Lease[FetchItem | RobotsItem]) -> None:
        released = False

        def release(ended: float | None = None, pause: float = 0.0, hold: float = 0.0) -> None:
            nonlocal released
            if not released:
                released = True
                self._release(lease, ended, pause, hold)

        item = lease.item
        try:
            if isinstance(item, RobotsItem):
                await self.fetch_robots(lease, item, release)
            else:
                await self.fetch_page(lease, item, release)
        except Exception as exc:  # a bug must not end the run: this item fails, the rest go on
            log.exception("fetch: unexpected error on %s", item)
            release()
            if isinstance(item, RobotsItem):
                retry_at = self.clock() + timedelta(seconds=self.settings.robots_retry_interval)
                policy = RobotsPolicy.from_text(RobotsStatus.ERROR, None, self.user_agent)
                self.adopt(item.origin, lease.key, RobotsRule(policy, retry_at=retry_at,
                                                              error="robots.txt could not be read"))
            else:
                failed = retry_or_gone(item, self.settings, f"unexpected error: {type(exc).__name__}")
                self.record(item, WebPage(item.url, fetch_time=self.clock(), **failed))  # type: ignore[arg-type]
        finally:
            release()

    async def fetch_robots(self, lease: Lease[FetchItem | RobotsItem], item: RobotsItem,
                           release: Callable[..., None]) -> None:
        """Fetch an origin's robots.txt (the first request of its queue) and start using it."""
        if not self.pacing.begin(lease.key, self.longest_robots):
            return  # the run is stopping: no new request
        try:
            response = await self.client.get(robots_url(item.origin), max_bytes=self.settings.max_robots_bytes)
        except asyncio.CancelledError:
            release()  # abandoned: the pacing keeps it in flight, ending at its latest
            raise
        pause = self.pacing.answered(lease.key, response.status, None)
        ended = time.monotonic()
        now = self.clock()
        site = read_robots(item.origin, response, self.settings, self.rules.canonical)
        report = host_report(site, self.rules)
        policy = RobotsPolicy.from_text(report.robots_status, report.robots_text, self.user_agent)
        host_row = robots_host_row(report, now, self.settings.robots_retry_interval)
        failing = report.robots_status is RobotsStatus.ERROR
        rule = RobotsRule(policy, crawl_delay=report.crawl_delay,
                          retry_at=host_row.robots_retry_at if failing else None,
                          error=f"robots.txt failing: {report.error}" if failing else None)
        self.adopt(item.origin, lease.key, rule)  # before the slot is given back: its Crawl-delay counts
        release(ended=ended, hold=pause)
        self.outbox.add_host_row(host_row)
        self.counts.robots_fetched += 1
        self.counts.requests += 1

    async def fetch_page(self, lease: Lease[FetchItem | RobotsItem], item: FetchItem,
                         release: Callable[..., None]) -> None:
        """Check a URL against robots.txt and the crawl delay cap, fetch it, record the facts."""
        key = lease.key
        rule = self.robots.get(item.origin)
        if rule is None:
            # robots.txt of this origin is not known yet (a redirect hop, or
            # fetched right now by another slot): first robots.txt, then this.
            needs_robots = item.origin not in self.robots_pending
            self.queues.add(key, item, front=True)
            if needs_robots:
                self.robots_pending.add(item.origin)
                self.queues.add(key, RobotsItem(item.origin), front=True)
            release(pause=0.0 if needs_robots else 0.05)
            return
        now = self.clock()
        if rule.error is not None:
            release()
            self.record(item, WebPage(item.url, status=FetchStatus.DEFERRED, error=rule.error, fetch_time=now,
                                      retry_at=rule.retry_at, blocked_by=""))
            return
        if not rule.policy.allowed(item.url):
            release()
            self.record(item, WebPage(item.url, status=FetchStatus.BLOCKED_ROBOTS, fetch_time=now,
                                      error="disallowed by robots.txt"))
            return
        if rule.crawl_delay is not None and rule.crawl_delay > self.settings.max_crawl_delay:
            release()
            self.defer_origin(key, item, rule.crawl_delay, now)
            return
        if not self.pacing.begin(key, self.settings.http_deadline):
            return  # the run is stopping: no new request, the row stays as it was
        try:
            response = await self.request(item, last=not self.queues.has_waiting(key))
        except asyncio.CancelledError:
            release()  # abandoned: the pacing keeps it in flight, ending at its latest
            raise
        pause = self.pacing.answered(key, response.status, response.headers.get("retry-after"))
        release(ended=time.monotonic(), hold=pause)
        now = self.clock()
        row = outcome_row(item, response, now, self.settings, self.options.store_content, self.rules.canonical)
        self.counts.requests += 1
        self.counts.bytes += len(response.body)
        if row.status is FetchStatus.REDIRECT and row.redirect_to:
            row = self.redirect(key, item, row, now)
        self.record(item, row, response.unrecorded)

    async def request(self, item: FetchItem, last: bool = False) -> HttpResponse:
        """The one place a page request is made: its size cap and conditional headers; `last`: the host's
        last request of this run, so its connection is not kept."""
        max_bytes = self.settings.max_sitemap_bytes if item.is_sitemap else self.settings.max_content_bytes
        headers = conditional_headers(item.etag, item.last_modified) if item.conditional else {}
        if last:
            headers["Connection"] = "close"
        # Its WARC record is written with its outcome (`fetcher.write`), not here: never one without the other.
        return await self.client.fetch_one(item.url, headers=headers, max_bytes=max_bytes, refers=item.earlier)

    def defer_origin(self, queue: Hashable, item: FetchItem, delay: float, now: datetime) -> None:
        """Crawl-delay over the cap: this URL and the origin's waiting ones are deferred."""
        error = f"robots.txt Crawl-delay {delay:g} s is over the cap of {self.settings.max_crawl_delay:g} s"
        waiting = self.queues.remove(queue, lambda it: isinstance(it, FetchItem) and it.origin == item.origin)
        for deferred in [item, *waiting]:
            assert isinstance(deferred, FetchItem)
            self.record(deferred, WebPage(deferred.url, status=FetchStatus.DEFERRED, error=error, fetch_time=now,
                                          blocked_by=""))

    def redirect(self, queue: Hashable, item: FetchItem, row: WebPage, now: datetime) -> WebPage:
        """Follow a same-host redirect in this queue, or make the target a new row."""
        assert row.redirect_to is not None
        try:
            target = urls.canonicalize(row.redirect_to, self.rules.canonical)
            why = self.rules.url_filter.reason(target)
        except InvalidUrlError as exc:
            return with_fields(row, error=f"redirect target unusable: {exc}")
        row = with_fields(row, redirect_to=target)
        if why is not None:
            return with_fields(row, error=f"redirect target filtered: {why}")
        chain = (*item.chain, item.url)
        if target in chain:
            return with_fields(row, error="redirect loop")
        target_host = urls.host_key(target, self.rules.canonical)
        defaults = new_page(target, now, self.settings.default_fetch_interval, score=item.score,
                            depth=item.depth, radius=item.radius)
        if item.is_sitemap:
            # A sitemap that moved stays a sitemap; parse scopes it by who vouched for its source.
            defaults = with_fields(defaults, sitemap_source=SitemapSource.REDIRECT)
        if target_host != item.host:
            marks = WebPage(target, is_sitemap=True) if item.is_sitemap else WebPage(target)
            self.outbox.add(Outcome(rowkeys.row_key(target).encode(), marks, defaults))
            return row
        if len(chain) > self.settings.max_redirects:
            return with_fields(row, error=f"more than {self.settings.max_redirects} redirects")
        if target in self.seen:
            return row  # in the batch anyway, or fetched already: not twice
        self.seen.add(target)
        self.counts.redirects_followed += 1
        self.counts.total += 1
        hop = FetchItem(target, rowkeys.row_key(target).encode(), urls.origin(target, self.rules.canonical),
                        target_host, queue, is_sitemap=item.is_sitemap, fetch_split=item.fetch_split,
                        score=item.score, depth=item.depth, radius=item.radius, chain=chain)
        self.queues.add(queue, hop, front=True)
        return row

    def record(self, item: FetchItem, row: WebPage, unrecorded: Unrecorded | None = None) -> None:
        """Hand a finished URL's facts (with the batch marks, and the exchange to archive) to the writer."""
        batch = self.options.batch_id
        marks: dict[str, object] = {"fetch_mark": batch}
        if_new = None
        if item.chain:  # a redirect hop joins the batch
            marks.update(generate_mark=batch, batch_id=batch, fetch_split=item.fetch_split)
            # Its status comes from `row` (the outcome), which the writer puts over these.
            if_new = new_page(item.url, self.clock(), self.settings.default_fetch_interval, score=item.score,
                              depth=item.depth, radius=item.radius)
            if item.is_sitemap:
                # The redirect inlink updatedb would write, now: parse (this batch) reads who
                # vouched for the source from it.
                depth = item.depth if item.depth is not None else self.settings.seed_depth
                radius = item.radius if item.radius is not None else self.settings.seed_radius
                link = format_inlink(Inlink(InlinkKind.REDIRECT, depth, radius, batch))
                marks.update(is_sitemap=True, inlinks={item.chain[-1]: link})
                if_new = with_fields(if_new, sitemap_source=SitemapSource.REDIRECT)
        row = with_fields(row, **marks)
        status = row.status.value if row.status else "unknown"
        self.outbox.add(Outcome(item.key, row, if_new, unrecorded))
        self.counts.done += 1
        self.counts.by_status[status] += 1
        self.counts.by_host.setdefault(item.host, Counter())[status] += 1
