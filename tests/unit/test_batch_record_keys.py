"""The `batchrow` key layout: `<batch>|<kind>|<bucket>|<webpage key>` (listed records:
`<batch>|l|<bucket>|<part>|<sitemap key>`), a split's share one key range; and which record
stands for a row recorded twice."""

from __future__ import annotations

import pytest

from sitemapcrawl.model.linkvalues import Inlink, InlinkKind, format_inlink
from sitemapcrawl.model.splits import BUCKETS, Split, bucket_of
from sitemapcrawl.model.webpage import WebPage
from sitemapcrawl.storage.batchrecords import (
    LISTED,
    MEMBER,
    TOUCHED,
    listed_in_batch,
    listed_record_key,
    listed_sitemap,
    listing_owner,
    page_key,
    record_key,
    record_range,
)
from sitemapcrawl.web import rowkeys

KEYS = [rowkeys.row_key(url).encode() for url in (
    "http://127.0.0.2:8000/", "https://www.example.com/a?b=1", "http://example.org/x|y|z",
    "https://shop.example.net:8443/p/1.html", *(f"http://h{i}.example/{i}" for i in range(300)))]


def test_a_record_key_reads_batch_kind_bucket_and_the_row_key() -> None:
    key = rowkeys.row_key("http://127.0.0.2:8000/page.html").encode()
    record = record_key("20250102030405-1a2b", MEMBER, key)
    assert record == b"20250102030405-1a2b|m|%03d|" % bucket_of(key) + key
    assert record_key("b1", TOUCHED, key).startswith(b"b1|t|")


@pytest.mark.parametrize("key", KEYS[:4])
def test_the_row_key_comes_back_whole_even_with_bars_in_it(key: bytes) -> None:
    assert page_key(record_key("b.1_x-2", MEMBER, key)) == key


@pytest.mark.parametrize("count", [1, 2, 3, 7, 256])
def test_every_record_falls_in_the_range_of_exactly_the_split_holding_its_row(count: int) -> None:
    splits = [Split(k, count) for k in range(count)]
    for key in KEYS:
        for kind in (MEMBER, TOUCHED):
            record = record_key("b1", kind, key)
            inside = [s for s in splits if record_range("b1", kind, s)[0] <= record < record_range("b1", kind, s)[1]]
            assert inside == [s for s in splits if s.holds(key)]


def test_ranges_keep_batches_and_kinds_apart() -> None:
    key = KEYS[1]
    start, stop = record_range("b1", MEMBER)
    assert start <= record_key("b1", MEMBER, key) < stop
    for other in (record_key("b1", TOUCHED, key), record_key("b10", MEMBER, key), record_key("b", MEMBER, key),
                  record_key("b1-2", MEMBER, key), record_key("a1", MEMBER, key)):
        assert not start <= other < stop, other
    # The whole batch's records of a kind: buckets 000 to 255, stop just past them.
    assert (start, stop) == (b"b1|m|000", b"b1|m|%03d" % BUCKETS)


@pytest.mark.parametrize("key", KEYS[:4])
def test_a_listed_record_names_its_sitemap_whole_and_falls_in_its_bucket_range(key: bytes) -> None:
    sitemap = rowkeys.row_key("http://example.org/maps|1/sitemap.xml").encode()
    record = listed_record_key("b1", bucket_of(key), 7, sitemap)
    assert listed_sitemap(record) == sitemap
    assert record == b"b1|l|%03d|" % bucket_of(key) + sitemap + b"|00000007"
    for split in (Split(k, 4) for k in range(4)):
        start, stop = record_range("b1", LISTED, split)
        assert (start <= record < stop) == split.holds(key)


def entry(kind: InlinkKind, batch: str) -> str:
    return format_inlink(Inlink(kind, 0, 0, batch, priority=0.5))


A, B = "http://a.example/sitemap.xml", "http://b.example/sitemap.xml"
KEY_A, KEY_B = (rowkeys.row_key(url).encode() for url in (A, B))


def test_the_least_listed_sitemap_that_listed_the_row_in_this_batch_owns_it() -> None:
    row = WebPage("http://a.example/p", inlinks={A: entry(InlinkKind.SITEMAP, "b1"), B: entry(InlinkKind.SITEMAP, "b1"),
                                                 "http://a.example/": entry(InlinkKind.LINK, "b1")})
    assert listing_owner(row, "b1", {KEY_A, KEY_B}) == min(KEY_A, KEY_B)
    assert listing_owner(row, "b1", {KEY_B}) == KEY_B  # A left no listed record in this split
    assert listing_owner(row, "b1", set()) is None  # its own touched record stands for it


def test_entries_of_other_batches_and_links_leave_the_row_to_its_touched_record() -> None:
    row = WebPage("http://a.example/p", inlinks={A: entry(InlinkKind.SITEMAP, "b0"),
                                                 "http://a.example/": entry(InlinkKind.LINK, "b1")})
    assert listing_owner(row, "b1", {KEY_A}) is None
    child = WebPage("http://a.example/s.xml", inlinks={A: entry(InlinkKind.INDEX, "b1")})
    assert listing_owner(child, "b1", {KEY_A}) == KEY_A  # an index's children are its entries too
    assert listing_owner(WebPage("http://a.example/q", inlinks={A: "not an inlink"}), "b1", {KEY_A}) is None


def test_a_row_is_listed_in_a_batch_by_an_entry_inlink_naming_it() -> None:
    """What stands in for `k:dsc` on a parsed sitemap's entries (parse writes no mark on them)."""
    listed = WebPage("http://a.example/p", inlinks={A: entry(InlinkKind.SITEMAP, "b1")})
    assert listed_in_batch(listed, "b1") and not listed_in_batch(listed, "b2")
    assert listed_in_batch(WebPage("http://a.example/s.xml", inlinks={A: entry(InlinkKind.INDEX, "b1")}), "b1")
    linked = WebPage("http://a.example/q", inlinks={"http://a.example/": entry(InlinkKind.LINK, "b1"),
                                                    A: "not an inlink"})
    assert not listed_in_batch(linked, "b1")  # a link target is marked `k:dsc` by the spread instead
    assert not listed_in_batch(WebPage("http://a.example/r", inlinks={}), "b1")
