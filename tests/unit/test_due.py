"""The due index: key layout, kinds by crawl mode, and how `write_pages` keeps entries in step (stand-in store)."""

from __future__ import annotations

import itertools
from dataclasses import replace
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st
from memory_store import MemoryStore

from sitemapcrawl.jobs.generate import Candidate, mode_allows
from sitemapcrawl.model.cells import decode, encode
from sitemapcrawl.model.due import (
    BUILT_KEY,
    DueKind,
    Entry,
    ReadyEntry,
    due_range,
    entry_of,
    host_queue,
    kind_of,
    kinds_for,
    parse_entry,
    parse_ready,
    ready_range,
)
from sitemapcrawl.model.rank import ORDER_DIGITS, order_of_text, order_text, rank_order
from sitemapcrawl.model.splits import WHOLE, bucket_label, bucket_of
from sitemapcrawl.model.webpage import DUE_TABLE, WEBPAGE_TABLE, WebPage
from sitemapcrawl.modes import CrawlMode
from sitemapcrawl.storage.dueindex import DUE_FIELDS, DUE_GROUP, due_state, entry_rows, held_entries, write_pages

T1 = datetime(2025, 3, 1, 12, 0, 5, tzinfo=UTC)
T2 = datetime(2025, 3, 2, 0, 0, 0, tzinfo=UTC)
EARLY = datetime(2025, 1, 1, tzinfo=UTC)
"""A writer's clock before T1 and T2: rows due then get waiting entries."""
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
    """The due index's entries, each as the key of a row holding it alone."""
    return {entry.key() for key, cells in store.tables[DUE_TABLE].items() for entry, _ in held_entries(key, cells)}


def put(store: MemoryStore, row: WebPage, key: bytes = KEY, before: dict | None = None,
        now: datetime = EARLY) -> None:
    write_pages(store, [(key, encode(row))], before, now=now)  # type: ignore[arg-type]


def test_write_pages_adds_moves_and_keeps_entries() -> None:
    store = MemoryStore(batch_size=2)
    put(store, WebPage("http://www.example.com/a.html", next_fetch=T1, score=1.0))
    assert entries(store) == {b"p|2025-03-01T12:00:05Z|" + KEY}
    put(store, WebPage("http://www.example.com/a.html", in_sitemap=True))  # kind changes, time stays
    assert entries(store) == {b"l|2025-03-01T12:00:05Z|" + KEY}
    put(store, WebPage("http://www.example.com/a.html", next_fetch=T2))  # time changes, kind stays
    assert entries(store) == {b"l|2025-03-02T00:00:00Z|" + KEY}
    put(store, WebPage("http://www.example.com/a.html", fetch_interval=60))  # no index column: nothing read
    assert entries(store) == {b"l|2025-03-02T00:00:00Z|" + KEY} and store.read == 3
    put(store, WebPage("http://www.example.com/a.html", score=2.0, depth=1))  # the rank moves, the time stays
    assert entries(store) == {b"l|2025-03-02T00:00:00Z|" + KEY} and store.read == 4
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
    read = decode(WebPage, "http://www.example.com/a.html", cells, DUE_FIELDS)
    store.read = 0
    put(store, WebPage("http://www.example.com/a.html", next_fetch=T2), before={KEY: read})
    assert store.read == 0
    assert entries(store) == {b"p|2025-03-02T00:00:00Z|" + KEY}
    put(store, WebPage("http://www.example.com/b.html", next_fetch=T2), key=b"b", before={b"b": None})
    assert store.read == 0 and b"p|2025-03-02T00:00:00Z|b" in entries(store)


def test_write_pages_streams_in_chunks_and_counts_the_row_puts() -> None:
    store = MemoryStore(batch_size=2)
    rows = [(f"k{i}".encode(), encode(WebPage(f"http://h.test/{i}", next_fetch=T1))) for i in range(5)]
    counts = write_pages(store, iter(rows), now=EARLY)  # type: ignore[arg-type]
    assert counts.rows == 5 and counts.batches == 3  # batch_size 2
    assert len(entries(store)) == 5
    assert store.keys(DUE_TABLE) == {b"p|2025-03-01T12:00:05Z|k0", b"p|2025-03-01T12:00:05Z|k2",
                                     b"p|2025-03-01T12:00:05Z|k4"}  # one row per chunk: they share kind and time
    # a span of 4 rows: its entries in one index row (the real store then puts its rows 2 a call)
    store = MemoryStore(batch_size=2)
    counts = write_pages(store, iter(rows), span=4, now=EARLY)  # type: ignore[arg-type]
    assert counts.rows == 5
    assert store.keys(DUE_TABLE) == {b"p|2025-03-01T12:00:05Z|k0", b"p|2025-03-01T12:00:05Z|k4"}
    assert len(entries(store)) == 5


def test_entries_of_one_kind_and_time_share_rows_of_at_most_due_group() -> None:
    keys = [f"k{i:04d}".encode() for i in range(2 * DUE_GROUP + 10)]
    many = [Entry(DueKind.LISTED, b"2025-03-01T12:00:05Z", key) for key in reversed(keys)]
    other = [Entry(DueKind.LISTED, b"2025-03-02T00:00:00Z", b"k0000"),
             Entry(DueKind.PAGE, b"2025-03-01T12:00:05Z", b"z")]
    rows = dict(entry_rows([*many, *other, many[0]]))  # an entry given twice is held once
    assert sorted(rows) == [b"l|2025-03-01T12:00:05Z|k0000", b"l|2025-03-01T12:00:05Z|k0064",
                            b"l|2025-03-01T12:00:05Z|k0128", b"l|2025-03-02T00:00:00Z|k0000",
                            b"p|2025-03-01T12:00:05Z|z"]
    assert [len(rows[key]) for key in sorted(rows)] == [DUE_GROUP, DUE_GROUP, 10, 1, 1]
    assert rows[b"l|2025-03-01T12:00:05Z|k0000"][b"d:e"] == b"1"
    assert rows[b"l|2025-03-01T12:00:05Z|k0000"][b"d:r.k0001"] == b"1"
    held = [entry for key, cells in rows.items() for entry, _ in held_entries(key, cells)]
    assert sorted(held) == sorted({*many, *other}) and len(held) == len(keys) + 2
    # each entry says which cell holds it, so a reader deletes exactly that one when it is stale
    assert held_entries(b"l|2025-03-01T12:00:05Z|k0000", {b"d:r.k0003": b"1"}) == [
        (Entry(DueKind.LISTED, b"2025-03-01T12:00:05Z", b"k0003"), b"d:r.k0003")]
    assert held_entries(BUILT_KEY, {b"d:b": b"2025-03-01T12:00:05Z"}) == []
    assert held_entries(b"l|2025-03-01T12:00:05Z|k0000", {b"d:r.": b"1", b"d:x": b"1"}) == []  # junk cells


def test_a_group_member_that_moves_on_is_left_for_the_reader_and_an_anchor_goes_at_once() -> None:
    store = MemoryStore(batch_size=10)
    urls = [f"http://www.example.com/{i}.html" for i in range(3)]
    keys = [f"com.example.www:http/{i}.html".encode() for i in range(3)]
    write_pages(store, [(key, encode(WebPage(url, next_fetch=T1))) for key, url in zip(keys, urls, strict=True)],
                now=EARLY)
    group = b"p|2025-03-01T12:00:05Z|" + keys[0]
    assert store.keys(DUE_TABLE) == {group} and len(store.tables[DUE_TABLE][group]) == 3
    write_pages(store, [(keys[0], encode(WebPage(urls[0], next_fetch=T2))),
                        (keys[1], encode(WebPage(urls[1], next_fetch=T2)))], now=EARLY)
    # the anchor's own cell is deleted; the member stays, stale, until generate meets it (promote)
    assert set(store.tables[DUE_TABLE][group]) == {b"d:r." + keys[1], b"d:r." + keys[2]}
    assert entries(store) >= {b"p|2025-03-02T00:00:00Z|" + keys[0], b"p|2025-03-02T00:00:00Z|" + keys[1]}
    store.read = 0
    write_pages(store, [(keys[2], encode(WebPage(urls[2], next_fetch=T1)))], now=EARLY)  # unchanged: nothing written
    assert store.read == 1 and set(store.tables[DUE_TABLE][group]) == {b"d:r." + keys[1], b"d:r." + keys[2]}


def test_ready_entry_key_layout_is_kind_bucket_host_order_rest() -> None:
    entry = ReadyEntry(DueKind.LISTED, rank_order(WebPage("u", priority=0.9), KEY), KEY)
    key = entry.key()
    bucket = bucket_label(bucket_of(KEY))
    assert key == b"r|l|" + bucket + b"|com.example.www|" + order_text(entry.order) + b"|:http/a.html"
    assert key.startswith(host_queue(DueKind.LISTED, KEY)) and parse_ready(key) == entry
    odd = ReadyEntry(DueKind.PAGE, -5, b"com.example:http/a|b?c=|d")  # the separator in a path round-trips
    assert parse_ready(odd.key()) == odd
    start, stop = ready_range(DueKind.LISTED, WHOLE)
    assert start <= key < stop and not start <= ReadyEntry(DueKind.PAGE, 0, KEY).key() < stop


@pytest.mark.parametrize("key", [b"r|l|001|h|x|:http/", b"r|q|001|h|" + b"0" * 20 + b"|:http/",
                                 b"r|l|001|h|" + b"0" * 20 + b"|:http/",  # bucket not the key's
                                 b"r|l|001|h|" + b"0" * 20 + b"|http/", b"r|l|", BUILT_KEY,
                                 b"l|2025-03-01T12:00:05Z|k"])
def test_keys_that_are_not_ready_entries(key: bytes) -> None:
    assert parse_ready(key) is None


@given(st.lists(st.integers(min_value=-(10**19) + 1, max_value=10**19 - 1), min_size=2, max_size=20))
def test_order_text_sorts_best_first_and_round_trips(orders: list[int]) -> None:
    texts = [order_text(order) for order in orders]
    assert all(len(text) == ORDER_DIGITS for text in texts)
    assert sorted(orders, reverse=True) == [order_of_text(text) for text in sorted(texts)]


def test_rank_orders_are_held_within_the_key_digits() -> None:
    assert rank_order(WebPage("u", score=2.0**53), KEY) == 10**19 - 1
    assert rank_order(WebPage("u", score=-(2.0**53)), KEY) == -(10**19) + 1
    assert rank_order(WebPage("u", priority=0.9), KEY) > rank_order(WebPage("u", priority=0.8), KEY)


def ready_keys(store: MemoryStore) -> set[bytes]:
    return {key for key in store.keys(DUE_TABLE) if parse_ready(key) is not None}


_RANK_ROWS = st.builds(WebPage, st.just("u"), score=st.none() | st.sampled_from([0.0, 0.25, 3.0]),
                       priority=st.none() | st.sampled_from([0.1, 0.5, 0.9]),
                       weighted_priority=st.none() | st.sampled_from([0.05, 0.7]), depth=st.none() | st.integers(-1, 3),
                       new_in_sitemap=st.none() | st.just("b1"),
                       fetch_time=st.none() | st.just(datetime(2026, 1, 1, tzinfo=UTC)))


@given(st.lists(st.tuples(_RANK_ROWS, st.binary(min_size=1, max_size=12)), min_size=1, max_size=30))
def test_due_states_of_rows_ranked_alike_order_them_as_their_own_ranks_do(rows: list[tuple[WebPage, bytes]]) -> None:
    """`due_state` ranks the rank cells of alike rows once; each row still gets its own `rank_order` (its key's
    jitter), and a rank cell that does not decode gives no order."""
    for row, key in rows:
        cells = encode(replace(row, next_fetch=datetime(2026, 1, 2, tzinfo=UTC)))
        assert due_state(key, cells).order == rank_order(row, key)
    broken = {**encode(WebPage("u", next_fetch=datetime(2026, 1, 2, tzinfo=UTC))), b"m:sc": b"not a number"}
    assert due_state(KEY, broken).order is None


def test_a_row_due_when_written_goes_to_its_ready_queue_and_moves_with_its_rank() -> None:
    store = MemoryStore(batch_size=2)
    url = "http://www.example.com/a.html"
    put(store, WebPage(url, next_fetch=T1, in_sitemap=True, priority=0.5), now=T1)
    first = ReadyEntry(DueKind.LISTED, rank_order(WebPage(url, priority=0.5), KEY), KEY)
    assert ready_keys(store) == {first.key()} and entries(store) == set()  # due when written: ready, not waiting
    put(store, WebPage(url, weighted_priority=0.9), now=T1)  # quality reweighs it: the entry moves up
    second = ReadyEntry(DueKind.LISTED, rank_order(WebPage(url, priority=0.5, weighted_priority=0.9), KEY), KEY)
    assert second.order > first.order and ready_keys(store) == {second.key()}
    put(store, WebPage(url, next_fetch=T2), now=T1)  # fetched and rescheduled: it waits for T2
    assert ready_keys(store) == set() and entries(store) == {b"l|2025-03-02T00:00:00Z|" + KEY}


def test_candidates_tie_to_the_smaller_row_key() -> None:
    a, b = Candidate(7, b"a", "u", "h", "h"), Candidate(7, b"b", "u", "h", "h")
    assert b < a and sorted([a, b], reverse=True) == [a, b]
    assert Candidate(8, b"z", "u", "h", "h") > a
