"""fetch's writer on a stand-in store: outcomes, robots.txt rows and politeness state, and a failed write resent."""

from __future__ import annotations

from collections.abc import Hashable
from datetime import UTC, datetime

import pytest
from memory_store import MemoryStore

from sitemapcrawl.errors import StoreUnavailableError
from sitemapcrawl.fetcher.write import Outcome, Writer
from sitemapcrawl.model.webpage import HOST_TABLE, WEBPAGE_TABLE, FetchStatus, HostRow, WebPage
from sitemapcrawl.storage.politeness import KeyState, QueueBy

NOW = datetime(2025, 3, 1, 12, tzinfo=UTC)


def test_flush_writes_outcomes_robots_rows_and_politeness_state_and_resends_after_a_failure() -> None:
    store = MemoryStore()
    store.tables[WEBPAGE_TABLE][b"old"] = {b"f:st": b"fetched"}
    states: dict[Hashable, tuple[int, KeyState]] = {"h.test": (1, KeyState(NOW, None, 0.0))}
    writer = Writer(store, QueueBy.HOST, lambda: states.copy())  # type: ignore[arg-type]
    writer.add(Outcome(b"new", WebPage("http://h.test/n", status=FetchStatus.FETCHED),
                       if_new=WebPage("http://h.test/n", score=1.0)))
    writer.add(Outcome(b"old", WebPage("http://h.test/o", status=FetchStatus.GONE),
                       if_new=WebPage("http://h.test/o", score=1.0)))
    writer.add_host_row(HostRow("http://h.test", crawl_delay=2.0))
    assert writer.waiting == 2
    store.fail_next = True
    with pytest.raises(StoreUnavailableError):
        writer.flush()
    writer.flush()  # the failed write is redone: outcomes, robots.txt row and politeness state
    assert writer.waiting == 0 and writer.new_rows == 1
    assert store.tables[WEBPAGE_TABLE][b"new"] == {b"f:st": b"fetched", b"m:sc": b"1.0"}
    assert store.tables[WEBPAGE_TABLE][b"old"] == {b"f:st": b"gone"}  # defaults only for a row that is new
    host = store.tables[HOST_TABLE]
    assert host[b"~host:h.test"][b"n:lr"] == b"2025-03-01T12:00:00.000Z"
    assert any(cells.get(b"r:cd") == b"2.0" for cells in host.values())
    # a state already written is not written again; a newer version is
    del host[b"~host:h.test"]
    writer.flush()
    assert b"~host:h.test" not in host
    states["h.test"] = (2, KeyState(NOW, None, 1.0))
    writer.flush()
    assert host[b"~host:h.test"][b"n:sd"] == b"1.0"
