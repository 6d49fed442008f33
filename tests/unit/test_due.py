"""The due index: key layout, kinds by crawl mode, and how `write_pages` keeps entries in step (stand-in store)."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

import pytest
from memory_store import MemoryStore

from sitemapcrawl.due import BUILT_KEY, DueKind, Entry, due_range, entry_of, kind_of, kinds_for, parse_entry
from sitemapcrawl.jobs.generate import mode_allows
from sitemapcrawl.modes import CrawlMode
from sitemapcrawl.tables import write_pages
from sitemapcrawl.webpage import DUE_TABLE, WEBPAGE_TABLE, WebPage, decode, encode

T1 = datetime(2025, 3, 1, 12, 0, 5, tzinfo=UTC)
T2 = datetime(2025, 3, 2, 0, 0, 0, tzinfo=UTC)
KEY = b"com.example.www:http/a.html"


def test_entry_key_layout_is_kind_time_row_key() -> None:
    entry = Entry(DueKind.LISTED, b"2025-03-01T12:00:05Z", KEY)
    assert entry.key() == b"l|2025-03-01T12:00:05Z|com.example.www:http/a.html"
    assert parse_entry(entry.key()) == entry
    # a row key holding the separator still round-trips: the time has a fixed width
    odd = Entry(DueKind.PAGE, b"2025-03-01T12:00:05Z", b"com.example:http/a|b")
    assert parse_entry(odd.key()) == odd


@pytest.mark.parametrize("key", [BUILT_KEY, b"x|2025-03-01T12:00:05Z|k", b"s|2025-03-01|k", b"s|", b"",
                                 b"s|2025-03-01T12:00:05Zk"])
def test_keys_that_are_not_entries(key: bytes) -> None:
    assert parse_entry(key) is None


def test_kind_of_flags_and_entry_of_a_row() -> None:
    assert kind_of(True, True) is DueKind.SITEMAP
    assert kind_of(True, None) is DueKind.SITEMAP
    assert kind_of(False, True) is DueKind.LISTED
    assert kind_of(None, None) is DueKind.PAGE
    assert kind_of(False, False) is DueKind.PAGE
    assert entry_of(KEY, None, True, False) is None  # no next fetch: never due, no entry
    assert entry_of(KEY, b"2025-03-01T12:00:05Z", None, True) == Entry(DueKind.LISTED, b"2025-03-01T12:00:05Z", KEY)


def test_kinds_by_mode() -> None:
    assert kinds_for(CrawlMode.MIXED) == (DueKind.SITEMAP, DueKind.LISTED, DueKind.PAGE)
    assert kinds_for(CrawlMode.SITEMAP_ONLY) == (DueKind.SITEMAP, DueKind.LISTED)
    assert kinds_for(CrawlMode.LINKS_ONLY) == (DueKind.LISTED, DueKind.PAGE)
    assert kinds_for(CrawlMode.SITEMAP_ONLY, documents_only=True) == (DueKind.SITEMAP,)
    assert kinds_for(CrawlMode.MIXED, documents_only=True) == (DueKind.SITEMAP,)
    assert kinds_for(CrawlMode.LINKS_ONLY, documents_only=True) == ()


@pytest.mark.parametrize("mode", list(CrawlMode))
def test_kinds_hold_exactly_the_rows_the_mode_allows(mode: CrawlMode) -> None:
    for is_sitemap, in_sitemap in itertools.product((None, False, True), repeat=2):
        row = WebPage("http://h.test/x", is_sitemap=is_sitemap, in_sitemap=in_sitemap)
        assert (kind_of(is_sitemap, in_sitemap) in kinds_for(mode)) == mode_allows(mode, row), (is_sitemap, in_sitemap)


def test_due_range_takes_every_entry_at_or_before_now() -> None:
    start, stop = due_range(DueKind.SITEMAP, T1)
    assert (start, stop) == (b"s|", b"s|2025-03-01T12:00:06Z|")
    at = Entry(DueKind.SITEMAP, b"2025-03-01T12:00:05Z", b"\xff" * 3).key()
    before = Entry(DueKind.SITEMAP, b"0001-01-01T00:00:00Z", b"a").key()
    after = Entry(DueKind.SITEMAP, b"2025-03-01T12:00:06Z", b"").key()
    other = Entry(DueKind.LISTED, b"2000-01-01T00:00:00Z", b"a").key()
    assert start <= before < stop and start <= at < stop
    assert not after < stop and not start <= other < stop
    # a fraction of a second in `now` does not let the next second in
    assert due_range(DueKind.PAGE, T1.replace(microsecond=999_999))[1] == b"p|2025-03-01T12:00:06Z|"


def entries(store: MemoryStore) -> set[bytes]:
    """The due index's keys."""
    return store.keys(DUE_TABLE)


def put(store: MemoryStore, row: WebPage, key: bytes = KEY, before: dict | None = None) -> None:
    write_pages(store, [(key, encode(row))], before)  # type: ignore[arg-type]


def test_write_pages_adds_moves_and_keeps_entries() -> None:
    store = MemoryStore(batch_size=2)
    put(store, WebPage("http://www.example.com/a.html", next_fetch=T1, score=1.0))
    assert entries(store) == {b"p|2025-03-01T12:00:05Z|" + KEY}
    put(store, WebPage("http://www.example.com/a.html", in_sitemap=True))  # kind changes, time stays
    assert entries(store) == {b"l|2025-03-01T12:00:05Z|" + KEY}
    put(store, WebPage("http://www.example.com/a.html", next_fetch=T2))  # time changes, kind stays
    assert entries(store) == {b"l|2025-03-02T00:00:00Z|" + KEY}
    put(store, WebPage("http://www.example.com/a.html", score=2.0, depth=1))  # no index column: nothing read
    assert entries(store) == {b"l|2025-03-02T00:00:00Z|" + KEY} and store.read == 3
    put(store, WebPage("http://www.example.com/a.html", is_sitemap=True, in_sitemap=False))
    assert entries(store) == {b"s|2025-03-02T00:00:00Z|" + KEY}


def test_write_pages_without_a_next_fetch_adds_no_entry() -> None:
    store = MemoryStore(batch_size=2)
    put(store, WebPage("http://www.example.com/a.html", is_sitemap=True, status=None))
    assert entries(store) == set() and store.tables[WEBPAGE_TABLE][KEY] == {b"s:sm": b"1"}


def test_write_pages_trusts_rows_read_before_and_reads_no_more() -> None:
    store = MemoryStore(batch_size=2)
    put(store, WebPage("http://www.example.com/a.html", next_fetch=T1))
    cells = store.tables[WEBPAGE_TABLE][KEY]
    read = decode(WebPage, "http://www.example.com/a.html", cells, ["next_fetch", "is_sitemap", "in_sitemap"])
    store.read = 0
    put(store, WebPage("http://www.example.com/a.html", next_fetch=T2), before={KEY: read})
    assert store.read == 0
    assert entries(store) == {b"p|2025-03-02T00:00:00Z|" + KEY}
    put(store, WebPage("http://www.example.com/b.html", next_fetch=T2), key=b"b", before={b"b": None})
    assert store.read == 0 and b"p|2025-03-02T00:00:00Z|b" in entries(store)


def test_write_pages_streams_in_chunks_and_counts_the_row_puts() -> None:
    store = MemoryStore(batch_size=2)
    rows = [(f"k{i}".encode(), encode(WebPage(f"http://h.test/{i}", next_fetch=T1))) for i in range(5)]
    counts = write_pages(store, iter(rows))  # type: ignore[arg-type]
    assert counts.rows == 5 and counts.batches == 3  # batch_size 2
    assert len(entries(store)) == 5
