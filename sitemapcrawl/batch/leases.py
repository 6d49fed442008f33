"""Leases: one worker per share of a batch (a fetch partition, the parse, the update).

A lease is one cell of the batch's registry row, `l:<share>` =
`worker=ID until=TIME`, written with HBase's check-and-put: a worker claims a
share by replacing exactly the value it read (or by writing where there was
none), so of two workers racing for one share exactly one wins. While it
works, a daemon thread pushes the expiry on every third of `lease_seconds`
(again by check-and-put on its own value); if that fails, the share was taken
over and `lost` is set, and the job stops handing out work.

A share is free when its cell is absent, expired, released (`until` in the
past), or held by a process of this machine that is no longer running (the
worker id is `host:pid:random`, so a `kill -9` does not block the rerun for a
whole lease). Otherwise the second worker gets `LeaseHeldError` naming the
holder, or with `wait` sleeps until the lease expires and takes it over.

Cost: one read and one check-and-put per share to claim; one check-and-put per
share every `lease_seconds / 3` while working; one to release.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sitemapcrawl.errors import LeaseHeldError, SitemapCrawlError
from sitemapcrawl.model.codec import format_time, parse_time
from sitemapcrawl.model.webpage import BATCH_TABLE, batch_cell
from sitemapcrawl.storage.store import Store

log = logging.getLogger(__name__)

_HOST = socket.gethostname()


def new_worker_id() -> str:
    """A worker id unique across machines and runs: `host:pid:random`."""
    return f"{_HOST}:{os.getpid()}:{secrets.token_hex(3)}"


@dataclass(frozen=True)
class Holder:
    """Who holds a share, until when."""

    worker: str
    until: datetime

    def text(self) -> bytes:
        return f"worker={self.worker} until={format_time(self.until)}".encode()

    @classmethod
    def parse(cls, raw: bytes | None) -> Holder | None:
        """The holder a cell names; None for an absent or unreadable cell (free)."""
        if not raw:
            return None
        fields = dict(part.partition("=")[::2] for part in raw.decode("utf-8", "replace").split())
        try:
            return cls(fields["worker"], parse_time(fields["until"]))
        except (KeyError, ValueError):
            return None

    def gone(self) -> bool:
        """Is the holder a process of this machine that is no longer running?"""
        host, _, rest = self.worker.partition(":")
        pid_text = rest.partition(":")[0]
        if host != _HOST or not pid_text.isdigit() or int(pid_text) == os.getpid():
            return False
        try:
            os.kill(int(pid_text), 0)
        except ProcessLookupError:
            return True
        except OSError:
            return False  # it exists but is not ours to signal
        return False


def _now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


class Lease:
    """The leases of some shares of one batch, held by this worker (see the module docstring)."""

    def __init__(self, store: Store, batch_id: str, shares: list[str], seconds: float,
                 worker: str | None = None, clock: Callable[[], datetime] = _now) -> None:
        self.store = store
        self.batch_id = batch_id
        self.shares = shares
        self.seconds = max(1.0, seconds)
        self.worker = worker or new_worker_id()
        self.clock = clock
        self.lost = threading.Event()
        """Set when a refresh found the share taken over: stop working on it."""
        self._held: dict[str, bytes] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _mine(self) -> bytes:
        return Holder(self.worker, self.clock() + timedelta(seconds=self.seconds)).text()

    def claim(self, wait: bool = False, on_wait: Callable[[str], None] = lambda line: None) -> None:
        """Take every share, or raise LeaseHeldError naming the holder (after releasing what was taken).

        With `wait`, a share held by a live worker is waited for until its
        lease expires (`on_wait` hears one line per wait), then taken over.
        """
        try:
            for share in self.shares:
                self._claim_one(share, wait, on_wait)
        except BaseException:
            self.release()
            raise
        self._thread = threading.Thread(target=self._refresh, name=f"lease-{self.batch_id}", daemon=True)
        self._thread.start()

    def _claim_one(self, share: str, wait: bool, on_wait: Callable[[str], None]) -> None:
        column = batch_cell("l", share)
        key = self.batch_id.encode()
        told = False
        while True:
            current = (self.store.row(BATCH_TABLE, key, [column]) or {}).get(column)
            holder = Holder.parse(current)
            now = self.clock()
            if holder is None or holder.until <= now or holder.worker == self.worker or holder.gone():
                mine = self._mine()
                if self.store.check_and_put(BATCH_TABLE, key, column, current, mine):
                    if holder is not None and holder.worker != self.worker and holder.until > now:
                        log.warning("batch %s %s: took over from worker %s (no longer running)",
                                    self.batch_id, share, holder.worker)
                    self._held[share] = mine
                    return
                continue  # somebody changed it between our read and our put: look again
            line = (f"batch {self.batch_id} {share} is held by worker {holder.worker} until "
                    f"{format_time(holder.until)}")
            if not wait:
                raise LeaseHeldError(f"{line}; rerun with --wait to take it over when that lease expires")
            if not told:
                on_wait(f"{line}; waiting")
                told = True
            time.sleep(min(5.0, max(0.2, (holder.until - now).total_seconds() + 0.2)))

    def _refresh(self) -> None:
        while not self._stop.wait(self.seconds / 3):
            for share, value in list(self._held.items()):
                mine = self._mine()
                try:
                    won = self.store.check_and_put(BATCH_TABLE, self.batch_id.encode(), batch_cell("l", share),
                                                   value, mine)
                except SitemapCrawlError as exc:
                    log.warning("batch %s %s: lease not refreshed (%s)", self.batch_id, share, exc)
                    continue
                if won:
                    self._held[share] = mine
                else:
                    log.warning("batch %s %s: lease lost to another worker; stopping", self.batch_id, share)
                    self._held.pop(share, None)
                    self.lost.set()

    def release(self) -> None:
        """Give the shares back (expiry set to now) and stop refreshing; never raises for HBase trouble."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        for share, value in list(self._held.items()):
            ended = Holder(self.worker, self.clock() - timedelta(seconds=1)).text()
            try:
                self.store.check_and_put(BATCH_TABLE, self.batch_id.encode(), batch_cell("l", share), value, ended)
            except SitemapCrawlError as exc:
                log.warning("batch %s %s: lease not released (%s); it expires by itself", self.batch_id, share, exc)
        self._held.clear()

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()
