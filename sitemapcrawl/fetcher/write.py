"""Writing a fetch: outcomes, refreshed robots.txt rows and politeness states go to HBase behind the requests.

The engine's loop puts what it learns in an `Outbox` and never waits for
HBase; the job's thread (`Writer.flush`, a few times a second) writes the
politeness states and reservations first (`fetcher.pacing.StateWrite`), then
the robots.txt rows, then the outcomes, each table in one batched put. A
reservation's window is confirmed to the engine only once written. What a
write could not take stays for the next (puts are idempotent); while a write
is retried or stalled (`STALLED_AFTER`), `ready` says no, and `Outbox.full`
bounds the backlog. Each write of outcomes is fenced by the lease
(`batch.leases`): after a release they are dropped.

With `--warc`, an outcome's exchange is archived just before the put of its
row, so a killed run leaves no record whose outcome HBase lacks but those of
the put under way. A WARC file that cannot be written (a full disk) is
`ArchiveError`: those outcomes are not written (their rows stay due) and the
fetch stops.

Cost per flush: a multi-get for new rows (redirect hops), one batched put per
table, a check-and-put per leased split; with `--warc`, a file write per exchange.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from sitemapcrawl.clock import Clock, utc_now
from sitemapcrawl.errors import ArchiveError, SitemapCrawlError
from sitemapcrawl.fetcher.outcomes import capture_fields, with_fields
from sitemapcrawl.fetcher.pacing import StateWrite
from sitemapcrawl.model.cells import column_names, encode
from sitemapcrawl.model.webpage import HOST_TABLE, WEBPAGE_TABLE, FetchStatus, HostRow, WebPage
from sitemapcrawl.modes import QueueBy
from sitemapcrawl.storage.batchrecords import record_members, record_work
from sitemapcrawl.storage.dueindex import write_pages
from sitemapcrawl.storage.hosts import origin_key
from sitemapcrawl.storage.politeness import state_rows
from sitemapcrawl.storage.store import Store
from sitemapcrawl.web.warc import Unrecorded, WarcRecorder

#: Seconds a write may take before the engine stops starting requests until it ends (`Writer.ready`).
STALLED_AFTER = 2.0
#: Bytes of exchanges waiting to be archived past which no request starts (`Outbox.full`).
ARCHIVE_BACKLOG = 64 * 1024 * 1024


@dataclass(frozen=True)
class Outcome:
    """Cells for one row, the cells to add when the row does not exist yet, and the exchange to archive."""

    key: bytes
    row: WebPage
    if_new: WebPage | None = None
    unrecorded: Unrecorded | None = None


class Outbox:
    """What the engine hands to the writer: thread-safe, and the writer's thread waits on it.

    `full` (more than `limit` outcomes, or `max_bytes` of exchanges to archive,
    waiting) is the engine's back-pressure: no request starts while HBase is behind.
    """

    def __init__(self, limit: int, max_bytes: int = ARCHIVE_BACKLOG) -> None:
        self.limit = limit
        self.max_bytes = max_bytes
        self._lock = threading.Condition()
        self._outcomes: list[Outcome] = []
        self._bytes = 0
        self._host_rows: list[HostRow] = []
        self._states: list[StateWrite] = []
        self._urgent = False

    def add(self, outcome: Outcome) -> None:
        with self._lock:
            self._outcomes.append(outcome)
            if outcome.unrecorded is not None:
                self._bytes += len(outcome.unrecorded.exchange.body)
            if len(self._outcomes) == self.limit // 2 or self._bytes >= self.max_bytes // 2:
                self._lock.notify()

    def add_host_row(self, row: HostRow) -> None:
        with self._lock:
            self._host_rows.append(row)

    def add_states(self, states: list[StateWrite], urgent: bool) -> None:
        """Politeness states to write; `urgent`: a key waits for its reservation, write now."""
        with self._lock:
            self._states.extend(states)
            if urgent:
                self._urgent = True
                self._lock.notify()

    def wake(self) -> None:
        """Wake the writer's thread now (the engine ended, or a stop)."""
        with self._lock:
            self._urgent = True
            self._lock.notify()

    def wait(self, timeout: float) -> None:
        """The writer's thread: wait until something is urgent, the backlog is half full, or `timeout`."""
        with self._lock:
            if not self._urgent and len(self._outcomes) < self.limit // 2 and self._bytes < self.max_bytes // 2:
                self._lock.wait(timeout)
            self._urgent = False

    def take(self) -> tuple[list[Outcome], list[HostRow], list[StateWrite]]:
        with self._lock:
            taken = self._outcomes, self._host_rows, self._states
            self._outcomes, self._host_rows, self._states, self._bytes = [], [], [], 0
            return taken

    @property
    def full(self) -> bool:
        """Too many outcomes (or bytes to archive) wait for HBase: start no request."""
        return len(self._outcomes) >= self.limit or self._bytes >= self.max_bytes

    @property
    def backlog(self) -> int:
        """Outcomes not yet taken by the writer."""
        with self._lock:
            return len(self._outcomes)


class Writer:
    """Writes what the outbox holds, from the job's thread (see the module docstring)."""

    def __init__(self, store: Store, queue_by: QueueBy, outbox: Outbox,
                 on_confirmed: Callable[[list[StateWrite]], None],
                 fence: Callable[[], bool] = lambda: True, recorder: WarcRecorder | None = None,
                 clock: Clock = utc_now) -> None:
        self._store = store
        self._clock = clock
        self._recorder = recorder
        self._queue_by = queue_by
        self.outbox = outbox
        self._on_confirmed = on_confirmed
        self._fence = fence
        self._flush_lock = threading.Lock()
        self.failure: SitemapCrawlError | None = None
        """The store error that stopped the writes: no request may start any more."""
        self.dropped = 0
        """Outcomes not written because the batch was no longer ours (released)."""
        self._flushing_since: float | None = None
        self._retries_before = 0
        self._outcomes: list[Outcome] = []
        self._host_rows: list[HostRow] = []
        self._states: list[StateWrite] = []
        self.new_rows = 0
        """Rows this run created (redirect hops and targets)."""
        self.unarchived = 0
        """Outcomes not written because their WARC record could not be (their rows stay due)."""
        self._archive_failure: OSError | None = None

    def try_flush(self) -> bool:
        """`flush`, with a store failure kept in `failure` (no request starts after it) instead of raised."""
        if self.failure is not None:
            return False
        try:
            self.flush()
        except SitemapCrawlError as exc:
            self.failure = self.failure or exc
            return False
        return True

    @property
    def unwritten(self) -> int:
        """Outcomes handed over whose write is not confirmed: not taken yet, or in a write that failed (HBase
        may have stored some of those before the error reached us: not confirmed either way)."""
        return self.outbox.backlog + len(self._outcomes)

    def ready(self) -> bool:
        """May a request start? Not after a store failure, nor while a write is retried or has taken over
        `STALLED_AFTER` seconds: what is fetched must have somewhere to go."""
        since = self._flushing_since
        if self.failure is not None:
            return False
        return since is None or (self._store.retries == self._retries_before
                                 and time.monotonic() - since < STALLED_AFTER)

    def flush(self, final: list[StateWrite] | None = None) -> None:
        """Write what the outbox holds (and `final` states after it); one flush at a time."""
        with self._flush_lock:
            outcomes, host_rows, states = self.outbox.take()
            self._outcomes.extend(outcomes)
            self._host_rows.extend(host_rows)
            self._states.extend(states)
            self._states.extend(final or [])
            self._retries_before, self._flushing_since = self._store.retries, time.monotonic()
            try:
                self._flush()
            finally:
                self._flushing_since = None

    def _flush(self) -> None:
        if self._states or self._host_rows:
            puts = state_rows({write.key: write.state for write in self._states}, self._queue_by)
            puts += [(origin_key(row.origin), encode(row)) for row in self._host_rows]
            self._store.write(HOST_TABLE, puts)
            written, self._states, self._host_rows = self._states, [], []
            self._on_confirmed(written)
        if self._outcomes and not self._fence():
            self.dropped += len(self._outcomes)
            self._outcomes = []
            return
        # With a WARC: a chunk's records, then its put; a kill between them leaves only that chunk's
        # records without their outcome. An archived chunk replaces what it was made of, so a put that is
        # retried (the next flush) does not archive it again. Without a WARC: one put of all.
        chunk = max(1, self._store.batch_size) if self._recorder is not None else len(self._outcomes)
        while self._outcomes:
            taken = min(chunk, len(self._outcomes))
            outcomes = self._outcomes[:taken] = self._archived(self._outcomes[:taken])
            self._write(outcomes)
            del self._outcomes[:len(outcomes)]
        if self._archive_failure is not None:
            failure = self._archive_failure
            raise ArchiveError(f"the WARC file cannot be written: {failure.strerror or failure}")

    def _archived(self, outcomes: list[Outcome]) -> list[Outcome]:
        """The outcomes, their exchanges written to the WARC and their rows pointing at the records. After
        a WARC write failed, those with an exchange are left out (counted in `unarchived`)."""
        if self._recorder is None:
            return outcomes
        kept = []
        for outcome in outcomes:
            if outcome.unrecorded is None:
                kept.append(outcome)
                continue
            if self._archive_failure is None:
                try:
                    capture = self._recorder.record(outcome.unrecorded.exchange, outcome.unrecorded.refers)
                except OSError as exc:
                    self._archive_failure = exc
                else:
                    kept.append(Outcome(outcome.key, with_fields(outcome.row, **capture_fields(capture)),
                                        outcome.if_new))
                    continue
            self.unarchived += 1
        return kept

    def _write(self, outcomes: list[Outcome]) -> None:
        if not outcomes:
            return
        # A redirect hop joins the batch: recorded as a member before it is marked (`tables`); a row that
        # redirected has work for sitemap-only mode's parse and spread after all (`r:w`).
        hops: dict[str, list[tuple[bytes, int | None, bool]]] = {}
        redirected: dict[str, list[bytes]] = {}
        for outcome in outcomes:
            if outcome.row.generate_mark is not None:
                work = bool(outcome.row.is_sitemap) or outcome.row.status is FetchStatus.REDIRECT
                hops.setdefault(outcome.row.generate_mark, []).append((outcome.key, outcome.row.fetch_split, work))
            elif outcome.row.status is FetchStatus.REDIRECT and outcome.row.fetch_mark is not None:
                redirected.setdefault(outcome.row.fetch_mark, []).append(outcome.key)
        for batch, members in hops.items():
            record_members(self._store, batch, members)
        for batch, keys in redirected.items():
            record_work(self._store, batch, keys)
        maybe_new = [o.key for o in outcomes if o.if_new is not None]
        existing = set(self._store.rows(WEBPAGE_TABLE, maybe_new, columns=column_names(WebPage, ["status"]))
                       if maybe_new else ())
        puts = []
        for outcome in outcomes:
            cells = {}
            if outcome.if_new is not None and outcome.key not in existing:
                cells.update(encode(outcome.if_new))
                existing.add(outcome.key)
                self.new_rows += 1
            cells.update(encode(outcome.row))
            if cells:
                puts.append((outcome.key, cells))
        write_pages(self._store, puts, now=self._clock())  # new redirect targets are due: with their due index entries
