"""Politeness state: Retry-After, slow-down and recovery, the wait a stored state asks, the pacing of queues."""

from __future__ import annotations

import signal
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest

from sitemapcrawl.fetcher.pacing import Pacing
from sitemapcrawl.fetcher.queues import FetchQueues
from sitemapcrawl.model.cells import decode
from sitemapcrawl.model.codec import format_precise_time, parse_precise_time
from sitemapcrawl.model.webpage import HostRow
from sitemapcrawl.storage.hosts import origin_key
from sitemapcrawl.storage.politeness import (
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
    for bad in (None, "", "soon", "-5", "1.5e3", "Sat, 99 Foo 2025"):
        assert retry_after_seconds(bad, NOW) is None, bad


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


def test_hold_keeps_every_slot_of_a_queue_waiting() -> None:
    clock = Clock()
    queues: FetchQueues[str] = FetchQueues(delay=1.0, slots_per_queue=2, clock=clock)
    for item in ("a1", "a2", "a3"):
        queues.add("a", item)
    first = queues.take(timeout=0)
    assert first is not None
    queues.hold("a", 110.0)
    assert queues.take(timeout=0) is None  # the free slot is held
    queues.release(first, ended=100.5)  # in flight while held: it frees at the hold, not at 101.5
    clock.now = 109.9
    assert queues.take(timeout=0) is None
    clock.now = 110.0
    assert queues.take(timeout=0) is not None and queues.take(timeout=0) is not None


def test_pacing_starts_queues_where_the_stored_state_says() -> None:
    queues: FetchQueues[str] = FetchQueues(delay=0.1)
    recent = KeyState(datetime.now(UTC), None, 0.0)
    pacing = Pacing(queues, delay=0.1, cap=30.0, states={"busy": recent})
    pacing.start({"busy": 5.0, "other": 99.0})  # Crawl-delays from host rows; 99 is over the cap upstream
    assert pacing.base_delay("busy") == 5.0 and queues.delay("busy") == 5.0
    queues.add("busy", "x")
    queues.add("fresh", "y")
    lease = queues.take(timeout=0)
    assert lease is not None and lease.key == "fresh"  # "busy" waits about 5 s after its last request
    assert queues.take(timeout=0) is None


def test_pacing_slows_a_key_on_503_and_holds_it_for_retry_after() -> None:
    queues: FetchQueues[str] = FetchQueues(delay=0.1)
    pacing = Pacing(queues, delay=0.1, cap=10.0, states={})
    pacing.answered("h", 503, "60")
    state = pacing.state("h")
    assert state.slow_delay == 1.0 and queues.delay("h") == 1.0
    assert state.not_before is not None and state.last_request is not None
    assert (state.not_before - state.last_request).total_seconds() == pytest.approx(10.0)  # capped
    queues.add("h", "x")
    assert queues.take(timeout=0) is None
    pacing.answered("h", 200, None)
    assert pacing.state("h").slow_delay == 0.75 and queues.delay("h") == 0.75
    assert pacing.snapshot() == {"h": (2, pacing.state("h"))}
    pacing.answered("h", None, None)  # no answer: neither slower nor faster
    assert pacing.state("h").slow_delay == 0.75 and pacing.snapshot()["h"][0] == 3


def test_pacing_lets_no_request_start_after_stop() -> None:
    pacing = Pacing(FetchQueues(delay=0.1), delay=0.1, cap=10.0, states={})
    assert pacing.begin("h", longest=60.0)
    pacing.answered("h", 200, None)
    pacing.stop()
    assert not pacing.begin("h", longest=60.0)
    assert pacing.settle(0.0) == 0  # nothing in flight: nothing to wait for or to record
    assert pacing.snapshot()["h"][0] == 2  # the begun request, then its end; the refused one is nothing


def test_pacing_counts_a_request_still_in_flight_as_ending_at_its_latest() -> None:
    earlier = KeyState(datetime.now(UTC) - timedelta(seconds=5), None, 0.0)
    pacing = Pacing(FetchQueues(delay=0.1), delay=0.1, cap=10.0, states={"h": earlier, "idle": earlier})
    before = datetime.now(UTC)
    assert pacing.begin("h", longest=60.0)
    after = datetime.now(UTC)
    # A request that started is recorded as ending at its latest (what a kill must leave behind) ...
    version, state = pacing.snapshot()["h"]
    assert version == 1 and state.last_request is not None
    assert before + timedelta(seconds=60) <= state.last_request <= after + timedelta(seconds=60)
    pacing.stop()
    assert pacing.settle(0.0) == 1
    version, state = pacing.snapshot()["h"]
    assert version == 2 and before + timedelta(seconds=60) <= state.last_request <= after + timedelta(seconds=60)
    assert "idle" not in pacing.snapshot()  # no request: its stored state is not written again
    # the request does end after all (before the final write): the stored end does not move back
    pacing.answered("h", 200, None)
    assert pacing.state("h").last_request == state.last_request
    assert pacing.snapshot()["h"][0] == 3


def test_pacing_reserves_each_request_of_a_delayed_key_before_it_starts_and_refuses_one_not_recorded() -> None:
    pacing = Pacing(FetchQueues(delay=0.5), delay=0.5, cap=10.0, states={})
    asked: list[object] = []
    answer = [True]

    def reserve(key: object) -> bool:
        asked.append((key, pacing.snapshot()[key][1].last_request))
        return answer[0]

    pacing.reserve = reserve
    before = datetime.now(UTC)
    assert pacing.begin("h", longest=30.0)
    assert len(asked) == 1 and asked[0][1] >= before + timedelta(seconds=30)  # in flight until its deadline
    pacing.answered("h", 200, None)
    assert len(asked) == 2 and asked[1][1] < before + timedelta(seconds=30)  # then its true end, at once
    answer[0] = False
    assert not pacing.begin("h", longest=30.0)  # not recorded: not made
    assert pacing.settle(0.0) == 0
    unpaced = Pacing(FetchQueues(delay=0.0), delay=0.0, cap=10.0, states={})
    unpaced.reserve = reserve
    assert unpaced.begin("k", longest=30.0) and len(asked) == 3  # no delay: no write per request


def test_pacing_settle_waits_for_requests_in_flight_and_keeps_the_latest_of_two() -> None:
    pacing = Pacing(FetchQueues(delay=0.1, slots_per_queue=2), delay=0.1, cap=10.0, states={})
    assert pacing.begin("h", longest=1.0) and pacing.begin("h", longest=600.0)
    pacing.answered("h", 200, None)  # one ends: the one left may be the longer one
    pacing.stop()
    assert pacing.settle(0.0) == 1
    left = pacing.state("h").last_request
    assert left is not None and left - datetime.now(UTC) > timedelta(seconds=60)

    waiting = Pacing(FetchQueues(delay=0.1), delay=0.1, cap=10.0, states={})
    assert waiting.begin("k", longest=600.0)
    waiting.stop()
    ender = threading.Timer(0.05, waiting.answered, ("k", 200, None))
    ender.start()
    assert waiting.settle(30.0) == 0  # returns once the request ended, with its real end
    ender.join()
    end = waiting.state("k").last_request
    assert end is not None and end - datetime.now(UTC) < timedelta(seconds=60)


def test_key_gate_serialises_a_key_and_records_the_end() -> None:
    gate = KeyGate({"k": KeyState(NOW - timedelta(days=1))})
    inside: list[int] = []
    most = [0]
    lock = threading.Lock()

    def visit() -> None:
        with gate.turn("k", delay=0.0):
            with lock:
                inside.append(1)
                most[0] = max(most[0], len(inside))
            time.sleep(0.01)  # room for another thread to come in, were the gate not there
            with lock:
                inside.pop()

    threads = [threading.Thread(target=visit) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert most[0] == 1
    last = gate.state("k").last_request
    assert last is not None and last > NOW


def test_a_stopped_key_gate_refuses_turns_and_wakes_one_waiting() -> None:
    gate = KeyGate({"busy": KeyState(datetime.now(UTC))})
    with gate.turn("free", delay=0.0) as go:
        assert go
    got: list[bool] = []

    def wait_for_busy() -> None:
        with gate.turn("busy", delay=3600.0) as go:  # an hour to wait, unless stopped
            got.append(go)

    waiting = threading.Thread(target=wait_for_busy)
    waiting.start()
    gate.stop()
    waiting.join(30)
    assert not waiting.is_alive() and got == [False]
    with gate.turn("free", delay=0.0) as go:
        assert not go
    assert set(gate.taken()) == {"free"}  # the keys that made requests: what a stopped detect writes


def test_wait_idle_waits_for_the_turn_under_way_and_a_ctrl_c_does_not_end_it() -> None:
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("a Ctrl-C reaches the main thread only")
    gate = KeyGate({})
    entered, release = threading.Event(), threading.Event()

    def request() -> None:
        with gate.turn("slow", delay=0.0) as go:
            assert go
            entered.set()
            release.wait(30)

    running = threading.Thread(target=request)
    running.start()
    assert entered.wait(30)
    gate.stop()
    # A real Ctrl-C while the main thread waits (a Thread.join here would then count the thread as ended).
    threading.Timer(0.2, signal.pthread_kill, (threading.main_thread().ident, signal.SIGINT)).start()
    with pytest.raises(KeyboardInterrupt):
        gate.wait_idle()
    assert set(gate.taken()) == set()  # still running: not recorded yet
    threading.Timer(0.2, release.set).start()
    gate.wait_idle()  # waits again, for as long as the turn runs
    assert set(gate.taken()) == {"slow"}
    running.join(30)


def test_politeness_rows_sort_after_every_origin_row() -> None:
    for origin in ("http://www.example.com", "https://zzz.zz:8443", "http://127.0.0.2:8000", "http://[::1]:8080",
                   "http://xn--bcher-kva.example"):
        assert origin_key(origin) < POLITENESS_KEYS_START, origin
    assert state_key("a", QueueBy.HOST).startswith(POLITENESS_KEYS_START)
