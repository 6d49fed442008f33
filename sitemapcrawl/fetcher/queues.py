"""Politeness queues for the fetcher: one FIFO per key (host or IP), worked from one event loop.

The design of Nutch's fetcher queues: `take` hands out an item only from a
queue that is *ready*, with a free slot (fewer than `slots_per_queue` items
in flight) whose time has come. A slot `release`d frees `delay` seconds
after the end of its request (or at once, at its old time, when no request
was made: a robots.txt denial, a deferral), so no two requests of one queue
are closer than the delay, end to start; with more than one slot, each slot
keeps the delay on its own. `hold` (a server's Retry-After) keeps every slot
of a queue shut until a time. A queue that is ready but may not start yet
(`take`'s `admit` says no: its politeness reservation is not in HBase yet)
is *parked* until `unpark`.

Not thread-safe: the fetch engine's loop is its only user. Cost: `take` is
O(log queues) through a heap keyed by when the next slot frees, however many
hosts; `next_ready` is O(1). No I/O; `ticks` (monotonic seconds) is injectable for tests.
"""

from __future__ import annotations

import heapq
import itertools
import math
import time
from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Lease(Generic[T]):
    """An item taken from queue `key`, holding one of its slots until released."""

    key: Hashable
    item: T
    slot_time: float
    """When the slot became free (given back as is when no request was made)."""


@dataclass
class _Queue(Generic[T]):
    delay: float
    slots: list[float]
    """Heap of the times the free slots may start a request."""
    items: deque[T] = field(default_factory=deque)
    in_flight: int = 0
    heap_time: float = math.inf
    """The time of this queue's live entry in the ready heap (inf: none)."""
    hold_until: float = 0.0
    """No slot of this queue frees before this time (a pause the server asked for)."""
    parked: bool = False
    """Ready, but `admit` said not yet: out of the heap until `unpark`."""


class FetchQueues(Generic[T]):
    """Queues per key with per-queue slots and delays (see the module docstring)."""

    def __init__(self, delay: float, slots_per_queue: int = 1,
                 ticks: Callable[[], float] = time.monotonic) -> None:
        if slots_per_queue < 1 or delay < 0:
            raise ValueError("FetchQueues needs slots_per_queue >= 1 and delay >= 0")
        self._delay = delay
        self._slots = slots_per_queue
        self._ticks = ticks
        self._queues: dict[Hashable, _Queue[T]] = {}
        self._ready: list[tuple[float, int, Hashable]] = []
        self._seq = itertools.count()
        self._pending = 0
        self._in_flight = 0
        self._closed = False

    # ----------------------------------------------------------- filling --

    def _queue(self, key: Hashable) -> _Queue[T]:
        queue = self._queues.get(key)
        if queue is None:
            queue = self._queues[key] = _Queue(self._delay, [0.0] * self._slots)
        return queue

    def _schedule(self, key: Hashable, queue: _Queue[T]) -> None:
        """Put the queue in the ready heap if it has work and a free slot, and is not parked."""
        if queue.items and queue.slots and not queue.parked:
            ready = queue.slots[0]
            if ready < queue.heap_time:
                queue.heap_time = ready
                heapq.heappush(self._ready, (ready, next(self._seq), key))

    def add(self, key: Hashable, item: T, front: bool = False) -> None:
        """Queue `item` under `key` (at the head with `front`, e.g. a redirect hop)."""
        queue = self._queue(key)
        if front:
            queue.items.appendleft(item)
        else:
            queue.items.append(item)
        self._pending += 1
        self._schedule(key, queue)

    def set_delay(self, key: Hashable, delay: float) -> None:
        """Use `delay` for this queue from its next release on (a robots.txt Crawl-delay)."""
        self._queue(key).delay = delay

    def hold(self, key: Hashable, until: float) -> None:
        """No request of this queue starts before `until` (monotonic time), in flight or not (Retry-After)."""
        queue = self._queue(key)
        queue.hold_until = max(queue.hold_until, until)
        queue.slots = [max(slot, until) for slot in queue.slots]
        heapq.heapify(queue.slots)
        queue.heap_time = math.inf  # the live entry may be earlier than the hold: schedule anew
        self._schedule(key, queue)

    def delay(self, key: Hashable) -> float:
        """The delay of a queue (the default one for a queue never seen)."""
        queue = self._queues.get(key)
        return self._delay if queue is None else queue.delay

    def remove(self, key: Hashable, predicate: Callable[[T], bool]) -> list[T]:
        """Take out and return the waiting items of `key` that match (not those in flight)."""
        queue = self._queues.get(key)
        if queue is None:
            return []
        kept: deque[T] = deque()
        removed: list[T] = []
        for item in queue.items:
            (removed if predicate(item) else kept).append(item)
        queue.items = kept
        self._pending -= len(removed)
        return removed

    def unpark(self, key: Hashable) -> None:
        """A parked queue may be taken from again."""
        queue = self._queues.get(key)
        if queue is not None and queue.parked:
            queue.parked = False
            self._schedule(key, queue)

    def close(self) -> None:
        """Hand out nothing more. Items in flight may still be released."""
        self._closed = True

    # ----------------------------------------------------------- working --

    def take(self, admit: Callable[[Hashable], bool] = lambda key: True) -> Lease[T] | None:
        """The next item of a ready queue whose key `admit`s it now, or None (nothing ready, or closed).

        A ready queue whose key is not admitted is parked (see the module docstring).
        """
        if self._closed:
            return None
        tick = self._ticks()
        while self._ready and self._ready[0][0] <= tick:
            ready, _, key = heapq.heappop(self._ready)
            queue = self._queues[key]
            if ready != queue.heap_time:
                continue  # a stale entry: the queue was rescheduled earlier
            queue.heap_time = math.inf
            if not queue.items or not queue.slots:
                continue
            if queue.slots[0] > tick:
                self._schedule(key, queue)
                continue
            if not admit(key):
                queue.parked = True
                continue
            slot_time = heapq.heappop(queue.slots)
            item = queue.items.popleft()
            queue.in_flight += 1
            self._pending -= 1
            self._in_flight += 1
            self._schedule(key, queue)
            return Lease(key, item, slot_time)
        return None

    def next_ready(self) -> float | None:
        """When the earliest queue in the heap may hand out an item (None: none is waiting for a slot).

        May be early (a stale entry): `take` then finds nothing and the caller asks again.
        """
        return self._ready[0][0] if self._ready and not self._closed else None

    def release(self, lease: Lease[T], ended: float | None = None, pause: float = 0.0) -> None:
        """Give back the slot of `lease`.

        `ended`: the monotonic time the request ended; the slot frees `delay`
        seconds later. None: no request was made; the slot frees at its old
        time, or `pause` seconds from now if later.
        """
        queue = self._queues[lease.key]
        queue.in_flight -= 1
        self._in_flight -= 1
        no_request = max(lease.slot_time, self._ticks() + pause)
        freed = no_request if ended is None else ended + queue.delay
        heapq.heappush(queue.slots, max(freed, queue.hold_until))
        self._schedule(lease.key, queue)

    # ------------------------------------------------------------ status --

    @property
    def pending(self) -> int:
        """Items waiting in all queues."""
        return self._pending

    @property
    def in_flight(self) -> int:
        """Items taken and not yet released."""
        return self._in_flight

    @property
    def closed(self) -> bool:
        """`close` was called: nothing more is handed out."""
        return self._closed

    @property
    def finished(self) -> bool:
        """Nothing waiting and nothing in flight."""
        return self._pending == 0 and self._in_flight == 0

    def has_waiting(self, key: Hashable) -> bool:
        """Does a queue hold items not yet taken?"""
        queue = self._queues.get(key)
        return queue is not None and bool(queue.items)

    def waiting(self, key: Hashable) -> int:
        """Items of one queue waiting or in flight."""
        queue = self._queues.get(key)
        return 0 if queue is None else len(queue.items) + queue.in_flight

    def active_queues(self) -> int:
        """Queues with items waiting or in flight (costs one pass over the queues)."""
        return sum(1 for q in self._queues.values() if q.items or q.in_flight)
