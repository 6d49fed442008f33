"""The ready queue read best first: what generate chooses from, read in the order it chooses.

Each host's ready entries of one kind are one key range, best first
(`sitemapcrawl.model.due`). `ReadyQueues` lists the hosts of a split's
buckets with a skip scan (one scan per host, its first few entries; with no
cap and no topN, a batch of entries a scan, which lists small hosts whole), merges
their queues by order, and hands out entries in that global order with their
rows read and checked (`take`): the caller stops when it has enough, and
drops a host's queue when its cap is full, so what is read follows what is
chosen, not what is due. Cost: one scan per host with ready entries, plus
the entries and rows of what is taken (a host's queue is read a few entries
at first, twice as many at each refill), plus what the caps skip.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime

from sitemapcrawl.model.cells import column_names
from sitemapcrawl.model.due import DueKind, ReadyEntry, host_queue, parse_ready, ready_range
from sitemapcrawl.model.splits import Split
from sitemapcrawl.model.webpage import DUE_TABLE, WEBPAGE_TABLE, WebPage
from sitemapcrawl.storage.dueindex import DueRead, check_ready, demote, with_due_fields
from sitemapcrawl.storage.store import Store
from sitemapcrawl.storage.tables import Unreadable, pages

#: Entries read of each host's queue at first, at most (doubling at each refill): a topN over many hosts
#: reads a few entries of each, not topN of each.
FIRST_READ = 16


@dataclass(eq=False)
class HostQueue:
    """One host's ready entries of one kind, best first, read `want` at a time (doubling) as they are taken."""

    prefix: bytes
    entries: list[ReadyEntry]
    resume: bytes | None
    """Where the next read starts; None when every entry is in `entries`."""
    want: int
    taken: int = 0
    """Entries picked by the `take` under way."""
    dropped: bool = False
    tag: object = field(default=None)
    """The caller's note on this host (generate: its count key, once a row told it)."""

    @property
    def head(self) -> ReadyEntry | None:
        return self.entries[0] if self.entries else None


class ReadyQueues:
    """The ready entries of `kinds` in `split`, merged best first across hosts (see the module docstring)."""

    def __init__(self, store: Store, kinds: Iterable[DueKind], split: Split, now: datetime, fields: list[str],
                 job: str, unreadable: Unreadable, read: DueRead, want: int) -> None:
        self._store, self._now, self._job = store, now, job
        self._unreadable, self._read = unreadable, read
        # With no cap and no topN (`want` over the batch size) every due entry is taken: read them a batch at
        # a time, so a scan lists many small hosts whole (one round trip, not one or two per host).
        self._want = store.batch_size if want > store.batch_size else max(1, min(want, FIRST_READ))
        self._fields = with_due_fields(fields)
        self._columns = column_names(WebPage, self._fields)
        self._next_fetch = column_names(WebPage, ["next_fetch"])[0]
        self._heap: list[tuple[int, bytes, int, HostQueue]] = []
        self._junk: list[bytes] = []
        for kind in kinds:
            self._list_hosts(*ready_range(kind, split))
        self._drop_junk()

    def _list_hosts(self, start: bytes, stop: bytes) -> None:
        """One skip scan: a queue per host, with its first `want` entries (fewer: all it has)."""
        while True:
            scanned = [key for key, _ in self._store.scan(DUE_TABLE, start=start, stop=stop, limit=self._want)]
            self._read.entries += len(scanned)
            if not scanned:
                return
            full = len(scanned) == self._want
            by_host: dict[bytes, list[ReadyEntry]] = {}
            for key in scanned:
                entry = parse_ready(key)
                if entry is None:
                    self._junk.append(key)
                    continue
                by_host.setdefault(host_queue(entry.kind, entry.row_key), []).append(entry)
            tail = parse_ready(scanned[-1])
            last = host_queue(tail.kind, tail.row_key) if tail is not None else None
            for prefix, entries in by_host.items():
                more = full and prefix == last
                self._push(HostQueue(prefix, entries, entries[-1].key() + b"\x00" if more else None, self._want))
            if not full:
                return
            start = (last if last is not None else scanned[-1]) + b"\xff"

    def _push(self, queue: HostQueue) -> None:
        head = queue.head
        if head is not None and not queue.dropped:
            heapq.heappush(self._heap, (-head.order, head.row_key, id(queue), queue))

    def _refill(self, queue: HostQueue) -> None:
        """Read the next `want` entries of a queue whose read entries are all taken (one scan)."""
        if queue.entries or queue.resume is None:
            return
        stop = queue.prefix + b"\xff"
        scanned = [key for key, _ in self._store.scan(DUE_TABLE, start=queue.resume, stop=stop, limit=queue.want)]
        self._read.entries += len(scanned)
        parsed = [(key, parse_ready(key)) for key in scanned]
        queue.entries = [entry for _, entry in parsed if entry is not None]
        self._junk.extend(key for key, entry in parsed if entry is None)
        queue.resume = scanned[-1] + b"\x00" if len(scanned) == queue.want else None
        queue.want = min(queue.want * 2, self._store.batch_size)

    def drop(self, queue: HostQueue) -> None:
        """Take nothing more from this host's queue (its cap is full: the rest ranks lower)."""
        queue.dropped = True

    def take(self, limit: int, room: Callable[[HostQueue], int]) -> list[tuple[ReadyEntry, WebPage, HostQueue]]:
        """The next entries in global order (at most `limit`) whose rows are due, with those rows.

        `room(queue)`: how many more entries the caller can keep from that
        host (its cap left); a queue with none is dropped, and a batch stops
        before taking more from a host than it has room for, so that the
        caller settles those first. Stale entries are deleted and ready
        entries of rows not yet due go back to waiting, both counted in the
        DueRead, and taking goes on past them. An empty list: the queue is done.
        """
        while self._heap:
            found = self._take_once(limit, room)
            if found:
                return found
        self._drop_junk()
        return []

    def _take_once(self, limit: int, room: Callable[[HostQueue], int]) -> list[
            tuple[ReadyEntry, WebPage, HostQueue]]:
        """One batch of `take`: up to `limit` entries picked in order, their rows read, the due ones kept."""
        picked: list[tuple[ReadyEntry, HostQueue]] = []
        while self._heap and len(picked) < limit:
            _, _, _, queue = self._heap[0]
            left = room(queue)
            if queue.dropped or (left <= 0 and not queue.taken):
                heapq.heappop(self._heap)
                queue.dropped = True
                continue
            if queue.taken >= left:
                break
            heapq.heappop(self._heap)
            entry = queue.entries.pop(0)
            queue.taken += 1
            picked.append((entry, queue))
            self._refill(queue)
            self._push(queue)
        for _, queue in picked:
            queue.taken = 0
        if not picked:
            return []
        found = self._store.rows(WEBPAGE_TABLE, list(dict.fromkeys(entry.row_key for entry, _ in picked)),
                                 columns=self._columns)
        self._read.rows += len(found)
        due: list[tuple[ReadyEntry, HostQueue]] = []
        stale: list[bytes] = []
        later: list[tuple[ReadyEntry, bytes]] = []
        for entry, queue in picked:
            verdict = check_ready(entry, found.get(entry.row_key), self._now)
            if verdict == "due":
                due.append((entry, queue))
            elif verdict == "later":
                later.append((entry, found[entry.row_key][self._next_fetch]))
            else:
                stale.append(entry.key())
        if stale:
            self._read.stale += len(stale)
            self._store.delete_many(DUE_TABLE, [(key, None) for key in stale])
        if later:
            self._read.demoted += len(later)
            demote(self._store, later)
        decoded = dict(pages(((entry.row_key, found[entry.row_key]) for entry, _ in due), self._job,
                             self._unreadable, self._fields))
        return [(entry, decoded[entry.row_key], queue) for entry, queue in due if entry.row_key in decoded]

    def _drop_junk(self) -> None:
        if self._junk:
            self._read.stale += len(self._junk)
            self._store.delete_many(DUE_TABLE, [(key, None) for key in self._junk])
            self._junk.clear()
