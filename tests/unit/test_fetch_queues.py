"""The fetcher's politeness queues, on a hand-driven clock: slots, delays, holds, parking."""

from __future__ import annotations

import random

import pytest

from sitemapcrawl.fetcher.queues import FetchQueues, Lease


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_one_slot_per_queue_and_the_delay_from_the_end() -> None:
    clock = Clock()
    queues: FetchQueues[str] = FetchQueues(delay=2.0, ticks=clock)
    for item in ("a1", "a2"):
        queues.add("a", item)
    queues.add("b", "b1")
    first, second = queues.take(), queues.take()
    assert first is not None and second is not None
    assert {first.item, second.item} == {"a1", "b1"}
    assert queues.take() is None  # a2 waits: a's only slot is in flight
    lease_a = first if first.key == "a" else second
    clock.now = 105.0
    queues.release(lease_a, ended=105.0)
    assert queues.next_ready() == 107.0
    assert queues.take() is None  # not before 107
    clock.now = 106.9
    assert queues.take() is None
    clock.now = 107.0
    lease = queues.take()
    assert lease is not None and lease.item == "a2"
    assert queues.next_ready() is None  # nothing waits for a slot


def test_release_without_a_request_keeps_the_slot_time() -> None:
    clock = Clock()
    queues: FetchQueues[str] = FetchQueues(delay=5.0, ticks=clock)
    queues.add("a", "blocked")
    queues.add("a", "next")
    lease = queues.take()
    assert lease is not None
    queues.release(lease)  # e.g. robots.txt said no: no request, no delay
    follow = queues.take()
    assert follow is not None and follow.item == "next"
    queues.release(follow, pause=0.5)  # no request, but not again before half a second
    queues.add("a", "later")
    assert queues.take() is None and queues.next_ready() == 100.5


def test_several_slots_and_front_insertion() -> None:
    clock = Clock()
    queues: FetchQueues[str] = FetchQueues(delay=1.0, slots_per_queue=2, ticks=clock)
    for item in ("x1", "x2", "x3"):
        queues.add("x", item)
    one, two = queues.take(), queues.take()
    assert one is not None and two is not None and queues.take() is None
    assert queues.in_flight == 2 and queues.pending == 1
    assert queues.has_waiting("x") and queues.waiting("x") == 3
    queues.add("x", "hop", front=True)
    queues.release(one, ended=clock.now)
    clock.now += 1.0
    nxt = queues.take()
    assert nxt is not None and nxt.item == "hop"


def test_crawl_delay_remove_close_and_finished() -> None:
    clock = Clock()
    queues: FetchQueues[str] = FetchQueues(delay=0.0, ticks=clock)
    queues.set_delay("slow", 10.0)
    assert queues.delay("slow") == 10.0 and queues.delay("other") == 0.0
    for item in ("s1", "s2", "s3"):
        queues.add("slow", item)
    lease = queues.take()
    assert lease is not None
    assert queues.remove("slow", lambda item: item == "s3") == ["s3"]
    assert queues.active_queues() == 1 and not queues.finished
    queues.release(lease, ended=clock.now)
    clock.now += 9.0
    assert queues.take() is None
    clock.now += 1.0
    lease = queues.take()
    assert lease is not None and lease.item == "s2"
    assert not queues.has_waiting("slow")
    queues.release(lease, ended=clock.now)
    assert queues.finished and queues.take() is None
    queues.add("other", "o1")
    queues.close()
    assert queues.take() is None and queues.next_ready() is None


def test_hold_keeps_every_slot_of_a_queue_waiting() -> None:
    clock = Clock()
    queues: FetchQueues[str] = FetchQueues(delay=1.0, slots_per_queue=2, ticks=clock)
    for item in ("a1", "a2", "a3"):
        queues.add("a", item)
    first = queues.take()
    assert first is not None
    queues.hold("a", 110.0)
    assert queues.take() is None  # the free slot is held
    queues.release(first, ended=100.5)  # in flight while held: it frees at the hold, not at 101.5
    clock.now = 109.9
    assert queues.take() is None
    clock.now = 110.0
    assert queues.take() is not None and queues.take() is not None


def test_a_queue_not_admitted_is_parked_until_unparked() -> None:
    clock = Clock()
    queues: FetchQueues[str] = FetchQueues(delay=0.0, ticks=clock)
    queues.add("a", "a1")
    queues.add("b", "b1")
    lease = queues.take(admit=lambda key: key == "b")
    assert lease is not None and lease.key == "b"
    assert queues.take() is None  # "a" is parked: no longer offered, whatever admit says now
    queues.add("a", "a2")  # more work does not unpark it
    assert queues.take() is None
    queues.unpark("a")
    taken = queues.take()
    assert taken is not None and taken.item == "a1"
    queues.unpark("unknown")  # a key never seen: nothing happens


def test_bad_arguments() -> None:
    with pytest.raises(ValueError):
        FetchQueues(delay=-1.0)
    with pytest.raises(ValueError):
        FetchQueues(delay=0.0, slots_per_queue=0)


@pytest.mark.parametrize("seed", range(5))
def test_a_queue_never_has_more_in_flight_than_its_slots_and_every_item_is_handed_out_once(seed: int) -> None:
    rng = random.Random(seed)
    clock = Clock()
    slots = rng.choice((1, 2))
    queues: FetchQueues[int] = FetchQueues(delay=0.5, slots_per_queue=slots, ticks=clock)
    for i in range(300):
        queues.add(i % 7, i)
    taken: list[Lease[int]] = []
    done: list[int] = []
    busy: dict[object, int] = {}
    while not queues.finished:
        lease = queues.take(admit=lambda key: rng.random() < 0.9)
        if lease is not None:
            busy[lease.key] = busy.get(lease.key, 0) + 1
            assert busy[lease.key] <= slots
            taken.append(lease)
            continue
        for key in range(7):
            queues.unpark(key)
        if taken and rng.random() < 0.7:
            ended = taken.pop(rng.randrange(len(taken)))
            busy[ended.key] -= 1
            done.append(ended.item)
            queues.release(ended, ended=clock.now)
        clock.now += rng.choice((0.0, 0.1, 0.5))
    assert sorted(done) == list(range(300))
