"""The delays of a fetch run's queues, and the politeness state they leave behind.

Each queue key's delay is the largest of the setting (`delay`), its
robots.txt Crawl-delay (within `max_crawl_delay`) and the extra delay 429
and 503 answers raised (`storage.politeness`); a Retry-After holds the whole
queue. Each request's end is noted with a version per key, and the writer
puts the keys whose version it has not written yet (`snapshot`), so an
interrupted write is simply redone. Requests in flight are counted (`begin`,
`answered`): `stop` lets none start, and `settle` counts each one still
running as ending at the latest it can, so a run that stops leaves nothing
unrecorded. For a key with a delay, `begin` first has the writer `reserve`
the key in HBase (a refusal makes it say False). Thread-safe; no I/O.

Cost: none of its own; the writer's two one-row puts per request of a key with a delay.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable, Mapping
from datetime import datetime, timedelta
from typing import Any

from sitemapcrawl.fetcher.queues import FetchQueues
from sitemapcrawl.storage.politeness import (
    SLOW_DOWN_CODES,
    KeyState,
    recovered,
    request_end,
    retry_after_seconds,
    slowed,
    wall_now,
)


class Pacing:
    """Per-queue delays, slow-downs and pauses over a `FetchQueues` (see the module docstring)."""

    def __init__(self, queues: FetchQueues[Any], delay: float, cap: float,
                 states: Mapping[Hashable, KeyState]) -> None:
        self._queues = queues
        self._delay = delay
        self._cap = cap
        self._lock = threading.Lock()
        self._base: dict[Hashable, float] = {}
        self._states: dict[Hashable, KeyState] = dict(states)
        self._versions: dict[Hashable, int] = {}
        """Key -> how many times its state changed in this run (only keys that made requests)."""
        self._in_flight: dict[Hashable, list[datetime]] = {}
        """Key -> the latest end of each of its requests in flight, oldest request first."""
        self._idle = threading.Condition(self._lock)
        self._stopped = False
        self.reserve: Callable[[Hashable], bool] = lambda key: True
        """Records a key's state (see `snapshot`) before its request starts; False: it could not."""

    def start(self, known_delays: Mapping[Hashable, float]) -> None:
        """Before the first request: each queue waits out what its stored state and delays still ask."""
        now, clock = wall_now(), time.monotonic()
        for key, crawl_delay in known_delays.items():
            self.raise_delay(key, crawl_delay)
        with self._lock:
            keys = list(self._states)
        for key in keys:
            state = self._states[key]
            self._apply(key)
            wait = state.wait(self.base_delay(key), now)
            if wait > 0:
                self._queues.hold(key, clock + wait)

    def base_delay(self, key: Hashable) -> float:
        """The key's delay before any slow-down: the setting or its Crawl-delay."""
        with self._lock:
            return self._base.get(key, self._delay)

    def raise_delay(self, key: Hashable, crawl_delay: float) -> None:
        """A robots.txt Crawl-delay (within the cap) for this key: its delay is at least that."""
        with self._lock:
            if crawl_delay > self._base.get(key, self._delay):
                self._base[key] = crawl_delay
        self._apply(key)

    def _apply(self, key: Hashable) -> None:
        with self._lock:
            delay = max(self._base.get(key, self._delay), self._states.get(key, KeyState()).slow_delay)
        self._queues.set_delay(key, delay)

    def begin(self, key: Hashable, longest: float) -> bool:
        """A request of this key that may take up to `longest` seconds starts now; False after `stop`: make none.

        Call right before the request, and `answered` after it.
        """
        with self._lock:
            if self._stopped:
                return False
            latest = wall_now() + timedelta(seconds=longest)
            self._in_flight.setdefault(key, []).append(latest)
            self._versions[key] = self._versions.get(key, 0) + 1
            paced = self._paced(key)
        if not paced or self.reserve(key):
            return True
        with self._lock:  # not recorded: the request is not made
            ends = self._in_flight.get(key, [])
            if latest in ends:
                ends.remove(latest)
            if not ends:
                self._in_flight.pop(key, None)
                self._idle.notify_all()
        return False

    def answered(self, key: Hashable, code: int | None, retry_after: str | None) -> None:
        """A request of this key ended (call before releasing its slot): note it, slow down or recover."""
        now, clock = request_end(), time.monotonic()
        base = self.base_delay(key)
        pause = 0.0
        with self._lock:
            ends = self._in_flight.get(key)
            if ends:
                ends.pop(0)  # the oldest: the latest ends kept can only be later than the true ones
                if not ends:
                    del self._in_flight[key]
                    self._idle.notify_all()
            state = self._states.get(key, KeyState())
            slow, not_before = state.slow_delay, state.not_before
            if code in SLOW_DOWN_CODES:
                slow = slowed(slow, base, self._cap)
                asked = retry_after_seconds(retry_after, now)
                if asked:
                    pause = min(asked, self._cap)
                    not_before = now + timedelta(seconds=pause)
            elif code is not None and slow:
                slow = recovered(slow, base)
            # Never back: a stored end may be the latest end of a request another run abandoned.
            last = now if state.last_request is None else max(now, state.last_request)
            self._states[key] = KeyState(last, not_before, slow)
            self._versions[key] = self._versions.get(key, 0) + 1
            paced = self._paced(key)
        if paced:
            self.reserve(key)  # the true end, at once (a refusal stops the next `begin`)
        self._apply(key)
        if pause > 0:
            self._queues.hold(key, clock + pause)

    def paced(self, key: Hashable) -> bool:
        """Does the key wait between requests? Then its state and outcomes are written at once."""
        with self._lock:
            return self._paced(key)

    def _paced(self, key: Hashable) -> bool:
        """Does the key wait between requests (so its state must be in HBase before each one)? Under the lock."""
        state = self._states.get(key, KeyState())
        return self._base.get(key, self._delay) > 0 or state.slow_delay > 0 or state.not_before is not None

    def stop(self) -> None:
        """No request starts from now on: `begin` says False."""
        with self._lock:
            self._stopped = True

    def settle(self, grace: float) -> int:
        """Wait up to `grace` seconds for the requests in flight to end; return how many did not.

        Each one still running counts as ending at the latest it can, so the
        state written next covers it (call after `stop`). A KeyboardInterrupt
        ends the wait early and still records them.
        """
        give_up = time.monotonic() + grace
        with self._lock:
            try:
                while self._in_flight and (left := give_up - time.monotonic()) > 0:
                    self._idle.wait(left)
            finally:
                for key, ends in self._in_flight.items():
                    state = self._states.get(key, KeyState())
                    latest = max(ends)
                    if state.last_request is None or latest > state.last_request:
                        self._states[key] = KeyState(latest, state.not_before, state.slow_delay)
                        self._versions[key] = self._versions.get(key, 0) + 1
            return sum(len(ends) for ends in self._in_flight.values())

    def snapshot(self) -> dict[Hashable, tuple[int, KeyState]]:
        """Key -> (version, state) for every key this run made requests to (for the writer).

        A request in flight counts as ending at its deadline (what a kill
        leaves behind must cover it); once it ends, the true end is given.
        """
        with self._lock:
            return {key: (version, self._recorded(key)) for key, version in self._versions.items()}

    def _recorded(self, key: Hashable) -> KeyState:
        state = self._states.get(key, KeyState())
        ends = self._in_flight.get(key)
        if ends and (state.last_request is None or max(ends) > state.last_request):
            return KeyState(max(ends), state.not_before, state.slow_delay)
        return state

    def state(self, key: Hashable) -> KeyState:
        """What this run knows of a key."""
        with self._lock:
            return self._states.get(key, KeyState())
