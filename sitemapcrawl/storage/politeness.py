"""Politeness as state: the last request to each queue key, kept on the `host` table.

A politeness key is what one fetch queue stands for (the host, or its IP
with `queue_by = "ip"`); its row (`~host:NAME`, `~ip:ADDRESS`, after every
origin row) holds the end of its last request (`n:lr`), a Retry-After pause
(`n:nb`) and the extra delay 429/503 answers raised (`n:sd`). Every job that
fetches reads these rows before its first request and writes them back as
it goes, so the delay holds across rounds, processes, restarts and workers;
a 429 or 503 slows the key down (`slowed`), other answers bring it back
(`recovered`), within `max_crawl_delay`. When fetch and detect write, and
what a stop or a SIGKILL leaves: docs/politeness.md, docs/reliability.md.

Cost: one small put per active key per write (at most one a second), and
two per request of a key with a delay.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Hashable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime

from sitemapcrawl.errors import CellDecodeError, InvalidUrlError
from sitemapcrawl.model.cells import column_names, decode, encode
from sitemapcrawl.model.webpage import HOST_TABLE, HostRow
from sitemapcrawl.modes import QueueBy
from sitemapcrawl.storage.store import Store
from sitemapcrawl.web import urls

__all__ = ["KeyGate", "KeyState", "QueueBy", "Resolver", "load_states", "queue_key", "retry_after_seconds",
           "state_key", "state_rows"]

log = logging.getLogger(__name__)

#: Every politeness row key starts with this; origin rows sort before it.
POLITENESS_KEYS_START = b"~"
#: Answers that ask us to slow down.
SLOW_DOWN_CODES = frozenset({429, 503})
#: The extra delay a first slow-down answer sets, at least (seconds).
MIN_SLOW_DELAY = 1.0
#: What each answer that is not a slow-down keeps of the extra delay.
RECOVERY = 0.75
_STATE_FIELDS = ["last_request", "not_before", "slow_delay"]


class Resolver:
    """Host name -> IP address, cached (for `queue_by = ip`); the name itself when unresolvable."""

    def __init__(self) -> None:
        self._cache: dict[str, str] = {}
        self._lock = threading.Lock()

    def __call__(self, host: str) -> str:
        with self._lock:
            known = self._cache.get(host)
        if known is not None:
            return known
        try:
            address = str(socket.getaddrinfo(host.strip("[]"), None)[0][4][0])
        except (OSError, UnicodeError):
            address = host
        with self._lock:
            self._cache[host] = address
        return address


def queue_key(host: str, by: QueueBy, resolve: Resolver) -> str:
    """The politeness key of a host (see the module docstring)."""
    return resolve(host) if by is QueueBy.IP else host


def state_key(key: Hashable, by: QueueBy) -> bytes:
    """The `host` table row key of a politeness key: `~host:NAME` or `~ip:ADDRESS`."""
    return POLITENESS_KEYS_START + f"{by.value}:{key}".encode()


@dataclass(frozen=True)
class KeyState:
    """What the table says about one politeness key (None: nothing known)."""

    last_request: datetime | None = None
    not_before: datetime | None = None
    slow_delay: float = 0.0

    def wait(self, delay: float, now: datetime) -> float:
        """Seconds from `now` before the next request may start, with `delay` the key's normal delay."""
        ready = 0.0
        if self.last_request is not None:
            ready = (self.last_request - now).total_seconds() + max(delay, self.slow_delay)
        if self.not_before is not None:
            ready = max(ready, (self.not_before - now).total_seconds())
        return max(0.0, ready)


def load_states(store: Store, keys: Iterable[Hashable], by: QueueBy) -> dict[Hashable, KeyState]:
    """The stored state of each key (keys never seen are left out). One multi-get round trip.

    An unreadable row is logged and treated as unknown.
    """
    wanted = {state_key(key, by): key for key in keys}
    if not wanted:
        return {}
    found = store.rows(HOST_TABLE, list(wanted), columns=column_names(HostRow, _STATE_FIELDS))
    states: dict[Hashable, KeyState] = {}
    for raw, cells in found.items():
        key = wanted[raw]
        try:
            row = decode(HostRow, str(key), cells)
        except CellDecodeError as exc:
            log.warning("politeness: state of %s unreadable (%s); treated as unknown", key, exc)
            continue
        states[key] = KeyState(row.last_request, row.not_before, row.slow_delay or 0.0)
    return states


def state_rows(states: Mapping[Hashable, KeyState], by: QueueBy) -> list[tuple[bytes, dict[bytes, bytes]]]:
    """The puts that record these states (no round trip)."""
    puts = []
    for key, state in states.items():
        row = HostRow(str(key), last_request=state.last_request, not_before=state.not_before,
                      slow_delay=state.slow_delay)
        puts.append((state_key(key, by), encode(row)))
    return puts


def retry_after_seconds(value: str | None, now: datetime) -> float | None:
    """Seconds a `Retry-After` header asks for (delta-seconds or an HTTP date); None if absent or unreadable."""
    if not value:
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - now).total_seconds())


def slowed(slow_delay: float, delay: float, cap: float) -> float:
    """The extra delay after a 429/503: double the current one (at least `MIN_SLOW_DELAY`), up to `cap`."""
    return min(cap, max(MIN_SLOW_DELAY, 2 * max(slow_delay, delay)))


def recovered(slow_delay: float, delay: float) -> float:
    """The extra delay after another answer: a quarter less, 0 once it is back at the normal `delay`."""
    left = slow_delay * RECOVERY
    return left if left > delay else 0.0


def wall_now() -> datetime:
    """The real time, to the microsecond (politeness compares it across processes)."""
    return datetime.now(UTC)


def request_end() -> datetime:
    """The real time rounded up to the next millisecond: the stored end of a request is never early."""
    moment = datetime.now(UTC)
    return moment + timedelta(microseconds=(1000 - moment.microsecond % 1000) % 1000)


class KeyGate:
    """One request at a time per politeness key, each waiting out the key's stored delay (for detect).

    Thread-safe. `states` is what `load_states` read; `turn` sleeps as long
    as needed, then records the end of the work it wraps. After `stop` no
    turn starts (one waiting wakes and is refused), and `wait_idle` waits for
    those under way. No I/O of its own.
    """

    def __init__(self, states: Mapping[Hashable, KeyState]) -> None:
        self._states = dict(states)
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._running = 0
        """Turns whose block runs now (their request may be in flight)."""
        self._locks: dict[Hashable, threading.Lock] = {}
        self._taken: set[Hashable] = set()
        self._stopped = threading.Event()

    @contextmanager
    def turn(self, key: Hashable, delay: float) -> Iterator[bool]:
        """Wait for `key`'s turn (its last request plus `delay`, or its Retry-After), then run the block.

        The block gets True; False once the gate is stopped: it must make no
        request then (and nothing is recorded).
        """
        with self._lock:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            with self._lock:
                state = self._states.get(key, KeyState())
            pause = state.wait(delay, wall_now())
            if pause > 0:
                self._stopped.wait(pause)
            with self._lock:  # refused, or counted as running before `stop` can return
                go = not self._stopped.is_set()
                if go:
                    self._running += 1
            if not go:
                yield False
                return
            try:
                yield True
            finally:
                with self._lock:
                    self._states[key] = KeyState(request_end(), state.not_before, state.slow_delay)
                    self._taken.add(key)
                    self._running -= 1
                    self._idle.notify_all()

    def stop(self) -> None:
        """No turn starts from now on."""
        with self._lock:
            self._stopped.set()

    def wait_idle(self) -> None:
        """After `stop`: wait until no turn runs, so `taken` covers every request made.

        A Condition wait, not a thread join: in CPython 3.11 a Ctrl-C inside
        `Thread.join` marks the live thread as ended (bpo-45274's handler),
        so a second wait would not wait. A KeyboardInterrupt here leaves the
        gate as it was: call again to go on waiting.
        """
        with self._idle:
            while self._running:
                self._idle.wait()

    def state(self, key: Hashable) -> KeyState:
        """The key's state as this gate knows it."""
        with self._lock:
            return self._states.get(key, KeyState())

    def taken(self) -> dict[Hashable, KeyState]:
        """The state of every key that had a turn (what a stopped job still has to write)."""
        with self._lock:
            return {key: self._states[key] for key in self._taken}


def host_of_origin(origin: str) -> str | None:
    """The host key of an origin, or None when it has none."""
    try:
        return urls.host_key(origin + "/")
    except InvalidUrlError:
        return None
