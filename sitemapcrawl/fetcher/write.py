"""Writing a fetch: finished outcomes, refreshed robots.txt rows and politeness state go to HBase.

Workers hand outcomes to a `Writer`; the job's thread calls `flush` (every
`hbase_batch_size` outcomes or once a second, and at the end), which also
writes the politeness state of the keys changed since their last write
(`fetcher.pacing.Pacing.snapshot` versions). Taken outcomes stay until written, so an
interrupted write is redone by the next flush (puts are idempotent); while
a write is retried, `ready` says no and no request starts. For a key with a
delay, `reserve` writes its state before each request and the worker writes
the outcome at once, so a SIGKILL loses no answer it had time to write; a
reservation HBase refuses stops the job. Each write of outcomes is fenced by
the lease (`batch.leases`): once the batch was released, they are dropped.

Cost per flush: a multi-get for possibly new rows (redirect hops and targets), one
batched put per table, a check-and-put per lease share; per request of a delayed key, one put.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from sitemapcrawl.errors import SitemapCrawlError
from sitemapcrawl.model.cells import column_names, encode
from sitemapcrawl.model.webpage import HOST_TABLE, WEBPAGE_TABLE, HostRow, WebPage
from sitemapcrawl.storage.batchrecords import record_members
from sitemapcrawl.storage.dueindex import write_pages
from sitemapcrawl.storage.hosts import origin_key
from sitemapcrawl.storage.politeness import KeyState, QueueBy, state_rows
from sitemapcrawl.storage.store import Store

#: Seconds a write may take before workers stop starting requests until it ends (`Writer.ready`).
STALLED_AFTER = 2.0


@dataclass(frozen=True)
class Outcome:
    """Cells for one row, and the cells to add when the row does not exist yet."""

    key: bytes
    row: WebPage
    if_new: WebPage | None = None


class Writer:
    """Buffers what workers finished and writes it from the job's thread (see the module docstring)."""

    def __init__(self, store: Store, queue_by: QueueBy,
                 states: Callable[[], dict[Hashable, tuple[int, KeyState]]],
                 fence: Callable[[], bool] = lambda: True) -> None:
        self._store = store
        self._queue_by = queue_by
        self._states = states
        self._fence = fence
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()
        self._state_lock = threading.Lock()
        """One write of politeness states at a time, each from a snapshot taken under it (never an older
        state over a newer one)."""
        self.failure: SitemapCrawlError | None = None
        """The store error that made a reservation fail: no request may start any more."""
        self.dropped = 0
        """Outcomes not written because the batch was no longer ours (released)."""
        self._flushing_since: float | None = None
        self._retries_before = 0
        self._outcomes: list[Outcome] = []
        self._host_rows: list[HostRow] = []
        self._unwritten: list[Outcome] = []
        self._unwritten_hosts: list[HostRow] = []
        self._written: dict[Hashable, int] = {}
        """Key -> the version of its politeness state last written."""
        self.new_rows = 0
        """Rows this run created (redirect hops and targets)."""

    def add(self, outcome: Outcome, at_once: bool = False) -> None:
        """Queue one row's cells (thread-safe); `at_once`: and write what waits now (`try_flush`)."""
        with self._lock:
            self._outcomes.append(outcome)
        if at_once:
            self.try_flush()

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

    def add_host_row(self, row: HostRow) -> None:
        """Queue a refreshed robots.txt row (thread-safe)."""
        with self._lock:
            self._host_rows.append(row)

    def reserve(self, key: Hashable) -> bool:
        """Before a request to `key` starts: write the key's state, the request in flight included; False
        (and `failure` set) when the store cannot take it, so the request is not made."""
        if self.failure is not None:
            return False
        try:
            with self._state_lock:
                version, state = self._states()[key]
                self._store.write(HOST_TABLE, state_rows({key: state}, self._queue_by))
                self._written[key] = max(version, self._written.get(key, 0))
        except SitemapCrawlError as exc:
            self.failure = self.failure or exc
            return False
        return True

    @property
    def unwritten(self) -> int:
        """Outcomes handed over whose write is not confirmed: not sent yet, or in a write that failed (HBase
        may have stored some of those before the error reached us: not confirmed either way)."""
        with self._lock:
            return len(self._outcomes) + len(self._unwritten)

    @property
    def waiting(self) -> int:
        """Outcomes not yet flushed."""
        with self._lock:
            return len(self._outcomes)

    def flush(self) -> None:
        """Write what finished and the politeness state that changed (one flush at a time)."""
        with self._flush_lock:
            self._retries_before, self._flushing_since = self._store.retries, time.monotonic()
            try:
                self._flush()
            finally:
                self._flushing_since = None

    def ready(self) -> bool:
        """May a request start? Not after a store failure, nor while a write is retried or has taken over
        `STALLED_AFTER` seconds: what is fetched must have somewhere to go."""
        since = self._flushing_since
        if self.failure is not None:
            return False
        return since is None or (self._store.retries == self._retries_before
                                 and time.monotonic() - since < STALLED_AFTER)

    def _flush(self) -> None:
        with self._lock:
            self._unwritten.extend(self._outcomes)
            self._unwritten_hosts.extend(self._host_rows)
            self._outcomes, self._host_rows = [], []
        with self._state_lock:
            fresh = {key: (version, state) for key, (version, state) in self._states().items()
                     if version > self._written.get(key, 0)}
            if self._unwritten_hosts or fresh:
                puts = [(origin_key(r.origin), encode(r)) for r in self._unwritten_hosts]
                puts += state_rows({key: state for key, (_, state) in fresh.items()}, self._queue_by)
                self._store.write(HOST_TABLE, puts)
                self._unwritten_hosts = []
                self._written.update({key: version for key, (version, _) in fresh.items()})
        if self._unwritten and not self._fence():
            self.dropped += len(self._unwritten)
            self._unwritten = []
            return
        self._write(self._unwritten)
        self._unwritten = []

    def _write(self, outcomes: list[Outcome]) -> None:
        if not outcomes:
            return
        # A redirect hop joins the batch: recorded as a member before it is marked (`tables`).
        hops: dict[str, list[tuple[bytes, int | None]]] = {}
        for outcome in outcomes:
            if outcome.row.generate_mark is not None:
                hops.setdefault(outcome.row.generate_mark, []).append((outcome.key, outcome.row.partition))
        for batch, members in hops.items():
            record_members(self._store, batch, members)
        maybe_new = [o.key for o in outcomes if o.if_new is not None]
        existing = set(self._store.rows(WEBPAGE_TABLE, maybe_new, columns=column_names(WebPage, ["status"])))
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
        write_pages(self._store, puts)  # new redirect targets are due: their due index entries too
