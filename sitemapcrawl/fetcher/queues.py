"""Politeness queues for the fetcher: one FIFO per key (host or IP), shared by worker threads.

The design of Nutch's fetcher queues: a worker `take`s an item only from a
queue that is *ready*, with a free slot (fewer than `slots_per_queue` items
in flight) whose time has come. A slot the worker `release`s frees `delay`
seconds after the end of its request (or at once, at its old time, when no
request was made: a robots.txt denial, a deferral), so no two requests of
one queue are closer than the delay, end to start; with more than one slot,
each slot keeps the delay on its own. `hold` (a server's Retry-After) keeps
every slot of a queue shut until a time, taken or not.

Cost: `take` is O(log queues) through a heap keyed by when the next slot
frees, however many hosts. No I/O; thread-safe; `clock` is injectable for tests.
"""

from __future__ import annotations

import heapq
import itertools
import math
import threading
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


class FetchQueues(Generic[T]):
    """Queues per key with per-queue slots and delays (see the module docstring)."""

    def __init__(self, delay: float, slots_per_queue: int = 1,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if slots_per_queue < 1 or delay < 0:
            raise ValueError("FetchQueues needs slots_per_queue >= 1 and delay >= 0")
        self._delay = delay
        self._slots = slots_per_queue
        self._clock = clock
        self._cond = threading.Condition()
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
        """Put the queue in the ready heap if it has work and a free slot (caller holds the lock)."""
        if queue.items and queue.slots:
            ready = queue.slots[0]
            if ready < queue.heap_time:
                queue.heap_time = ready
                heapq.heappush(self._ready, (ready, next(self._seq), key))
                self._cond.notify()

    def add(self, key: Hashable, item: T, front: bool = False) -> None:
        """Queue `item` under `key` (at the head with `front`, e.g. a redirect hop)."""
        with self._cond:
            queue = self._queue(key)
            if front:
                queue.items.appendleft(item)
            else:
                queue.items.append(item)
            self._pending += 1
            self._schedule(key, queue)

    def set_delay(self, key: Hashable, delay: float) -> None:
        """Use `delay` for this queue from its next release on (a robots.txt Crawl-delay)."""
        with self._cond:
            self._queue(key).delay = delay

    def hold(self, key: Hashable, until: float) -> None:
        """No request of this queue starts before `until` (clock time), in flight or not (Retry-After)."""
        with self._cond:
            queue = self._queue(key)
            queue.hold_until = max(queue.hold_until, until)
            queue.slots = [max(slot, until) for slot in queue.slots]
            heapq.heapify(queue.slots)
            self._schedule(key, queue)

    def delay(self, key: Hashable) -> float:
        """The delay of a queue (the default one for a queue never seen)."""
        with self._cond:
            queue = self._queues.get(key)
            return self._delay if queue is None else queue.delay

    def remove(self, key: Hashable, predicate: Callable[[T], bool]) -> list[T]:
        """Take out and return the waiting items of `key` that match (not those in flight)."""
        with self._cond:
            queue = self._queues.get(key)
            if queue is None:
                return []
            kept: deque[T] = deque()
            removed: list[T] = []
            for item in queue.items:
                (removed if predicate(item) else kept).append(item)
            queue.items = kept
            self._pending -= len(removed)
            self._cond.notify_all()
            return removed

    def close(self) -> None:
        """Hand out nothing more; waiting `take`s return None. Items in flight may still be released."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    # ----------------------------------------------------------- working --

    def take(self, timeout: float) -> Lease[T] | None:
        """The next item of a ready queue, waiting up to `timeout` seconds.

        None when the time ran out, when the queues are closed, or when they
        are finished (nothing waiting and nothing in flight).
        """
        deadline = self._clock() + timeout
        with self._cond:
            while True:
                if self._closed or (self._pending == 0 and self._in_flight == 0):
                    return None
                now = self._clock()
                if not self._ready or self._ready[0][0] > now:
                    if now >= deadline:
                        return None
                    wake = deadline if not self._ready else min(deadline, self._ready[0][0])
                    self._cond.wait(max(0.0, wake - now))
                    continue
                ready, _, key = heapq.heappop(self._ready)
                queue = self._queues[key]
                if ready != queue.heap_time:
                    continue  # a stale entry: the queue was rescheduled earlier
                queue.heap_time = math.inf
                if not queue.items or not queue.slots:
                    continue
                if queue.slots[0] > now:
                    self._schedule(key, queue)
                    continue
                slot_time = heapq.heappop(queue.slots)
                item = queue.items.popleft()
                queue.in_flight += 1
                self._pending -= 1
                self._in_flight += 1
                self._schedule(key, queue)
                return Lease(key, item, slot_time)

    def release(self, lease: Lease[T], ended: float | None = None, pause: float = 0.0) -> None:
        """Give back the slot of `lease`.

        `ended`: the clock time the request ended; the slot frees `delay`
        seconds later. None: no request was made; the slot frees at its old
        time, or `pause` seconds from now if later.
        """
        with self._cond:
            queue = self._queues[lease.key]
            queue.in_flight -= 1
            self._in_flight -= 1
            no_request = max(lease.slot_time, self._clock() + pause)
            freed = no_request if ended is None else ended + queue.delay
            heapq.heappush(queue.slots, max(freed, queue.hold_until))
            self._schedule(lease.key, queue)
            self._cond.notify_all()

    # ------------------------------------------------------------ status --

    @property
    def pending(self) -> int:
        """Items waiting in all queues."""
        with self._cond:
            return self._pending

    @property
    def in_flight(self) -> int:
        """Items taken and not yet released."""
        with self._cond:
            return self._in_flight

    @property
    def closed(self) -> bool:
        """`close` was called: nothing more is handed out."""
        with self._cond:
            return self._closed

    @property
    def finished(self) -> bool:
        """Nothing waiting and nothing in flight."""
        with self._cond:
            return self._pending == 0 and self._in_flight == 0

    def active_queues(self) -> int:
        """Queues with items waiting or in flight (costs one pass over the queues)."""
        with self._cond:
            return sum(1 for q in self._queues.values() if q.items or q.in_flight)
