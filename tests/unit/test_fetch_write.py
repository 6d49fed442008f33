"""fetch's writer on a stand-in store: outcomes, robots.txt rows and politeness states behind the requests,
reservations confirmed only once written, a failed write resent, back-pressure."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from memory_store import MemoryStore

from sitemapcrawl.errors import StoreUnavailableError
from sitemapcrawl.fetcher.pacing import StateWrite
from sitemapcrawl.fetcher.write import Outbox, Outcome, Writer
from sitemapcrawl.model.webpage import HOST_TABLE, WEBPAGE_TABLE, FetchStatus, HostRow, WebPage
from sitemapcrawl.storage.politeness import KeyState, QueueBy

NOW = datetime(2025, 3, 1, 12, tzinfo=UTC)
LATER = datetime(2025, 3, 1, 12, 1, 5, tzinfo=UTC)


def test_flush_writes_states_robots_rows_and_outcomes_confirms_after_and_resends_after_a_failure() -> None:
    store = MemoryStore()
    store.tables[WEBPAGE_TABLE][b"old"] = {b"f:st": b"fetched"}
    outbox = Outbox(limit=100)
    confirmed: list[list[StateWrite]] = []
    writer = Writer(store, QueueBy.HOST, outbox, confirmed.append)  # type: ignore[arg-type]
    outbox.add(Outcome(b"new", WebPage("http://h.test/n", status=FetchStatus.FETCHED),
                       if_new=WebPage("http://h.test/n", score=1.0)))
    outbox.add(Outcome(b"old", WebPage("http://h.test/o", status=FetchStatus.GONE),
                       if_new=WebPage("http://h.test/o", score=1.0)))
    outbox.add_host_row(HostRow("http://h.test", crawl_delay=2.0))
    reservation = StateWrite("h.test", KeyState(NOW, None, 0.0, reserved_until=LATER), window_until=105.0)
    outbox.add_states([reservation], urgent=True)
    assert outbox.backlog == 2 and writer.unwritten == 2
    store.fail_next = True
    with pytest.raises(StoreUnavailableError):
        writer.flush()
    assert confirmed == []  # not written: not confirmed, so no request may count on it
    assert writer.unwritten == 2
    writer.flush()  # the failed write is redone: state, robots.txt row and outcomes
    assert confirmed == [[reservation]]
    assert writer.unwritten == 0 and writer.new_rows == 1
    assert store.tables[WEBPAGE_TABLE][b"new"] == {b"f:st": b"fetched", b"m:sc": b"1.0"}
    assert store.tables[WEBPAGE_TABLE][b"old"] == {b"f:st": b"gone"}  # defaults only for a row that is new
    host = store.tables[HOST_TABLE]
    assert host[b"~host:h.test"][b"n:lr"] == b"2025-03-01T12:00:00.000Z"
    assert host[b"~host:h.test"][b"n:rv"] == b"2025-03-01T12:01:05.000Z"
    assert any(cells.get(b"r:cd") == b"2.0" for cells in host.values())
    # the newest state of a key wins within one write; final states come after what the outbox holds
    outbox.add_states([StateWrite("h.test", KeyState(NOW, None, 1.0, reserved_until=LATER), 110.0)], urgent=False)
    writer.flush(final=[StateWrite("h.test", KeyState(LATER, None, 1.0, reserved_until=LATER), None)])
    assert host[b"~host:h.test"][b"n:lr"] == b"2025-03-01T12:01:05.000Z"


def test_a_released_batch_drops_its_outcomes_but_writes_the_states() -> None:
    store = MemoryStore()
    outbox = Outbox(limit=100)
    writer = Writer(store, QueueBy.HOST, outbox, lambda written: None, fence=lambda: False)  # type: ignore[arg-type]
    outbox.add(Outcome(b"k", WebPage("http://h.test/k", status=FetchStatus.FETCHED)))
    outbox.add_states([StateWrite("h.test", KeyState(NOW), None)], urgent=False)
    writer.flush()
    assert writer.dropped == 1 and b"k" not in store.tables[WEBPAGE_TABLE]
    assert b"~host:h.test" in store.tables[HOST_TABLE]


def test_the_outbox_is_full_at_its_limit_and_wakes_its_writer() -> None:
    outbox = Outbox(limit=4)
    for n in range(3):
        outbox.add(Outcome(f"k{n}".encode(), WebPage(f"http://h.test/{n}")))
    assert not outbox.full
    outbox.add(Outcome(b"k3", WebPage("http://h.test/3")))
    assert outbox.full
    outbox.wait(30.0)  # returns at once: half the limit is waiting
    outcomes, host_rows, states = outbox.take()
    assert len(outcomes) == 4 and host_rows == [] and states == [] and not outbox.full
