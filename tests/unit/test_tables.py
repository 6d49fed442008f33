"""The one decode policy of `tables`: rows decoded with the fields asked, unreadable rows counted and left out."""

from __future__ import annotations

import logging

import pytest

from sitemapcrawl.errors import FieldNotReadError
from sitemapcrawl.model.cells import encode
from sitemapcrawl.model.webpage import FetchStatus, HistoryRow, HostRow, WebPage
from sitemapcrawl.storage.hosts import origin_key
from sitemapcrawl.storage.tables import Unreadable, decode_host, history_rows, hosts, pages
from sitemapcrawl.web.rowkeys import row_key

GOOD = WebPage("http://a.test/x", status=FetchStatus.FETCHED, score=2.0)


def test_pages_decode_good_rows_and_count_the_rest(caplog: pytest.LogCaptureFixture) -> None:
    scan = [
        (row_key(GOOD.url).encode(), encode(GOOD)),
        (b"no key here", encode(GOOD)),                       # not a URL key
        (b"\xff\xfe", encode(GOOD)),                          # not UTF-8
        (row_key("http://a.test/y").encode(), {b"f:st": b"exploded"}),  # not a status
        (row_key("http://a.test/z").encode(), {b"m:sc": b"1.5"}),
    ]
    unreadable = Unreadable()
    with caplog.at_level(logging.WARNING, logger="sitemapcrawl.storage.tables"):
        got = list(pages(scan, "somejob", unreadable, ["status", "score"]))
    assert [(key, row.url, row.status, row.score) for key, row in got] == [
        (b"test.a:http/x", "http://a.test/x", FetchStatus.FETCHED, 2.0),
        (b"test.a:http/z", "http://a.test/z", None, 1.5),
    ]
    assert unreadable.rows == 3
    assert [r.getMessage().split(":")[0] for r in caplog.records] == ["somejob"] * 3
    assert "f:st" in caplog.records[-1].getMessage()


def test_a_field_not_asked_for_fails_loudly() -> None:
    cells = {b"f:st": b"fetched"}  # what a scan of the `status` column brings
    (_key, row), = pages([(row_key(GOOD.url).encode(), cells)], "job", Unreadable(), ["status", "depth"])
    assert row.status is FetchStatus.FETCHED and row.depth is None  # asked for, not stored: None
    with pytest.raises(FieldNotReadError, match="score"):
        _ = row.score or 0.0
    # without fields, an absent field reads as None (a repair tool's whole-row read)
    (_key, whole), = pages([(row_key(GOOD.url).encode(), {b"f:st": b"fetched"})], "job", Unreadable())
    assert whole.score is None


@pytest.mark.parametrize("origin", ["http://a.test", "https://www.a.test:8443", "http://127.0.0.2:8700",
                                    "http://[::1]:8080", "http://xn--bcher-kva.test"])
def test_host_keys_round_trip(origin: str) -> None:
    assert decode_host(origin_key(origin), {}).origin == origin


def test_host_rows_are_origins_and_politeness_rows_are_not() -> None:
    assert decode_host(b"test.a:http:8080", encode(HostRow("x", crawl_delay=2.0))).origin == "http://a.test:8080"
    unreadable = Unreadable()
    scan = [
        (b"test.a:https", encode(HostRow("x", crawl_delay=1.0))),
        (b"test.b:http", {b"r:cd": b"slow"}),
        (b"~ip:127.0.0.1", {b"n:sd": b"0.0"}),
    ]
    got = [(row.origin, row.crawl_delay) for _, row in hosts(scan, "job", unreadable, ["crawl_delay"])]
    assert got == [("https://a.test", 1.0)]
    assert unreadable.rows == 2


def test_history_rows() -> None:
    key = b"a.test:http/sitemap.xml 7974"
    unreadable = Unreadable()
    scan = [(key, encode(HistoryRow("k", entries=3))), (key + b"1", {b"h:n": b"three"})]
    got = list(history_rows(scan, "job", unreadable, ["entries"]))
    assert [(row.key, row.entries) for _, row in got] == [(key.decode(), 3)] and unreadable.rows == 1
    with pytest.raises(FieldNotReadError):
        bool(got[0][1].added)
