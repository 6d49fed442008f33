"""`fetch`: fetch one generated batch politely, with queues per host and a pool of threads.

Nutch's queue-based fetcher over HBase rows. Its parts are in
`sitemapcrawl.fetcher` (feed, queues, pacing, work, write); this module is the
job loop and the one place that decides to stop: `time_limit`,
`min_throughput` after a `warmup`, Ctrl-C, or HBase failing (a politeness
state or a write that cannot be recorded after the store's retries). It then
hands out no URL, abandons requests still in flight `ABANDON_AFTER` seconds
later, writes what was fetched (StoreUnavailableError says how many writes
are not confirmed) and leaves what was not as it was, so the batch can be fetched again. It
holds the lease of its partition (`sitemapcrawl.batch.leases`). In full:
docs/commands.md (fetch) and docs/reliability.md.

Cost: a read of the batch's member records and rows of its partition, one
request per URL, batched writes of the outcomes (see `sitemapcrawl.fetcher`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime

from sitemapcrawl.batch import registry
from sitemapcrawl.batch.leases import Lease
from sitemapcrawl.errors import LeaseHeldError, StoreUnavailableError, UsageError
from sitemapcrawl.fetcher.feed import queue_all, read_feed, stored_rule
from sitemapcrawl.fetcher.model import (
    FetchCounts,
    FetchItem,
    FetchOptions,
    FetchProgress,
    QueueBy,
    RobotsItem,
    RobotsRule,
    parse_partition,
)
from sitemapcrawl.fetcher.pacing import Pacing
from sitemapcrawl.fetcher.queues import FetchQueues
from sitemapcrawl.fetcher.work import Worker, outcome_row, retry_or_gone
from sitemapcrawl.fetcher.write import Writer
from sitemapcrawl.model.webpage import BATCHROW_TABLE, HOST_TABLE, WEBPAGE_TABLE
from sitemapcrawl.storage.politeness import Resolver, load_states
from sitemapcrawl.storage.store import Store
from sitemapcrawl.web.http import SingleRequestClient
from sitemapcrawl.web.rules import UrlRules

__all__ = ["FetchCounts", "FetchItem", "FetchOptions", "FetchProgress", "QueueBy", "RobotsItem", "RobotsRule",
           "fetch", "outcome_row", "parse_partition", "retry_or_gone", "stored_rule"]

log = logging.getLogger(__name__)

#: Seconds after a stop (time limit, throughput) that requests still in flight are abandoned.
ABANDON_AFTER = 2.0


class _Monitor:
    """Decides when to stop handing out URLs: time limit, throughput."""

    def __init__(self, options: FetchOptions, started: float) -> None:
        self.options = options
        self.started = started
        self.window_start = started
        self.window_done = 0

    def reason_to_stop(self, now: float, done: int) -> str | None:
        options = self.options
        if options.time_limit is not None and now - self.started >= options.time_limit:
            return f"time limit of {options.time_limit:g} s"
        if options.min_throughput is None or now - self.started < options.warmup:
            return None
        if now - self.window_start >= options.throughput_window:
            rate = (done - self.window_done) / (now - self.window_start)
            self.window_start, self.window_done = now, done
            if rate < options.min_throughput:
                return f"throughput {rate:.2f} pages/s below {options.min_throughput:g}"
        return None


def fetch(
    store: Store,
    client: SingleRequestClient,
    rules: UrlRules,
    options: FetchOptions,
    *,
    on_progress: Callable[[FetchProgress], None] = lambda progress: None,
    now: Callable[[], datetime] | None = None,
) -> FetchCounts:
    """Fetch the batch (or one partition of it); return the counts (see the module docstring).

    Per-URL failures are data on the rows. Raises UsageError (bad options, no
    user agent), LeaseHeldError (another worker has the share),
    TableMissingError or StoreUnavailableError. A KeyboardInterrupt stops the
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
    clock = now or (lambda: datetime.now(UTC).replace(microsecond=0))
    shares = registry.fetch_shares(store, options.batch_id, options.partition)
    lease = Lease(store, options.batch_id, shares, settings.lease_seconds)
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
        # The whole batch fetched: `fetch` stands for every partition, those without members too.
        done = shares if options.partition is not None else [*shares, registry.FETCH]
        registry.record_done(store, options.batch_id, done, clock())
    return counts


def _fetch_claimed(store: Store, client: SingleRequestClient, rules: UrlRules, options: FetchOptions,
                   on_progress: Callable[[FetchProgress], None], clock: Callable[[], datetime],
                   lease: Lease) -> FetchCounts:
    settings = rules.settings
    counts = FetchCounts(options.batch_id)
    started = time.monotonic()
    feed = read_feed(store, rules, options, counts, Resolver(), clock)
    if counts.total == 0:
        log.info("fetch: %s", counts.summary())
        return counts
    queues: FetchQueues[FetchItem | RobotsItem] = FetchQueues(options.delay, options.threads_per_host)
    keys = {item.queue for item in feed.items}
    pacing = Pacing(queues, options.delay, settings.max_crawl_delay, load_states(store, keys, options.queue_by))
    writer = Writer(store, options.queue_by, pacing.snapshot, fence=lease.confirm)
    pacing.reserve = writer.reserve
    worker = Worker(client, rules, options, queues, pacing, writer, counts, feed.seen, clock)
    for origin, rule in feed.rules.items():
        worker.adopt(origin, feed.queues[origin], rule)
    worker.expect_robots(list(feed.robots_needed))
    pacing.start(feed.known_delays)
    queue_all(feed, queues.add)
    ended = threading.Event()
    threads = [threading.Thread(target=_work_then_tell, args=(worker, ended), name=f"fetch-{i}", daemon=True)
               for i in range(min(options.threads, max(1, queues.pending)))]
    monitor = _Monitor(options, started)
    last_write = time.monotonic()
    abandon_at: float | None = None
    try:
        # Started inside the try: a Ctrl-C at any moment after the first
        # request still reaches the final flush (outcomes and politeness state).
        for thread in threads:
            thread.start()
        while any(t.is_alive() for t in threads):
            # Not Thread.join: in CPython 3.11 a Ctrl-C inside join(timeout) marks the live thread as
            # ended (bpo-45274's handler), and the wind-down would not wait for its request.
            ended.wait(0.2)
            ended.clear()
            tick = time.monotonic()
            if writer.waiting >= settings.hbase_batch_size or tick - last_write >= 1.0:
                writer.try_flush()
                last_write = tick
            reason = counts.stopped or monitor.reason_to_stop(tick, counts.done) or (
                "lease lost to another worker" if lease.lost.is_set() else None) or (
                "HBase failed" if writer.failure is not None else None)
            if reason and not counts.stopped:
                counts.stopped = reason
                queues.close()
                abandon_at = tick + ABANDON_AFTER
            on_progress(_progress(counts, queues, tick - started))
            if abandon_at is not None and tick >= abandon_at:
                log.warning("fetch: abandoning the requests still in flight; their rows stay due")
                break
    except KeyboardInterrupt:
        counts.stopped = "interrupted"
    finally:
        # After a stop (time limit, throughput, lease) its ABANDON_AFTER seconds may be used up already.
        left = ABANDON_AFTER if abandon_at is None else max(0.0, abandon_at - time.monotonic())
        _wind_down(queues, pacing, threads, counts, left)
        if writer.failure is None:
            writer.flush()
        else:
            _retry_write(writer)
        counts.new_rows = writer.new_rows
        counts.dropped = writer.dropped
        counts.seconds = time.monotonic() - started
    if writer.failure is not None:
        unconfirmed = writer.unwritten
        raise StoreUnavailableError(
            f"fetch stopped, HBase failed: {counts.done - unconfirmed} fetched outcomes written, {unconfirmed} "
            "not confirmed (the rerun fetches again those that did not land, and what was never fetched); no "
            "request since; read the logs of its Thrift gateway and RegionServer (local HBase: .hbase-local/logs/). "
            f"Cause: {writer.failure}")
    on_progress(_progress(counts, queues, counts.seconds))
    log.info("fetch: %s", counts.summary())
    return counts


def _work_then_tell(worker: Worker, ended: threading.Event) -> None:
    """One worker thread's life; `ended` wakes the job's loop as it ends."""
    try:
        worker.work()
    finally:
        ended.set()


def _retry_write(writer: Writer) -> None:
    """After a store failure: one more try of what was fetched (the store's retries wait for HBase)."""
    failure, writer.failure = writer.failure, None
    if not writer.try_flush():
        log.info("fetch: the write was tried again and failed too (%s)", writer.failure)
    writer.failure = writer.failure or failure


def _wind_down(queues: FetchQueues[FetchItem | RobotsItem], pacing: Pacing, threads: list[threading.Thread],
               counts: FetchCounts, grace: float) -> None:
    """Before the final write: no request starts any more; those in flight get `grace` s, then count as abandoned.

    So the politeness state written next covers every request this run
    started (`Pacing.settle`), and the outcome of each that ended in time is
    handed to the writer (its thread is joined). A Ctrl-C here ends the
    wait, not the write.
    """
    give_up = time.monotonic() + grace
    queues.close()
    pacing.stop()
    try:
        abandoned = pacing.settle(grace)
        for thread in threads:
            if thread.is_alive():  # not one that a Ctrl-C kept from starting
                thread.join(max(0.0, give_up - time.monotonic()))
    except KeyboardInterrupt:
        counts.stopped = "interrupted"
        abandoned = pacing.settle(0.0)
    if abandoned:
        log.warning("fetch: %d request(s) still in flight; each counts as ending at its deadline", abandoned)


def _progress(counts: FetchCounts, queues: FetchQueues[FetchItem | RobotsItem], elapsed: float) -> FetchProgress:
    return FetchProgress(counts.done, counts.total, counts.done / elapsed if elapsed > 0 else 0.0,
                         counts.bytes, counts.errors, queues.active_queues())
