"""The row model: encode and decode round trips, and errors that name row and column."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from sitemapcrawl.errors import CellDecodeError
from sitemapcrawl.model.cells import column_names, decode, encode, map_column, readable_cells
from sitemapcrawl.model.codec import format_time, parse_time
from sitemapcrawl.model.webpage import ChangeFreq, DueRow, FetchStatus, HostRow, WebPage


def test_times_are_fixed_width_utc_text() -> None:
    moment = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert format_time(moment) == "2026-01-02T03:04:05Z"
    assert parse_time("2026-01-02T03:04:05Z") == moment
    with pytest.raises(ValueError):
        parse_time("2026-01-02")


def test_full_row_round_trips() -> None:
    page = WebPage(
        url="http://example.com/",
        status=FetchStatus.FETCHED,
        fetch_time=datetime(2026, 1, 2, tzinfo=UTC),
        http_code=200,
        is_sitemap=False,
        in_sitemap=True,
        priority=0.8,
        changefreq=ChangeFreq.DAILY,
        sitemap_problems=("a", "b c"),
        score=1.5,
        depth=2,
        inlinks={"http://example.com/sitemap.xml": "sitemap"},
        content=b"<html>\x00\xff</html>",
    )
    cells = encode(page)
    assert cells[b"f:st"] == b"fetched"
    assert cells[b"f:ft"] == b"2026-01-02T00:00:00Z"
    assert cells[b"s:sm"] == b"0" and cells[b"s:in"] == b"1"
    assert cells[b"il:http://example.com/sitemap.xml"] == b"sitemap"
    assert b"f:et" not in cells  # unset fields write nothing
    assert decode(WebPage, page.url, cells) == page


def test_host_row_round_trips() -> None:
    row = HostRow(origin="http://example.com", crawl_delay=2.5, sitemaps=("http://example.com/s.xml",))
    assert decode(HostRow, row.origin, encode(row)) == row


def test_bad_cell_names_row_and_column() -> None:
    with pytest.raises(CellDecodeError, match=r"'http://x/'.*f:hc.*decimal integer"):
        decode(WebPage, "http://x/", {b"f:hc": b"two hundred"})
    with pytest.raises(CellDecodeError, match=r"f:st"):
        decode(WebPage, "http://x/", {b"f:st": b"sleeping"})
    with pytest.raises(CellDecodeError, match=r"s:sm"):
        decode(WebPage, "http://x/", {b"s:sm": b"yes"})


def test_unknown_columns_are_ignored() -> None:
    assert decode(WebPage, "http://x/", {b"f:zz": b"1"}) == WebPage("http://x/")


def test_column_names_for_fields() -> None:
    assert column_names(WebPage, ["status", "inlinks"]) == [b"f:st", b"il"]
    with pytest.raises(KeyError, match="nope"):
        column_names(WebPage, ["nope"])


def test_map_columns_are_the_columns_encode_writes() -> None:
    """A map field's column for one key, and the prefix of all of them (with the family's own prefix)."""
    assert map_column(WebPage, "inlinks", "http://a.example/s.xml") == b"il:http://a.example/s.xml"
    assert list(encode(WebPage("", inlinks={"http://a.example/s.xml": "x"}))) == [
        map_column(WebPage, "inlinks", "http://a.example/s.xml")]
    assert map_column(DueRow, "members") == b"d:r." and list(encode(DueRow("", members={"k": "1"}))) == [b"d:r.k"]
    with pytest.raises(KeyError):
        map_column(WebPage, "status")


def test_readable_cells_are_json_ready() -> None:
    cells = encode(WebPage("http://x/", http_code=404, content=b"abc", sitemap_problems=("p",)))
    assert readable_cells(WebPage, cells) == {"c:raw": {"bytes": 3}, "f:hc": 404, "s:er": ["p"]}
