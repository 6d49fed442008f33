"""Politeness as state: the last request to each queue key, kept on the `host` table.

A politeness key is what one fetch queue stands for (the host, or its IP
with `queue_by = "ip"`); its row (`~host:NAME`, `~ip:ADDRESS`, after every
origin row) holds the end of its last request (`n:lr`), a Retry-After pause
(`n:nb`), the extra delay 429/503 answers raised (`n:sd`) and a running
fetch's reservation (`n:rv`: it may have a request in flight until then).
Every job that fetches reads these rows before its first request and writes
them back as it goes, so the delay holds across rounds, processes, restarts
and workers; a reservation not released (a run killed) is waited out like a
request that ended then. A 429 or 503 slows the key down (`slowed`), other
answers bring it back (`recovered`), within `max_crawl_delay`. When fetch and
detect write, and what a stop or a SIGKILL leaves: docs/politeness.md,
docs/reliability.md.

Cost: one small put per key per write of a batch of them (fetch writes a few
batches a second, detect one per origin).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import socket
import threading
from collections.abc import AsyncIterator, Hashable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime

from sitemapcrawl.clock import precise_now
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
#: The longest pause a Retry-After is taken to ask for (a year): a larger number is read as this.
MAX_RETRY_AFTER = 365 * 24 * 3600
#: Answers that ask us to slow down.
SLOW_DOWN_CODES = frozenset({429, 503})
#: The extra delay a first slow-down answer sets, at least (seconds).
MIN_SLOW_DELAY = 1.0
#: What each answer that is not a slow-down keeps of the extra delay.
RECOVERY = 0.75
_STATE_FIELDS = ["last_request", "not_before", "slow_delay", "reserved_until"]


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
    reserved_until: datetime | None = None
    """A run may have a request in flight until then (None: no reservation)."""

    @property
    def latest_end(self) -> datetime | None:
        """The latest a request to this key may have ended: its last request, or a reservation still held."""
        if self.reserved_until is None:
            return self.last_request
        if self.last_request is None:
            return self.reserved_until
        return max(self.last_request, self.reserved_until)

    def wait(self, delay: float, now: datetime) -> float:
        """Seconds from `now` before the next request may start, with `delay` the key's normal delay."""
        ready = 0.0
        latest = self.latest_end
        if latest is not None:
            ready = (latest - now).total_seconds() + max(delay, self.slow_delay)
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
        states[key] = KeyState(row.last_request, row.not_before, row.slow_delay or 0.0, row.reserved_until)
    return states


def state_rows(states: Mapping[Hashable, KeyState], by: QueueBy) -> list[tuple[bytes, dict[bytes, bytes]]]:
    """The puts that record these states (no round trip)."""
    puts = []
    for key, state in states.items():
        row = HostRow(str(key), last_request=state.last_request, not_before=state.not_before,
                      slow_delay=state.slow_delay, reserved_until=state.reserved_until)
        puts.append((state_key(key, by), encode(row)))
    return puts


def retry_after_seconds(value: str | None, now: datetime) -> float | None:
    """Seconds a `Retry-After` header asks for (delta-seconds or an HTTP date), at most `MAX_RETRY_AFTER`;
    None if absent or unreadable. A server's number is bounded here, where it enters."""
    if not value:
        return None
    text = value.strip()
    if text.isascii() and text.isdigit():
        return float(min(int(text[:12]), MAX_RETRY_AFTER)) if len(text) <= 12 else float(MAX_RETRY_AFTER)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return min(max(0.0, (when - now).total_seconds()), float(MAX_RETRY_AFTER))


def slowed(slow_delay: float, delay: float, cap: float) -> float:
    """The extra delay after a 429/503: double the current one (at least `MIN_SLOW_DELAY`), up to `cap`."""
    return min(cap, max(MIN_SLOW_DELAY, 2 * max(slow_delay, delay)))


def recovered(slow_delay: float, delay: float) -> float:
    """The extra delay after another answer: a quarter less, 0 once it is back at the normal `delay`."""
    left = slow_delay * RECOVERY
    return left if left > delay else 0.0


def request_end() -> datetime:
    """The real time rounded up to the next millisecond: the stored end of a request is never early."""
    moment = precise_now()
    return moment + timedelta(microseconds=(1000 - moment.microsecond % 1000) % 1000)


class KeyGate:
    """One request at a time per politeness key, each waiting out the key's stored delay (for detect).

    For one event loop. `states` is what `load_states` read; `turn` waits as
    long as needed, then records the end of the work it wraps. After `stop`
    (called on the loop) no turn starts: one waiting wakes and is refused.
    No I/O of its own.
    """

    def __init__(self, states: Mapping[Hashable, KeyState]) -> None:
        self._states = dict(states)
        self._locks: dict[Hashable, asyncio.Lock] = {}
        self._taken: set[Hashable] = set()
        self._stopped = asyncio.Event()

    @contextlib.asynccontextmanager
    async def turn(self, key: Hashable, delay: float) -> AsyncIterator[bool]:
        """Wait for `key`'s turn (its last request plus `delay`, or its Retry-After), then run the block.

        The block gets True; False once the gate is stopped: it must make no
        request then (and nothing is recorded).
        """
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            state = self._states.get(key, KeyState())
            pause = state.wait(delay, precise_now())
            if pause > 0 and not self._stopped.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopped.wait(), pause)
            if self._stopped.is_set():
                yield False
                return
            try:
                yield True
            finally:
                self._states[key] = dataclasses.replace(self._states.get(key, state), last_request=request_end())
                self._taken.add(key)

    def learn(self, states: Mapping[Hashable, KeyState]) -> None:
        """Stored states of more keys (keys this gate already knows keep what it knows)."""
        for key, state in states.items():
            self._states.setdefault(key, state)

    def stop(self) -> None:
        """No turn starts from now on (call on the gate's loop)."""
        self._stopped.set()

    def state(self, key: Hashable) -> KeyState:
        """The key's state as this gate knows it."""
        return self._states.get(key, KeyState())

    def taken(self) -> dict[Hashable, KeyState]:
        """The state of every key that had a turn (what a stopped job still has to write)."""
        return {key: self._states[key] for key in list(self._taken)}


def host_of_origin(origin: str) -> str | None:
    """The host key of an origin, or None when it has none."""
    try:
        return urls.host_key(origin + "/")
    except InvalidUrlError:
        return None
