"""The delays of a fetch run's queues, their reservations, and the politeness state they leave behind.

Each queue key's delay is the largest of the setting (`delay`), its
robots.txt Crawl-delay (within `max_crawl_delay`) and the extra delay 429
and 503 answers raised (`storage.politeness`); a Retry-After holds the whole
queue. A key that waits between requests (*paced*) starts a request only
inside a *window* whose reservation is in HBase: the stored
`reserved_until` (the window's end plus a request's deadline) tells any
other run, and a rerun after a SIGKILL, how long a request of this run may
still be in flight. Reservations and states are not written per request: a
key whose state changed is *dirty*, and the writer takes every dirty key a
few times a second (`take_dirty`), then `confirm`s the windows it wrote; a
key whose window has run out is parked in the queues until then. Each
request's end renews its key's window, so a key keeps going without waiting
for a write; a key with nothing left releases its reservation.

Not thread-safe: the fetch engine's loop is its only user. Cost: O(1) per
request and per key written; no I/O.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sitemapcrawl.clock import precise_now
from sitemapcrawl.fetcher.queues import FetchQueues
from sitemapcrawl.storage.politeness import (
    SLOW_DOWN_CODES,
    KeyState,
    recovered,
    request_end,
    retry_after_seconds,
    slowed,
)

#: Seconds a reservation lets a key start requests before it must be renewed (each request's end renews it).
WINDOW = 5.0


@dataclass(frozen=True)
class StateWrite:
    """One key's state to write, with the reservation window it carries (None: none, or released)."""

    key: Hashable
    state: KeyState
    window_until: float | None
    """The monotonic time (`time.monotonic`) until which the written reservation lets requests start."""


@dataclass
class _Key:
    base: float
    state: KeyState = field(default_factory=KeyState)
    in_flight: list[datetime] = field(default_factory=list)
    """The latest end of each of its requests in flight, oldest request first."""
    window_until: float = 0.0
    """Confirmed: requests may start until this monotonic time."""
    dirty: bool = False
    parked: bool = False
    released: bool = False
    touched: bool = False
    """A request of this run started (its state must be written at the end)."""


class Pacing:
    """Per-key delays, slow-downs, pauses and reservations over a `FetchQueues` (see the module docstring)."""

    def __init__(self, queues: FetchQueues[Any], delay: float, cap: float, states: Mapping[Hashable, KeyState],
                 deadline: float, ticks: Callable[[], float] = time.monotonic) -> None:
        self._queues = queues
        self._delay = delay
        self._cap = cap
        self._deadline = deadline
        self._ticks = ticks
        self._keys: dict[Hashable, _Key] = {}
        for key, state in states.items():
            self._key(key).state = state
        self._dirty: list[Hashable] = []
        self._stopped = False
        self.asking = False
        """A key is parked for a reservation: the writer should write at once."""

    def _key(self, key: Hashable) -> _Key:
        found = self._keys.get(key)
        if found is None:
            found = self._keys[key] = _Key(self._delay)
        return found

    def start(self, known_delays: Mapping[Hashable, float]) -> None:
        """Before the first request: each queue waits out what its stored state and delays still ask."""
        now, tick = precise_now(), self._ticks()
        for key, crawl_delay in known_delays.items():
            self.raise_delay(key, crawl_delay)
        for key, entry in self._keys.items():
            self._apply(key, entry)
            wait = entry.state.wait(entry.base, now)
            if wait > 0:
                self._queues.hold(key, tick + wait)

    def base_delay(self, key: Hashable) -> float:
        """The key's delay before any slow-down: the setting or its Crawl-delay."""
        entry = self._keys.get(key)
        return self._delay if entry is None else entry.base

    def raise_delay(self, key: Hashable, crawl_delay: float) -> None:
        """A robots.txt Crawl-delay (within the cap) for this key: its delay is at least that."""
        entry = self._key(key)
        if crawl_delay > entry.base:
            entry.base = crawl_delay
        self._apply(key, entry)

    def _apply(self, key: Hashable, entry: _Key) -> None:
        self._queues.set_delay(key, max(entry.base, entry.state.slow_delay))

    def paced(self, key: Hashable) -> bool:
        """Does the key wait between requests? Then a request needs a reservation first."""
        entry = self._keys.get(key)
        return self._delay > 0 if entry is None else self._paced(entry)

    @staticmethod
    def _paced(entry: _Key) -> bool:
        return entry.base > 0 or entry.state.slow_delay > 0 or entry.state.not_before is not None

    def admit(self, key: Hashable) -> bool:
        """May a request of this key start now? A paced key needs a confirmed window; without one it asks
        for a reservation (the key is dirty) and says no (the queues park it until `confirm`)."""
        if self._stopped:
            return False
        entry = self._key(key)
        if not self._paced(entry) or self._ticks() < entry.window_until:
            return True
        entry.parked = self.asking = True
        self._mark(key, entry)
        return False

    def begin(self, key: Hashable, longest: float) -> bool:
        """A request of this key that may take up to `longest` seconds starts now; False after `stop`: make none.

        Call right before the request, and `answered` after it.
        """
        if self._stopped:
            return False
        entry = self._key(key)
        entry.in_flight.append(precise_now() + timedelta(seconds=longest))
        entry.touched = True
        if longest > self._deadline:
            # Longer than the reservation allows for (robots.txt with its redirects): the next write covers it.
            self._mark(key, entry)
        return True

    def answered(self, key: Hashable, code: int | None, retry_after: str | None) -> float:
        """A request of this key ended: note it, slow down or recover; return the pause a Retry-After asks
        (the caller holds the queue that long)."""
        now = request_end()
        entry = self._key(key)
        if entry.in_flight:
            entry.in_flight.pop(0)  # the oldest: the latest ends kept can only be later than the true ones
        state = entry.state
        slow, not_before, pause = state.slow_delay, state.not_before, 0.0
        if code in SLOW_DOWN_CODES:
            slow = slowed(slow, entry.base, self._cap)
            asked = retry_after_seconds(retry_after, now)
            if asked:
                pause = min(asked, self._cap)
                not_before = now + timedelta(seconds=pause)
        elif code is not None and slow:
            slow = recovered(slow, entry.base)
        # Never back: a stored end may be the latest end of a request another run abandoned.
        last = now if state.last_request is None else max(now, state.last_request)
        entry.state = dataclasses.replace(state, last_request=last, not_before=not_before, slow_delay=slow)
        entry.released = False
        self._apply(key, entry)
        self._mark(key, entry)
        return pause

    def idle(self, key: Hashable) -> None:
        """The key has nothing left to fetch in this run: its reservation is released with the next write."""
        entry = self._keys.get(key)
        if entry is not None and entry.touched and not entry.in_flight and not entry.released:
            entry.released = True
            self._mark(key, entry)

    def _mark(self, key: Hashable, entry: _Key) -> None:
        if not entry.dirty:
            entry.dirty = True
            self._dirty.append(key)

    def take_dirty(self) -> list[StateWrite]:
        """The state of every dirty key, reservations renewed (or released), for the writer. O(dirty)."""
        now, tick = precise_now(), self._ticks()
        writes = []
        for key in self._dirty:
            entry = self._keys[key]
            entry.dirty = False
            latest = max(entry.in_flight) if entry.in_flight else None
            if entry.released or self._stopped or not self._paced(entry):
                reserved = _latest(entry.state.last_request, latest)
                writes.append(StateWrite(key, dataclasses.replace(entry.state, reserved_until=reserved), None))
                continue
            window = now + timedelta(seconds=WINDOW)
            reserved = _latest(window + timedelta(seconds=self._deadline), latest)
            writes.append(StateWrite(key, dataclasses.replace(entry.state, reserved_until=reserved), tick + WINDOW))
        self._dirty = []
        self.asking = False
        return writes

    def confirm(self, written: list[StateWrite]) -> list[Hashable]:
        """These writes are in HBase: their windows hold. Returns the keys parked for one, now free to go."""
        freed = []
        for write in written:
            if write.window_until is None:
                continue
            entry = self._keys[write.key]
            entry.window_until = max(entry.window_until, write.window_until)
            if entry.parked:
                entry.parked = False
                freed.append(write.key)
        return freed

    def stop(self) -> None:
        """No request starts from now on: `admit` and `begin` say False."""
        self._stopped = True

    def final_states(self) -> dict[Hashable, KeyState]:
        """What the run leaves for every key it made requests to: a request still in flight counts as
        ending at its latest, and the reservation is released to the latest end."""
        states = {}
        for key, entry in self._keys.items():
            if not entry.touched:
                continue
            latest = _latest(entry.state.last_request, max(entry.in_flight) if entry.in_flight else None)
            states[key] = dataclasses.replace(entry.state, last_request=latest, reserved_until=latest)
        return states

    def in_flight(self) -> int:
        """Requests begun and not answered (costs one pass over the keys)."""
        return sum(len(entry.in_flight) for entry in self._keys.values())

    def state(self, key: Hashable) -> KeyState:
        """What this run knows of a key."""
        entry = self._keys.get(key)
        return KeyState() if entry is None else entry.state


def _latest(a: datetime | None, b: datetime | None) -> datetime | None:
    if a is None:
        return b
    return a if b is None else max(a, b)
