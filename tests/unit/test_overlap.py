"""WriteBehind: ordered background calls (or two at once), bounded queue, errors reach the job's thread."""

from __future__ import annotations

import threading
import time

import pytest

from sitemapcrawl.storage.overlap import WriteBehind, read_ahead


def test_calls_run_in_order_on_one_other_thread_and_close_waits_for_all() -> None:
    done: list[int] = []
    threads: set[int] = set()

    def write(n: int) -> None:
        threads.add(threading.get_ident())
        done.append(n)

    with WriteBehind(depth=3) as later:
        for n in range(50):
            later.submit(write, n)
    assert done == list(range(50))
    assert threads and threading.get_ident() not in threads and len(threads) == 1


def test_a_single_call_is_made_at_close_on_the_callers_thread_without_a_thread_started() -> None:
    threads: list[int] = []
    before = threading.active_count()
    with WriteBehind() as later:
        later.submit(lambda: threads.append(threading.get_ident()))
        assert threads == [] and threading.active_count() == before  # held until a second call or close
    assert threads == [threading.get_ident()]
    with WriteBehind():
        pass  # nothing submitted: nothing to do


def test_submit_waits_while_depth_calls_are_queued() -> None:
    release = threading.Event()
    started: list[int] = []

    def write(n: int) -> None:
        started.append(n)
        release.wait(10)

    later = WriteBehind(depth=2)
    later.submit(write, 0)
    later.submit(write, 1)
    blocked = threading.Thread(target=later.submit, args=(write, 2))
    blocked.start()
    blocked.join(0.2)
    assert blocked.is_alive()  # a third call waits for the first to finish
    release.set()
    blocked.join(10)
    later.close()
    assert started == [0, 1, 2]


def test_two_workers_run_two_calls_at_once_and_close_waits_for_every_call() -> None:
    both_running = threading.Barrier(2, timeout=10)
    done: list[int] = []
    threads: set[int] = set()

    def write(n: int) -> None:
        threads.add(threading.get_ident())
        if n < 2:
            both_running.wait()  # returns only when the first two calls run side by side
        done.append(n)

    with WriteBehind(depth=2, workers=2) as later:
        for n in range(20):
            later.submit(write, n)
    assert sorted(done) == list(range(20))
    assert len(threads) == 2 and threading.get_ident() not in threads


def test_with_two_workers_depth_still_bounds_the_calls_queued_or_running() -> None:
    release = threading.Event()
    started: list[int] = []

    def write(n: int) -> None:
        started.append(n)
        release.wait(10)

    later = WriteBehind(depth=2, workers=2)
    later.submit(write, 0)
    later.submit(write, 1)
    blocked = threading.Thread(target=later.submit, args=(write, 2))
    blocked.start()
    deadline = time.monotonic() + 10
    while len(started) < 2 and time.monotonic() < deadline:  # both workers pick up their call
        time.sleep(0.01)
    blocked.join(0.2)
    assert blocked.is_alive() and sorted(started) == [0, 1]  # two running, the third waits
    release.set()
    blocked.join(10)
    later.close()
    assert sorted(started) == [0, 1, 2]


def test_a_failed_call_stops_the_later_ones_and_its_error_reaches_the_job() -> None:
    done: list[int] = []

    def write(n: int) -> None:
        if n == 3:
            raise OSError("disk on fire")
        done.append(n)

    with pytest.raises(OSError, match="disk on fire"), WriteBehind(depth=4) as later:
        for n in range(10):
            later.submit(write, n)
    assert done == [0, 1, 2]  # nothing after the failed call was written


def test_a_failing_job_still_lands_what_it_queued_and_keeps_its_own_error() -> None:
    done: list[int] = []
    with pytest.raises(KeyboardInterrupt), WriteBehind(depth=4) as later:
        later.submit(done.append, 1)
        later.submit(done.append, 2)
        raise KeyboardInterrupt
    assert done == [1, 2]


def test_read_ahead_yields_every_chunk_in_order_reading_the_next_on_another_thread() -> None:
    readers: list[int] = []

    def chunks():  # type: ignore[no-untyped-def]
        for n in range(20):
            readers.append(threading.get_ident())
            yield [n, n + 1]

    assert list(read_ahead(chunks())) == [[n, n + 1] for n in range(20)]
    assert set(readers) and threading.get_ident() not in readers


def test_read_ahead_stays_one_chunk_ahead_and_passes_errors_on_in_order() -> None:
    pulled: list[int] = []

    def chunks():  # type: ignore[no-untyped-def]
        for n in range(5):
            pulled.append(n)
            if n == 3:
                raise OSError("scanner expired")
            yield n

    got = []
    with pytest.raises(OSError, match="scanner expired"):
        for n in read_ahead(chunks()):
            got.append(n)
            assert len(pulled) <= n + 2  # never more than one chunk ahead of the caller
    assert got == [0, 1, 2]
