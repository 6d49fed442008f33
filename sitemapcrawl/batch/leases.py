"""Leases: one worker per split of a batch's phase (a fetch split, the parse or a split of it, the update).

A lease is one cell of the batch's registry row, `l:<split>` (`fetch.K/N`,
`parse`, `parse.K/N`), written with HBase's check-and-put: a worker claims
a split by replacing exactly the value it read, so of two workers racing for one split exactly one wins. While it
works, a daemon thread pushes the expiry every third of `lease_seconds`; if
that fails the split was taken over, `lost` is set and the job stops handing
out work. A split is free when its cell is absent, expired, released, or
held by a process of this machine that is gone (a `kill -9` does not block
the rerun); otherwise `LeaseHeldError` names the holder, or `wait` waits for
the expiry. Fencing: `confirm`, called by fetch before each write of its
outcomes, fails once `batches --release` took the cell over (docs/reliability.md).

Cost: one read and one check-and-put per split to claim; one check-and-put per
split every `lease_seconds / 3` while working; one to release.
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
from datetime import datetime, timedelta

from sitemapcrawl.clock import Clock, utc_now
from sitemapcrawl.errors import LeaseHeldError, SitemapCrawlError
from sitemapcrawl.model.codec import format_time, parse_time
from sitemapcrawl.model.webpage import BATCH_TABLE, batch_cell
from sitemapcrawl.processes import pid_alive
from sitemapcrawl.storage.store import Store

log = logging.getLogger(__name__)

_HOST = socket.gethostname()


def new_worker_id() -> str:
    """A worker id unique across machines and runs: `host:pid:random`."""
    return f"{_HOST}:{os.getpid()}:{secrets.token_hex(3)}"


@dataclass(frozen=True)
class Holder:
    """Who holds a split, until when."""

    worker: str
    until: datetime
    since: datetime | None = None
    """When the holder claimed the split (None in cells written before it was kept)."""

    def text(self) -> bytes:
        since = f" since={format_time(self.since)}" if self.since is not None else ""
        return f"worker={self.worker}{since} until={format_time(self.until)}".encode()

    def describe(self) -> str:
        """`worker W (host H, pid P) since T, lease refreshed until U`: who to look for, and where."""
        host, _, rest = self.worker.partition(":")
        pid = rest.partition(":")[0] or "?"
        since = format_time(self.since) if self.since is not None else "?"
        return (f"worker {self.worker} (host {host}, pid {pid}) since {since}, "
                f"lease refreshed until {format_time(self.until)}")

    def live(self, now: datetime) -> bool:
        """Does the lease still hold: not expired, and not a process of this machine that died?"""
        return self.until > now and not self.gone()

    @classmethod
    def parse(cls, raw: bytes | None) -> Holder | None:
        """The holder a cell names; None for an absent or unreadable cell (free)."""
        if not raw:
            return None
        fields = dict(part.partition("=")[::2] for part in raw.decode("utf-8", "replace").split())
        try:
            since = parse_time(fields["since"]) if "since" in fields else None
            return cls(fields["worker"], parse_time(fields["until"]), since)
        except (KeyError, ValueError):
            return None

    def gone(self) -> bool:
        """Is the holder a process of this machine that is no longer running?"""
        host, _, rest = self.worker.partition(":")
        pid_text = rest.partition(":")[0]
        if host != _HOST or not pid_text.isdigit() or int(pid_text) == os.getpid():
            return False
        return not pid_alive(int(pid_text))


class Lease:
    """The leases of some splits of one batch, held by this worker (see the module docstring)."""

    def __init__(self, store: Store, batch_id: str, split_names: list[str], seconds: float,
                 worker: str | None = None, clock: Clock = utc_now) -> None:
        self.store = store
        self.batch_id = batch_id
        self.split_names = split_names
        self.seconds = max(1.0, seconds)
        self.worker = worker or new_worker_id()
        self.clock = clock
        self.lost = threading.Event()
        """Set when a refresh found the split taken over: stop working on it."""
        self._held: dict[str, bytes] = {}
        self._since: datetime | None = None
        self._lock = threading.Lock()
        """One check-and-put of our cells at a time (the refresh thread and `confirm`)."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _mine(self) -> bytes:
        if self._since is None:
            self._since = self.clock()
        return Holder(self.worker, self.clock() + timedelta(seconds=self.seconds), self._since).text()

    def claim(self, wait: bool = False, on_wait: Callable[[str], None] = lambda line: None) -> None:
        """Take every split, or raise LeaseHeldError naming the holder (after releasing what was taken).

        With `wait`, a split held by a live worker is waited for until its
        lease expires (`on_wait` hears one line per wait), then taken over.
        """
        try:
            for split_name in self.split_names:
                self._claim_one(split_name, wait, on_wait)
        except BaseException:
            self.release()
            raise
        self._thread = threading.Thread(target=self._refresh, name=f"lease-{self.batch_id}", daemon=True)
        self._thread.start()

    def _claim_one(self, split_name: str, wait: bool, on_wait: Callable[[str], None]) -> None:
        column = batch_cell("l", split_name)
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
                                    self.batch_id, split_name, holder.worker)
                    self._held[split_name] = mine
                    return
                continue  # somebody changed it between our read and our put: look again
            line = f"batch {self.batch_id} {split_name} is held by {holder.describe()}"
            if not wait:
                raise LeaseHeldError(f"{line}; rerun with --wait to take it over when that lease expires")
            if not told:
                on_wait(f"{line}; waiting")
                told = True
            time.sleep(min(5.0, max(0.2, (holder.until - now).total_seconds() + 0.2)))

    def _refresh(self) -> None:
        while not self._stop.wait(self.seconds / 3):
            try:
                self.confirm()
            except SitemapCrawlError as exc:
                log.warning("batch %s: lease not refreshed (%s)", self.batch_id, exc)

    def confirm(self) -> bool:
        """Push the expiry of every split held (check-and-put on our own value); False once one was taken.

        Taken (over by another worker, or by `batches --release`): `lost` is
        set and the split is dropped. Raises StoreUnavailableError when HBase
        does not answer. Cost: one check-and-put per split.
        """
        with self._lock:
            for split_name, value in list(self._held.items()):
                mine = self._mine()
                column = batch_cell("l", split_name)
                if self.store.check_and_put(BATCH_TABLE, self.batch_id.encode(), column, value, mine):
                    self._held[split_name] = mine
                    continue
                holder = Holder.parse((self.store.row(BATCH_TABLE, self.batch_id.encode(), [column]) or {}).get(column))
                log.warning("batch %s %s: lease taken by %s; stopping", self.batch_id, split_name,
                            holder.worker if holder else "nobody")
                self._held.pop(split_name, None)
                self.lost.set()
            return not self.lost.is_set()

    def release(self, store_failed: bool = False) -> None:
        """Give the splits back (expiry set to now) and stop refreshing; never raises for HBase trouble.

        With `store_failed` (HBase stopped answering) nothing is sent: the
        lease expires by itself, and a rerun on this machine takes it over at
        once (its holder is gone).
        """
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        if store_failed:
            self._held.clear()
        for split_name, value in list(self._held.items()):
            ended = Holder(self.worker, self.clock() - timedelta(seconds=1), self._since).text()
            try:
                self.store.check_and_put(BATCH_TABLE, self.batch_id.encode(), batch_cell("l", split_name), value, ended)
            except SitemapCrawlError as exc:
                log.warning("batch %s %s: lease not released (%s); it expires by itself",
                            self.batch_id, split_name, exc)
        self._held.clear()

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()
