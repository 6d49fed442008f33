"""fetch's writer on a stand-in store: outcomes, robots.txt rows and politeness states behind the requests,
reservations confirmed only once written, a failed write resent, back-pressure, WARC records with their rows."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from memory_store import MemoryStore

from sitemapcrawl.errors import ArchiveError, StoreUnavailableError
from sitemapcrawl.fetcher.pacing import StateWrite
from sitemapcrawl.fetcher.write import Outbox, Outcome, Writer
from sitemapcrawl.model.webpage import HOST_TABLE, WEBPAGE_TABLE, FetchStatus, HostRow, WebPage
from sitemapcrawl.storage.politeness import KeyState, QueueBy
from sitemapcrawl.web.warc import Capture, Exchange, Unrecorded

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


class _Recorder:
    """A WARC recorder whose writes fail from the `fails_at`-th on (a full disk); notes what it wrote."""

    def __init__(self, fails_at: int) -> None:
        self.fails_at = fails_at
        self.written: list[str] = []

    def record(self, exchange: Exchange, refers: Capture | None = None) -> Capture:
        if len(self.written) + 1 >= self.fails_at:
            raise OSError(28, "No space left on device")
        self.written.append(exchange.url)
        return Capture("f.warc.gz", 100 * len(self.written), f"<urn:uuid:{len(self.written)}>", "2025-03-01T12:00:00Z")


def _exchange(url: str, body: bytes = b"<html>") -> Unrecorded:
    return Unrecorded(Exchange(url, NOW, "GET / HTTP/1.1", (), "HTTP/1.1", "200 OK", (), body))


def test_records_are_written_with_their_outcomes_and_a_full_disk_stops_before_their_rows() -> None:
    store = MemoryStore()
    outbox = Outbox(limit=100, max_bytes=10)
    recorder = _Recorder(fails_at=3)
    writer = Writer(store, QueueBy.HOST, outbox, lambda written: None, recorder=recorder)  # type: ignore[arg-type]
    for n in range(4):
        outbox.add(Outcome(f"k{n}".encode(), WebPage(f"http://h.test/{n}", status=FetchStatus.FETCHED),
                           unrecorded=_exchange(f"http://h.test/{n}")))
    outbox.add(Outcome(b"blocked", WebPage("http://h.test/b", status=FetchStatus.BLOCKED_ROBOTS)))
    assert outbox.full  # 24 bytes of exchanges wait for the archive: no request starts
    assert recorder.written == []  # nothing archived before the writer writes the outcomes
    with pytest.raises(ArchiveError, match="the WARC file cannot be written: No space left on device"):
        writer.flush()
    pages = store.tables[WEBPAGE_TABLE]
    assert recorder.written == ["http://h.test/0", "http://h.test/1"]
    assert pages[b"k0"][b"f:wf"] == b"f.warc.gz" and pages[b"k1"][b"f:wo"] == b"200"  # each row at its record
    assert b"k2" not in pages and b"k3" not in pages and writer.unarchived == 2  # not archived: not written
    assert pages[b"blocked"][b"f:st"] == b"blocked_robots"  # an outcome without an exchange is written
