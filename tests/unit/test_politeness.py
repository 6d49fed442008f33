"""Politeness state: Retry-After, slow-down and recovery, the wait a stored state asks, the pacing of queues."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta

import pytest

from sitemapcrawl.fetcher.pacing import WINDOW, Pacing
from sitemapcrawl.fetcher.queues import FetchQueues
from sitemapcrawl.model.cells import decode
from sitemapcrawl.model.codec import format_precise_time, parse_precise_time
from sitemapcrawl.model.webpage import HostRow
from sitemapcrawl.storage.hosts import origin_key
from sitemapcrawl.storage.politeness import (
    MAX_RETRY_AFTER,
    POLITENESS_KEYS_START,
    KeyGate,
    KeyState,
    QueueBy,
    recovered,
    request_end,
    retry_after_seconds,
    slowed,
    state_key,
    state_rows,
)

NOW = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)


def test_retry_after_in_seconds_or_as_an_http_date() -> None:
    assert retry_after_seconds("120", NOW) == 120.0
    assert retry_after_seconds(" 0 ", NOW) == 0.0
    assert retry_after_seconds("Sat, 01 Mar 2025 12:30:00 GMT", NOW) == 1800.0
    assert retry_after_seconds("Sat, 01 Mar 2025 11:00:00 GMT", NOW) == 0.0  # in the past: no pause
    for bad in (None, "", "soon", "-5", "1.5e3", "Sat, 99 Foo 2025", "\u00b2", "\u0663"):
        assert retry_after_seconds(bad, NOW) is None, bad
    # a server's huge number is bounded where it enters: a year at most
    for huge in ("99999999999999999999", "9" * 5000, "31536001", "Fri, 31 Dec 9999 23:59:59 GMT"):
        assert retry_after_seconds(huge, NOW) == MAX_RETRY_AFTER, huge[:30]


def test_slow_down_doubles_up_to_the_cap_and_recovers_by_quarters() -> None:
    assert slowed(0.0, 0.1, cap=30) == 1.0  # at least one second
    assert slowed(1.0, 0.1, cap=30) == 2.0 and slowed(2.0, 0.1, cap=30) == 4.0
    assert slowed(0.0, 3.0, cap=30) == 6.0  # from the normal delay when that is longer
    assert slowed(20.0, 0.1, cap=30) == 30.0
    assert recovered(4.0, 1.0) == 3.0 and recovered(3.0, 1.0) == 2.25
    assert recovered(1.2, 1.0) == 0.0  # back at the normal delay: no extra any more
    assert recovered(0.0, 1.0) == 0.0


def test_the_wait_a_stored_state_asks() -> None:
    assert KeyState().wait(1.0, NOW) == 0.0
    last = KeyState(NOW - timedelta(seconds=0.4))
    assert last.wait(1.0, NOW) == pytest.approx(0.6)
    assert last.wait(0.2, NOW) == 0.0
    slow = KeyState(NOW - timedelta(seconds=0.4), slow_delay=3.0)
    assert slow.wait(1.0, NOW) == pytest.approx(2.6)
    paused = KeyState(NOW - timedelta(seconds=10), not_before=NOW + timedelta(seconds=5))
    assert paused.wait(1.0, NOW) == pytest.approx(5.0)


def test_state_rows_keys_and_millisecond_times() -> None:
    assert state_key("www.example.com", QueueBy.HOST) == b"~host:www.example.com"
    assert state_key("127.0.0.2", QueueBy.IP) == b"~ip:127.0.0.2"
    moment = datetime(2025, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)
    assert format_precise_time(moment) == "2025-03-01T12:00:00.123Z"
    assert parse_precise_time("2025-03-01T12:00:00.123Z") == moment.replace(microsecond=123000)
    [(key, cells)] = state_rows({"h.test": KeyState(moment, None, 2.0)}, QueueBy.HOST)
    assert key == b"~host:h.test" and cells[b"n:lr"] == b"2025-03-01T12:00:00.123Z" and cells[b"n:sd"] == b"2.0"
    assert b"n:nb" not in cells
    assert decode(HostRow, "h.test", cells).last_request == moment.replace(microsecond=123000)
    end = request_end()
    assert end.microsecond % 1000 == 0 and end >= datetime.now(UTC) - timedelta(seconds=1)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def paced(states: dict[object, KeyState] | None = None, delay: float = 1.0,
          clock: Clock | None = None) -> tuple[Pacing, FetchQueues[str]]:
    clock = clock or Clock()
    queues: FetchQueues[str] = FetchQueues(delay=delay, ticks=clock)
    return Pacing(queues, delay=delay, cap=10.0, states=states or {}, deadline=60.0, ticks=clock), queues


def test_pacing_starts_queues_where_the_stored_state_says() -> None:
    clock = Clock()
    recent = KeyState(datetime.now(UTC), None, 0.0)
    reserved = KeyState(None, None, 0.0, reserved_until=datetime.now(UTC) + timedelta(seconds=30))
    pacing, queues = paced({"busy": recent, "reserved": reserved}, delay=0.1, clock=clock)
    pacing.start({"busy": 5.0, "other": 99.0})  # Crawl-delays from host rows; 99 is over the cap upstream
    assert pacing.base_delay("busy") == 5.0 and queues.delay("busy") == 5.0
    for key in ("busy", "reserved", "fresh"):
        queues.add(key, key)
    lease = queues.take()
    assert lease is not None and lease.key == "fresh" and queues.take() is None
    # "busy" waits about 5 s after its last request ...
    assert queues.next_ready() == pytest.approx(105.0, abs=0.5)
    clock.now = 105.5
    lease = queues.take()
    assert lease is not None and lease.key == "busy"
    # ... and "reserved" out another run's reservation, as if a request ended then (30 s, plus its delay)
    assert queues.next_ready() == pytest.approx(130.1, abs=0.5)


def test_pacing_slows_a_key_on_503_and_holds_it_for_retry_after() -> None:
    pacing, queues = paced(delay=0.1)
    assert pacing.answered("h", 503, "60") == 10.0  # the pause asked, capped
    state = pacing.state("h")
    assert state.slow_delay == 1.0 and queues.delay("h") == 1.0
    assert state.not_before is not None and state.last_request is not None
    assert (state.not_before - state.last_request).total_seconds() == pytest.approx(10.0)
    assert pacing.answered("h", 200, None) == 0.0
    assert pacing.state("h").slow_delay == 0.75 and queues.delay("h") == 0.75
    pacing.answered("h", None, None)  # no answer: neither slower nor faster
    assert pacing.state("h").slow_delay == 0.75
    assert pacing.answered("h", 429, "99999999999999999999") == 10.0  # a huge number is bounded where it enters


def test_a_paced_key_starts_only_inside_a_reservation_the_writer_confirmed() -> None:
    clock = Clock()
    pacing, _ = paced(clock=clock)
    assert not pacing.admit("h") and pacing.asking  # no reservation yet: parked, and the writer is asked
    [write] = pacing.take_dirty()
    assert not pacing.asking and write.key == "h" and write.window_until == clock.now + WINDOW
    assert write.state.reserved_until is not None
    # the reservation covers a request started at the window's very end, for its whole deadline
    left = (write.state.reserved_until - datetime.now(UTC)).total_seconds()
    assert WINDOW + 60.0 - 1 < left <= WINDOW + 60.0
    assert not pacing.admit("h")  # asked, not confirmed
    assert pacing.confirm([write]) == ["h"]  # the parked key is free to go
    assert pacing.admit("h")
    clock.now += WINDOW
    assert not pacing.admit("h")  # the window ran out


def test_each_answer_renews_the_window_with_the_next_write_and_idle_releases_it() -> None:
    clock = Clock()
    pacing, _ = paced(clock=clock)
    pacing.confirm(pacing.take_dirty())
    assert pacing.begin("h", longest=60.0)
    pacing.answered("h", 200, None)
    clock.now += 1.0
    [renewed] = pacing.take_dirty()
    assert renewed.window_until == clock.now + WINDOW and renewed.state.last_request is not None
    assert pacing.take_dirty() == []  # nothing changed since
    pacing.idle("h")
    [released] = pacing.take_dirty()
    assert released.window_until is None and released.state.reserved_until == released.state.last_request


def test_an_unpaced_key_needs_no_reservation() -> None:
    pacing, _ = paced(delay=0.0)
    assert pacing.admit("k") and not pacing.asking and pacing.take_dirty() == []


def test_pacing_lets_no_request_start_after_stop() -> None:
    pacing, _ = paced()
    assert pacing.begin("h", longest=60.0)
    pacing.answered("h", 200, None)
    pacing.stop()
    assert not pacing.begin("h", longest=60.0) and not pacing.admit("h")
    assert pacing.in_flight() == 0


def test_a_request_still_in_flight_counts_as_ending_at_its_latest() -> None:
    earlier = KeyState(datetime.now(UTC) - timedelta(seconds=5), None, 0.0)
    pacing, _ = paced({"h": earlier, "idle": earlier})
    before = datetime.now(UTC)
    assert pacing.begin("h", longest=60.0)
    after = datetime.now(UTC)
    pacing.stop()
    final = pacing.final_states()
    assert "idle" not in final  # no request: its stored state is not written again
    state = final["h"]
    assert state.last_request is not None and state.reserved_until == state.last_request
    assert before + timedelta(seconds=60) <= state.last_request <= after + timedelta(seconds=60)
    # the request does end after all (before the final write): its true end is what is left
    pacing.answered("h", 200, None)
    ended = pacing.final_states()["h"].last_request
    assert ended is not None and before <= ended < before + timedelta(seconds=5)


def test_a_long_request_widens_the_next_reservation() -> None:
    pacing, _ = paced()
    pacing.confirm(pacing.take_dirty())
    before = datetime.now(UTC)
    assert pacing.begin("h", longest=600.0)  # robots.txt with its redirects may take this long
    [write] = pacing.take_dirty()
    assert write.state.reserved_until is not None
    assert write.state.reserved_until >= before + timedelta(seconds=600)


def test_key_gate_serialises_a_key_and_records_the_end() -> None:
    gate = KeyGate({"k": KeyState(NOW - timedelta(days=1))})
    inside: list[int] = []
    most = [0]

    async def visit() -> None:
        async with gate.turn("k", delay=0.0) as go:
            assert go
            inside.append(1)
            most[0] = max(most[0], len(inside))
            await asyncio.sleep(0.01)  # room for another visit to come in, were the gate not there
            inside.pop()

    async def visits() -> None:
        await asyncio.gather(*(visit() for _ in range(4)))

    asyncio.run(visits())
    assert most[0] == 1
    last = gate.state("k").last_request
    assert last is not None and last > NOW


def test_a_key_gate_waits_out_the_stored_delay_and_a_reservation() -> None:
    soon = datetime.now(UTC) + timedelta(seconds=0.3)
    gate = KeyGate({"k": KeyState(datetime.now(UTC)), "r": KeyState(None, reserved_until=soon)})

    async def timed(key: str) -> float:
        started = time.monotonic()
        async with gate.turn(key, delay=0.2):
            return time.monotonic() - started

    async def both() -> list[float]:
        return await asyncio.gather(timed("k"), timed("r"))

    waited_k, waited_r = asyncio.run(both())
    assert 0.15 < waited_k < 1.5 and 0.4 < waited_r < 2.0
    assert gate.state("r").reserved_until == soon  # another run's reservation is kept as it was


def test_a_stopped_key_gate_refuses_turns_and_wakes_one_waiting() -> None:
    gate = KeyGate({"busy": KeyState(datetime.now(UTC))})
    got: list[bool] = []

    async def run() -> None:
        async with gate.turn("free", delay=0.0) as go:
            assert go

        async def wait_for_busy() -> None:
            async with gate.turn("busy", delay=3600.0) as go:  # an hour to wait, unless stopped
                got.append(go)

        waiting = asyncio.ensure_future(wait_for_busy())
        await asyncio.sleep(0.05)
        gate.stop()
        await asyncio.wait_for(waiting, 30)
        async with gate.turn("free", delay=0.0) as go:
            assert not go

    asyncio.run(run())
    assert got == [False]
    assert set(gate.taken()) == {"free"}  # the keys that made requests: what a stopped detect writes


def test_politeness_rows_sort_after_every_origin_row() -> None:
    for origin in ("http://www.example.com", "https://zzz.zz:8443", "http://127.0.0.2:8000", "http://[::1]:8080",
                   "http://xn--bcher-kva.example"):
        assert origin_key(origin) < POLITENESS_KEYS_START, origin
    assert state_key("a", QueueBy.HOST).startswith(POLITENESS_KEYS_START)
