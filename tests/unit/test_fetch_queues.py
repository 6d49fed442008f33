"""The fetcher's politeness queues, on a hand-driven clock and with real threads."""

from __future__ import annotations

import threading
import time

import pytest

from sitemapcrawl.fetcher.queues import FetchQueues, Lease


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def take_now(queues: FetchQueues[str]) -> Lease[str] | None:
    return queues.take(timeout=0)


def test_one_slot_per_queue_and_the_delay_from_the_end() -> None:
    clock = Clock()
    queues: FetchQueues[str] = FetchQueues(delay=2.0, clock=clock)
    for item in ("a1", "a2"):
        queues.add("a", item)
    queues.add("b", "b1")
    first, second = take_now(queues), take_now(queues)
    assert first is not None and second is not None
    assert {first.item, second.item} == {"a1", "b1"}
    assert take_now(queues) is None  # a2 waits: a's only slot is in flight
    lease_a = first if first.key == "a" else second
    clock.now = 105.0
    queues.release(lease_a, ended=105.0)
    assert take_now(queues) is None  # not before 107
    clock.now = 106.9
    assert take_now(queues) is None
    clock.now = 107.0
    lease = take_now(queues)
    assert lease is not None and lease.item == "a2"


def test_release_without_a_request_keeps_the_slot_time() -> None:
    clock = Clock()
    queues: FetchQueues[str] = FetchQueues(delay=5.0, clock=clock)
    queues.add("a", "blocked")
    queues.add("a", "next")
    lease = take_now(queues)
    assert lease is not None
    queues.release(lease)  # e.g. robots.txt said no: no request, no delay
    follow = take_now(queues)
    assert follow is not None and follow.item == "next"


def test_several_slots_and_front_insertion() -> None:
    clock = Clock()
    queues: FetchQueues[str] = FetchQueues(delay=1.0, slots_per_queue=2, clock=clock)
    for item in ("x1", "x2", "x3"):
        queues.add("x", item)
    one, two = take_now(queues), take_now(queues)
    assert one is not None and two is not None and take_now(queues) is None
    assert queues.in_flight == 2 and queues.pending == 1
    queues.add("x", "hop", front=True)
    queues.release(one, ended=clock.now)
    clock.now += 1.0
    nxt = take_now(queues)
    assert nxt is not None and nxt.item == "hop"


def test_crawl_delay_remove_close_and_finished() -> None:
    clock = Clock()
    queues: FetchQueues[str] = FetchQueues(delay=0.0, clock=clock)
    queues.set_delay("slow", 10.0)
    assert queues.delay("slow") == 10.0 and queues.delay("other") == 0.0
    for item in ("s1", "s2", "s3"):
        queues.add("slow", item)
    lease = take_now(queues)
    assert lease is not None
    assert queues.remove("slow", lambda item: item == "s3") == ["s3"]
    assert queues.active_queues() == 1 and not queues.finished
    queues.release(lease, ended=clock.now)
    clock.now += 9.0
    assert take_now(queues) is None
    clock.now += 1.0
    lease = take_now(queues)
    assert lease is not None and lease.item == "s2"
    queues.release(lease, ended=clock.now)
    assert queues.finished and queues.take(timeout=5) is None  # returns at once
    queues.add("other", "o1")
    queues.close()
    assert queues.take(timeout=5) is None


def test_bad_arguments() -> None:
    with pytest.raises(ValueError):
        FetchQueues(delay=-1.0)
    with pytest.raises(ValueError):
        FetchQueues(delay=0.0, slots_per_queue=0)


def test_threads_never_overlap_on_a_queue_and_all_items_are_done() -> None:
    queues: FetchQueues[int] = FetchQueues(delay=0.0)
    for i in range(200):
        queues.add(i % 5, i)
    busy: dict[object, int] = {}
    lock = threading.Lock()
    overlaps: list[object] = []
    done: list[int] = []

    def work() -> None:
        while True:
            lease = queues.take(timeout=0.2)
            if lease is None:
                if queues.finished:
                    return
                continue
            with lock:
                busy[lease.key] = busy.get(lease.key, 0) + 1
                if busy[lease.key] > 1:
                    overlaps.append(lease.key)
            time.sleep(0.0005)
            with lock:
                busy[lease.key] -= 1
                done.append(lease.item)
            queues.release(lease, ended=time.monotonic())

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not overlaps
    assert sorted(done) == list(range(200))
