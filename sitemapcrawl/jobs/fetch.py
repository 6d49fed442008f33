"""`fetch`: fetch one generated batch politely, every ready host at once, from one event loop.

Nutch's queue-based fetcher over HBase rows, event-driven. Its parts are in
`sitemapcrawl.fetcher` (feed, queues, pacing, engine, outcomes, write): the
engine runs on the HTTP client's loop and never waits for HBase; this job's
thread writes what it hands over a few times a second and is the one place
that decides to stop: `time_limit`, `min_throughput` after a `warmup`,
Ctrl-C, the lease lost, HBase failing (a write that cannot be recorded
after the store's retries), or the WARC files failing (ArchiveError). It
then lets no request start, abandons those still in flight
`ABANDON_AFTER` seconds later, writes what was fetched
(StoreUnavailableError says how many writes are not confirmed) and leaves
what was not as it was, so the batch can be fetched again. It holds the
lease of its fetch split (`sitemapcrawl.batch.leases`). In full:
docs/commands.md (fetch) and docs/reliability.md.

Cost: a read of the batch's member records and rows of its split, one
request per URL, batched writes of the outcomes and politeness states (see
`sitemapcrawl.fetcher`).
"""

from __future__ import annotations

import concurrent.futures
import logging
import time
from collections.abc import Callable

from sitemapcrawl.batch import registry
from sitemapcrawl.batch.calls import StageUpdate, Work
from sitemapcrawl.batch.leases import Lease
from sitemapcrawl.clock import Clock, utc_now
from sitemapcrawl.errors import ArchiveError, LeaseHeldError, SitemapCrawlError, StoreUnavailableError, UsageError
from sitemapcrawl.fetcher.engine import Engine, host_budget
from sitemapcrawl.fetcher.feed import queue_all, read_feed
from sitemapcrawl.fetcher.model import FetchCounts, FetchItem, FetchOptions, FetchProgress, RobotsItem
from sitemapcrawl.fetcher.pacing import Pacing, StateWrite
from sitemapcrawl.fetcher.queues import FetchQueues
from sitemapcrawl.fetcher.write import Outbox, Writer
from sitemapcrawl.model.webpage import BATCHROW_TABLE, HOST_TABLE, WEBPAGE_TABLE
from sitemapcrawl.storage.politeness import Resolver, load_states
from sitemapcrawl.storage.store import Store
from sitemapcrawl.web.http import PoliteHttpClient
from sitemapcrawl.web.rules import UrlRules

__all__ = ["FetchCounts", "FetchOptions", "FetchProgress", "fetch", "fetch_phase"]

log = logging.getLogger(__name__)

#: Seconds after a stop (time limit, throughput) that requests still in flight are abandoned.
ABANDON_AFTER = 2.0
#: Seconds between two writes at most (sooner when a reservation is asked for or the backlog grows).
_WRITE_EVERY = 0.25


class _Monitor:
    """Decides when to stop handing out URLs: time limit, throughput."""

    def __init__(self, options: FetchOptions, started: float) -> None:
        self.options = options
        self.started = started
        self.window_start = started
        self.window_done = 0

    def reason_to_stop(self, tick: float, done: int) -> str | None:
        """Why to stop at `tick` (a `time.monotonic` reading) with `done` URLs done; None to go on."""
        options = self.options
        if options.time_limit is not None and tick - self.started >= options.time_limit:
            return f"time limit of {options.time_limit:g} s"
        if options.min_throughput is None or tick - self.started < options.warmup:
            return None
        if tick - self.window_start >= options.throughput_window:
            rate = (done - self.window_done) / (tick - self.window_start)
            self.window_start, self.window_done = tick, done
            if rate < options.min_throughput:
                return f"throughput {rate:.2f} pages/s below {options.min_throughput:g}"
        return None


def fetch(
    store: Store,
    client: PoliteHttpClient,
    rules: UrlRules,
    options: FetchOptions,
    *,
    on_progress: Callable[[FetchProgress], None] = lambda progress: None,
    clock: Clock = utc_now,
) -> FetchCounts:
    """Fetch the batch (or one fetch split of it); return the counts (see the module docstring).

    `clock` stamps each outcome as it comes. Per-URL failures are data on the
    rows. Raises UsageError (bad options, no user agent), LeaseHeldError
    (another worker has the split), TableMissingError or
    StoreUnavailableError. A KeyboardInterrupt stops the
    run cleanly (finished outcomes written, requests in flight given up to
    `ABANDON_AFTER` seconds and then abandoned, their politeness state
    recorded, `stopped` set) instead of propagating.
    Cost: see the parts; the loop itself wakes five times a second.
    """
    options.check()
    settings = rules.settings
    if not settings.user_agent:
        raise UsageError("a user agent is required to fetch: pass --user-agent, set "
                         "SITEMAPCRAWL_USER_AGENT, or set user_agent in the config file")
    store.require_tables(WEBPAGE_TABLE, HOST_TABLE, BATCHROW_TABLE)
    split_names = registry.fetch_split_names(store, options.batch_id, options.fetch_split)
    lease = Lease(store, options.batch_id, split_names, settings.lease_seconds)
    lease.claim(wait=options.wait, on_wait=log.warning)
    store_failed = False
    try:
        counts = _fetch_claimed(store, client, rules, options, on_progress, clock, lease)
    except StoreUnavailableError:
        store_failed = True
        raise
    finally:
        lease.release(store_failed=store_failed)
    if lease.lost.is_set():
        raise LeaseHeldError(f"fetch: batch {options.batch_id} was taken from this worker (released with "
                             f"`batches --release --force`, or taken over) while it ran; stopped, and "
                             f"{counts.dropped} fetched outcomes were not written")
    if not counts.stopped and counts.left == 0:
        # The whole batch fetched: `fetch` stands for every fetch split, those without members too.
        done = split_names if options.fetch_split is not None else [*split_names, registry.FETCH]
        registry.record_done(store, options.batch_id, done, clock())
    return counts


def _fetch_claimed(store: Store, client: PoliteHttpClient, rules: UrlRules, options: FetchOptions,
                   on_progress: Callable[[FetchProgress], None], clock: Clock,
                   lease: Lease) -> FetchCounts:
    settings = rules.settings
    counts = FetchCounts(options.batch_id)
    started = time.monotonic()
    feed = read_feed(store, rules, options, counts, Resolver(), clock())
    if counts.total == 0:
        log.info("fetch: %s", counts.summary())
        return counts
    queues: FetchQueues[FetchItem | RobotsItem] = FetchQueues(options.delay, options.threads_per_host)
    keys = {item.queue for item in feed.items}
    pacing = Pacing(queues, options.delay, settings.max_crawl_delay, load_states(store, keys, options.queue_by),
                    settings.http_deadline)
    outbox = Outbox(limit=4 * settings.hbase_batch_size)
    writer: Writer | None = None
    engine = Engine(client.aio, rules, options, queues, pacing, outbox, lambda: writer is not None and writer.ready(),
                    counts, feed.seen, clock, connections=options.connections,
                    hosts_at_once=host_budget(options.threads_per_host))
    writer = Writer(store, options.queue_by, outbox, engine.confirmed, fence=lease.confirm, recorder=client.recorder,
                    clock=clock)
    for origin, rule in feed.rules.items():
        engine.adopt(origin, feed.queues[origin], rule)
    engine.expect_robots(list(feed.robots_needed))
    pacing.start(feed.known_delays)
    queue_all(feed, queues.add)
    monitor = _Monitor(options, started)
    running = client.submit(engine.run(ABANDON_AFTER))
    running.add_done_callback(lambda _: outbox.wake())
    try:
        _watch(running, engine, writer, outbox, monitor, lease, counts, on_progress, started)
    except KeyboardInterrupt:
        counts.stopped = "interrupted"
        engine.stop()
    finally:
        _wind_down(running, engine, counts)
        final = [StateWrite(key, state, None) for key, state in pacing.final_states().items()]
        if writer.failure is None:
            try:
                writer.flush(final)
            except ArchiveError as exc:  # said below, with what was not written
                writer.failure = exc
        else:
            _retry_write(writer, final)
        counts.new_rows = writer.new_rows
        counts.dropped = writer.dropped
        counts.seconds = time.monotonic() - started
    if isinstance(writer.failure, ArchiveError):
        raise ArchiveError(f"fetch stopped: {writer.failure}; {writer.unarchived} fetched outcomes not written "
                           "(their rows stay due: the rerun fetches them again)")
    if writer.failure is not None:
        unconfirmed = writer.unwritten
        raise StoreUnavailableError(
            f"fetch stopped, HBase failed: {counts.done - unconfirmed} fetched outcomes written, {unconfirmed} "
            "not confirmed (the rerun fetches again those that did not land, and what was never fetched); no "
            "request since; read the logs of its Thrift gateway and RegionServer (local HBase: .hbase-local/logs/). "
            f"Cause: {writer.failure}")
    on_progress(_progress(counts, 0, counts.seconds))
    log.info("fetch: %s", counts.summary())
    return counts


def _watch(running: concurrent.futures.Future[None], engine: Engine, writer: Writer, outbox: Outbox,
           monitor: _Monitor, lease: Lease, counts: FetchCounts, on_progress: Callable[[FetchProgress], None],
           started: float) -> None:
    """The job's thread while the engine runs: write what it hands over, decide when to stop, show progress."""
    while not running.done():
        outbox.wait(_WRITE_EVERY)
        writer.try_flush()
        tick = time.monotonic()
        failed = "WARC failed" if isinstance(writer.failure, ArchiveError) else "HBase failed"
        reason = counts.stopped or monitor.reason_to_stop(tick, counts.done) or (
            "lease lost to another worker" if lease.lost.is_set() else None) or (
            failed if writer.failure is not None else None)
        if reason and not counts.stopped:
            counts.stopped = reason
            engine.stop()
        on_progress(_progress(counts, engine.active_hosts, tick - started))


def _wind_down(running: concurrent.futures.Future[None], engine: Engine, counts: FetchCounts) -> None:
    """Before the final write: the engine lets no request start and has those in flight end or abandoned.

    A Ctrl-C here ends the wait, not the write that follows.
    """
    engine.stop()
    try:
        running.result(timeout=ABANDON_AFTER + 5.0)
    except KeyboardInterrupt:
        counts.stopped = "interrupted"
    except concurrent.futures.TimeoutError:
        log.warning("fetch: the engine did not end in time; its requests in flight count as abandoned")
    if engine.abandoned:
        log.warning("fetch: %d request(s) still in flight; each counts as ending at its deadline", engine.abandoned)


def _retry_write(writer: Writer, final: list[StateWrite]) -> None:
    """After a store failure: one more try of what was fetched (the store's retries wait for HBase)."""
    failure, writer.failure = writer.failure, None
    try:
        writer.flush(final)
    except SitemapCrawlError as exc:
        log.info("fetch: the write was tried again and failed too (%s)", exc)
        writer.failure = exc
    writer.failure = writer.failure or failure


def _progress(counts: FetchCounts, active_hosts: int, elapsed: float) -> FetchProgress:
    return FetchProgress(counts.done, counts.total, counts.done / elapsed if elapsed > 0 else 0.0,
                         counts.bytes, counts.errors, active_hosts)


def fetch_phase(work: Work, options: FetchOptions, progress: StageUpdate) -> FetchCounts:
    """`fetch` as a phase call (`batch.calls`): on `work` and its client, progress as stage `fetch`."""
    return fetch(work.store, work.client, work.rules, options,
                 on_progress=lambda p: progress("fetch", p.done, p.total, p.errors), clock=work.clock)
