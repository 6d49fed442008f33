"""The `batchrow` key layout: `<batch>|<kind>|<bucket>|<webpage key>`, a split's share one key range."""

from __future__ import annotations

import pytest

from sitemapcrawl import urls
from sitemapcrawl.splits import BUCKETS, Split, bucket_of
from sitemapcrawl.tables import MEMBER, TOUCHED, page_key, record_key, record_range

KEYS = [urls.row_key(url).encode() for url in (
    "http://127.0.0.2:8000/", "https://www.example.com/a?b=1", "http://example.org/x|y|z",
    "https://shop.example.net:8443/p/1.html", *(f"http://h{i}.example/{i}" for i in range(300)))]


def test_a_record_key_reads_batch_kind_bucket_and_the_row_key() -> None:
    key = urls.row_key("http://127.0.0.2:8000/page.html").encode()
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
