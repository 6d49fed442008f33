"""The row codec: what it stores (byte for byte as before), what it reads, and what it refuses.

The cells below were written by the codec as it was before it stopped using
strptime/strftime (main at 18717e7): the new one must write the same bytes
and read them back to the same row.
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sitemapcrawl.errors import CellDecodeError, FieldNotReadError
from sitemapcrawl.model.cells import (
    NotRead,
    column_names,
    decode,
    encode,
    fields_held,
    fields_set,
    unread,
    was_read,
    with_fields,
)
from sitemapcrawl.model.codec import TIME_FORMAT, format_time, parse_time
from sitemapcrawl.model.webpage import (
    BatchRow,
    ChangeFreq,
    FetchStatus,
    HostRow,
    QualityState,
    RobotsStatus,
    SitemapSource,
    WebPage,
)

T = datetime(2024, 2, 29, 23, 59, 58, tzinfo=UTC)

# Every field set, as the old codec got them.
PAGE = WebPage(
    "http://example.com/a?b=1", status=FetchStatus.NOT_MODIFIED, fetch_time=T,
    prev_fetch_time=datetime(1999, 12, 31, tzinfo=UTC),
    next_fetch=datetime(2030, 1, 1, 0, 0, 1, tzinfo=timezone(timedelta(hours=2))), fetch_interval=86400,
    retries=0, http_code=304, content_type="text/html; charset=utf-8", etag='"abc"',
    last_modified="Thu, 29 Feb 2024 23:59:58 GMT", signature="ab" * 16, content_changed=T,
    redirect_to="http://example.com/b", error="timeout: 10 s", truncated=False, is_sitemap=True, in_sitemap=True,
    sitemap_source=SitemapSource.ROBOTS, priority=0.8, changefreq=ChangeFreq.WEEKLY,
    lastmod=datetime(2024, 1, 1, tzinfo=UTC), sitemap_type="urlset", sitemap_entries=50000, dropped_scope=1,
    dropped_filter=2, dropped_limit=3, sitemap_problems=("p1", "p 2"), parse_time=T,
    blacklisted="quality: too many errors", cross_submitters=("http://other.example/robots.txt",), quality=0.75,
    quality_state=QualityState.DEMOTED, quality_valid=1.0, quality_fetch=0.5, quality_lastmod=0.25,
    quality_duplicates=1.0, quality_errors=0.0, quality_freshness=0.125, quality_notes=("n1",), quality_time=T,
    weighted_priority=0.6, score=-1.5, depth=3, radius=-1, seed=True, batch_id="20240229235958-ab12", fetch_split=7,
    canonical="http://example.com/a", noindex=True, nofollow=False, inject_mark=T, generate_mark="g",
    fetch_mark="f", parse_mark="p", update_mark="u", discover_mark="d", merge_mark="m",
    inlinks={"http://example.com/sitemap.xml": "sitemap pr=0.8 cf=weekly lm=2024-01-01T00:00:00Z dp=3 ra=0 b=g",
             "http://é.example/": "link dp=1 ra=0 sc=0.5 b=g\tÜber"},
    outlinks={"http://example.com/c": "a\tC"}, content=b"<html>\x00\xff</html>")
HOST = HostRow(
    "http://example.com", robots_fetch_time=T, robots_status=RobotsStatus.ERROR, robots_http_code=503,
    robots_retry_at=T, robots_error="HTTP 503", robots_text="User-agent: *\nDisallow: /x\n", robots_truncated=True,
    crawl_delay=2.5, sitemaps=("http://example.com/s1.xml", "http://example.com/s2.xml"), sitemaps_found=2,
    sitemaps_new=1)

OLD_PAGE_CELLS = {
    b"c:raw": b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03"
              b"\xb3\xc9(\xc9\xcd\xb1c\xf8o\xa3\x0ff\x00\x00ZC\n\xbb\x0f\x00\x00\x00",
    b"f:chg": b"2024-02-29T23:59:58Z",
    b"f:ct": b"text/html; charset=utf-8",
    b"f:er": b"timeout: 10 s",
    b"f:et": b'"abc"',
    b"f:fi": b"86400",
    b"f:ft": b"2024-02-29T23:59:58Z",
    b"f:hc": b"304",
    b"f:lm": b"Thu, 29 Feb 2024 23:59:58 GMT",
    b"f:nft": b"2029-12-31T22:00:01Z",
    b"f:pft": b"1999-12-31T00:00:00Z",
    b"f:rd": b"http://example.com/b",
    b"f:rt": b"0",
    b"f:sig": b"abababababababababababababababab",
    b"f:st": b"not_modified",
    b"f:tr": b"0",
    b"il:http://example.com/sitemap.xml": b"sitemap pr=0.8 cf=weekly lm=2024-01-01T00:00:00Z dp=3 ra=0 b=g",
    b"il:http://\xc3\xa9.example/": b"link dp=1 ra=0 sc=0.5 b=g\t\xc3\x9cber",
    b"k:dsc": b"d",
    b"k:fch": b"f",
    b"k:gen": b"g",
    b"k:inj": b"2024-02-29T23:59:58Z",
    b"k:mrg": b"m",
    b"k:prs": b"p",
    b"k:upd": b"u",
    b"m:b": b"20240229235958-ab12",
    b"m:can": b"http://example.com/a",
    b"m:dp": b"3",
    b"m:nof": b"0",
    b"m:noi": b"1",
    b"m:pa": b"7",
    b"m:ra": b"-1",
    b"m:sc": b"-1.5",
    b"m:sd": b"1",
    b"ol:http://example.com/c": b"a\tC",
    b"s:bl": b"quality: too many errors",
    b"s:cf": b"weekly",
    b"s:cs": b"http://other.example/robots.txt",
    b"s:er": b"p1\np 2",
    b"s:in": b"1",
    b"s:lm": b"2024-01-01T00:00:00Z",
    b"s:n": b"50000",
    b"s:pr": b"0.8",
    b"s:pt": b"2024-02-29T23:59:58Z",
    b"s:q": b"0.75",
    b"s:qdu": b"1.0",
    b"s:qer": b"0.0",
    b"s:qf": b"0.5",
    b"s:qfr": b"0.125",
    b"s:qlm": b"0.25",
    b"s:qn": b"n1",
    b"s:qst": b"demoted",
    b"s:qt": b"2024-02-29T23:59:58Z",
    b"s:qv": b"1.0",
    b"s:sm": b"1",
    b"s:src": b"robots",
    b"s:ty": b"urlset",
    b"s:wp": b"0.6",
    b"s:xf": b"2",
    b"s:xl": b"3",
    b"s:xs": b"1",
}
OLD_HOST_CELLS = {
    b"n:sm": b"2",
    b"n:smn": b"1",
    b"r:cd": b"2.5",
    b"r:er": b"HTTP 503",
    b"r:ft": b"2024-02-29T23:59:58Z",
    b"r:hc": b"503",
    b"r:nft": b"2024-02-29T23:59:58Z",
    b"r:sm": b"http://example.com/s1.xml\nhttp://example.com/s2.xml",
    b"r:st": b"error",
    b"r:tr": b"1",
    b"r:txt": b"User-agent: *\nDisallow: /x\n",
}


def test_every_field_encodes_to_the_bytes_the_old_codec_wrote() -> None:
    assert encode(PAGE) == OLD_PAGE_CELLS
    assert encode(HOST) == OLD_HOST_CELLS


def test_cells_the_old_codec_wrote_decode_to_the_same_row() -> None:
    utc_page = dataclasses.replace(PAGE, next_fetch=datetime(2029, 12, 31, 22, 0, 1, tzinfo=UTC))
    assert decode(WebPage, PAGE.url, OLD_PAGE_CELLS) == utc_page
    assert decode(HostRow, HOST.origin, OLD_HOST_CELLS) == HOST
    decoded = decode(WebPage, PAGE.url, OLD_PAGE_CELLS)
    assert decoded.fetch_time is not None and decoded.fetch_time.tzinfo is UTC


def test_a_row_with_nothing_set_writes_nothing_and_reads_as_none() -> None:
    assert encode(WebPage("http://x/")) == {}
    empty = decode(WebPage, "http://x/", {})
    assert empty == WebPage("http://x/") and empty.status is None and empty.inlinks is None


def test_edge_values_round_trip() -> None:
    page = WebPage(
        "http://x/", content_type="", error="naïve — ünïcode ✓", http_code=0, retries=-3,
        fetch_interval=10**15, priority=0.0, score=-(2.0**53), quality=1e-300, truncated=False, seed=False,
        sitemap_problems=("only",), content=b"", fetch_time=datetime(1, 1, 1, tzinfo=UTC),
        next_fetch=datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC),
        inlinks={"http://x/a b?c=d&e#f": "link dp=0 ra=0", "http://日本.example/": ""})
    cells = encode(page)
    assert cells[b"f:ct"] == b"" and cells[b"f:tr"] == b"0" and cells[b"f:ft"] == b"0001-01-01T00:00:00Z"
    assert cells[b"f:fi"] == b"1000000000000000" and cells[b"m:sc"] == b"-9007199254740992.0"
    assert decode(WebPage, page.url, cells) == page


@pytest.mark.parametrize(("column", "raw"), [
    (b"m:sc", b"inf"), (b"m:sc", b"nan"), (b"m:sc", b"1e300"), (b"s:pr", b"nan"), (b"s:pr", b"1.5"),
    (b"m:dp", b"99999999999999999999"), (b"m:dp", b"1001"), (b"m:ra", b"-1001"), (b"f:fi", b"9" * 5000),
    (b"m:pa", b"4096"), (b"s:lm", b"0000-01-01T00:00:00Z"), (b"f:nft", b"2026-02-31T00:00:00Z"),
])
def test_a_stored_value_out_of_range_is_an_unreadable_cell(column: bytes, raw: bytes) -> None:
    with pytest.raises(CellDecodeError, match=column.decode()):
        decode(WebPage, "http://x/", {column: raw})


def test_bounded_columns_read_their_bounds() -> None:
    cells = {b"m:dp": b"1000", b"m:ra": b"0", b"m:pa": b"4095", b"s:pr": b"1.0", b"f:fi": b"9007199254740992"}
    row = decode(WebPage, "http://x/", cells)
    assert (row.depth, row.radius, row.fetch_split, row.priority, row.fetch_interval) == (1000, 0, 4095, 1.0, 2**53)
    assert decode(BatchRow, "b", {b"b:np": b"4096"}).fetch_splits == 4096
    with pytest.raises(CellDecodeError, match="b:np"):
        decode(BatchRow, "b", {b"b:np": b"0"})


def test_empty_lines_and_maps_are_written_as_nothing_or_empty() -> None:
    cells = encode(WebPage("http://x/", sitemap_problems=(), inlinks={}))
    assert cells == {b"s:er": b""}
    assert decode(WebPage, "http://x/", cells).sitemap_problems == ()


def test_times_are_stored_in_utc_to_the_second() -> None:
    berlin = timezone(timedelta(hours=1))
    assert format_time(datetime(2026, 3, 1, 0, 30, 0, 999_999, tzinfo=berlin)) == "2026-02-28T23:30:00Z"
    assert format_time(datetime(2026, 3, 1, 0, 30)) == "2026-03-01T00:30:00Z"  # naive is UTC
    assert format_time(datetime(999, 1, 2, 3, 4, 5, tzinfo=UTC)) == "0999-01-02T03:04:05Z"


def test_time_text_memo_keeps_instants_apart() -> None:
    berlin = ZoneInfo("Europe/Berlin")
    # 02:30 happens twice on 2026-10-25 in Berlin; the two compare equal but are an hour apart.
    first, second = datetime(2026, 10, 25, 2, 30, tzinfo=berlin), datetime(2026, 10, 25, 2, 30, fold=1, tzinfo=berlin)
    assert first == second
    assert (format_time(first), format_time(second)) == ("2026-10-25T00:30:00Z", "2026-10-25T01:30:00Z")
    many = [T + timedelta(seconds=i) for i in range(10_000)]  # past the memo's size
    assert [format_time(m) for m in many] == [format_time(m) for m in many]
    assert format_time(many[-1]) == "2024-03-01T02:46:37Z"
    assert format_time(T.replace(tzinfo=None)) == format_time(T) == "2024-02-29T23:59:58Z"


OFFSETS = st.builds(timezone, st.timedeltas(min_value=timedelta(hours=-23, minutes=-59),
                                             max_value=timedelta(hours=23, minutes=59)))


@given(st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=OFFSETS))
def test_time_text_round_trips_and_sorts_like_the_time(moment: datetime) -> None:
    text = format_time(moment)
    assert len(text) == 20 and text.endswith("Z")
    back = parse_time(text)
    assert back == moment.astimezone(UTC).replace(microsecond=0) and back.tzinfo is UTC
    later = moment + timedelta(seconds=1)
    assert format_time(later) > text


def _old_parse_time(text: str) -> datetime:
    return datetime.strptime(text, TIME_FORMAT).replace(tzinfo=UTC)


TIME_TEXTS = [
    "2026-01-02T03:04:05Z", "2026-1-2T3:4:5Z", "2026-01-02T03:04:05", "2026-01-02", "2026-01-02 03:04:05Z",
    "2026-01-02T03:04:05+00:00", "2026-01-02T03:04:05.123Z", "2026-01-02T030405.1Z", "20260102T030405Z",
    "2026-02-30T03:04:05Z", "2026-01-02T24:00:00Z", "2026-01-02T03:04:60Z", "+026-01-02T03:04:05Z",
    "2026-01-02t03:04:05z", " 2026-01-02T03:04:05Z", "2026-01-02T03:04:05Z ", "", "Z", "0000-01-01T00:00:00Z",
    "٢٠٢٦-01-02T03:04:05Z",
]


@pytest.mark.parametrize("text", TIME_TEXTS)
def test_parse_time_reads_what_strptime_read_and_refuses_what_it_refused(text: str) -> None:
    try:
        expected: datetime | None = _old_parse_time(text)
    except ValueError:
        expected = None
    if expected is None:
        with pytest.raises(ValueError):
            parse_time(text)
    else:
        assert parse_time(text) == expected


@given(st.text(alphabet="0123456789-T:Z +.", max_size=24))
def test_parse_time_agrees_with_strptime_on_any_text(text: str) -> None:
    try:
        expected: datetime | None = _old_parse_time(text)
    except ValueError:
        expected = None
    try:
        got: datetime | None = parse_time(text)
    except ValueError:
        got = None
    if got is not None and expected is None:
        # The one widening: the short year strftime wrote for years before 1000.
        assert text.index("-") < 4 and format_time(got).endswith(text[text.index("-"):])
    else:
        assert got == expected


def test_the_short_year_strftime_wrote_is_read_and_rewritten_padded() -> None:
    # format_time used strftime("%Y..."), which writes year 5 as "5": strptime could not read it back.
    row = decode(WebPage, "http://x/", {b"s:lm": b"5-01-01T00:00:00Z", b"f:ft": b"999-12-31T23:59:59Z"})
    assert row.lastmod == datetime(5, 1, 1, tzinfo=UTC)
    assert row.fetch_time == datetime(999, 12, 31, 23, 59, 59, tzinfo=UTC)
    assert encode(row) == {b"s:lm": b"0005-01-01T00:00:00Z", b"f:ft": b"0999-12-31T23:59:59Z"}


@pytest.mark.parametrize(("cells", "column", "kind"), [
    ({b"f:hc": b"1.5"}, "f:hc", "decimal integer"),
    ({b"f:hc": b"\xd9\xa1"}, "f:hc", "decimal integer"),
    ({b"m:sc": b"high"}, "m:sc", "decimal number"),
    ({b"f:ft": b"2026-01-02"}, "f:ft", "UTC time"),
    ({b"f:ft": b"2026-01-02T03:04:05+01:00"}, "f:ft", "UTC time"),
    ({b"f:ft": b"2026-01-02T03:04:05\xffZ"}, "f:ft", "UTC time"),
    ({b"f:st": b"Fetched"}, "f:st", "one of unfetched"),
    ({b"s:qst": b""}, "s:qst", "one of ok"),
    ({b"s:sm": b"2"}, "s:sm", "1 \\(0 = explicitly not\\)"),
    ({b"f:ct": b"\xff"}, "f:ct", "text"),
    ({b"c:raw": b"not gzip"}, "c:raw", "gzip"),
])
def test_a_bad_cell_names_row_column_and_format(cells: dict[bytes, bytes], column: str, kind: str) -> None:
    with pytest.raises(CellDecodeError, match=rf"'http://x/', column {column}: .* is not {kind}"):
        decode(WebPage, "http://x/", cells)


def test_a_map_cell_that_is_not_utf8_names_its_column() -> None:
    with pytest.raises(CellDecodeError, match=r"column il:http://a/: not UTF-8"):
        decode(WebPage, "http://x/", {b"il:http://a/": b"\xff"})


# ------------------------------------------------------- fields not read --

def test_a_field_not_asked_for_is_a_value_that_fails_loudly() -> None:
    fields = ["status", "next_fetch", "inlinks"]
    row = decode(WebPage, "http://x/", {b"f:st": b"fetched", b"m:dp": b"2"}, fields)
    assert row.status is FetchStatus.FETCHED
    assert row.next_fetch is None and row.inlinks is None  # asked for, not stored
    assert row.depth == 2  # not asked for, but the cell came: it is read
    assert isinstance(row.score, NotRead) and repr(row.score) == "<WebPage.score not read>"
    with pytest.raises(FieldNotReadError, match=r"WebPage\.score was not read: add 'score'"):
        _ = row.score or 0.0
    with pytest.raises(FieldNotReadError, match="radius"):
        was_read(row.radius)
    assert "radius" in unread(row) and not {"status", "next_fetch", "inlinks", "depth", "url"} & unread(row)
    assert type(row) is WebPage and row.url == "http://x/"
    assert repr(row) == "WebPage(url='http://x/', status=<FetchStatus.FETCHED: 'fetched'>, depth=2)"
    assert encode(row) == {b"f:st": b"fetched", b"m:dp": b"2"}
    assert row == decode(WebPage, "http://x/", {b"f:st": b"fetched", b"m:dp": b"2"}, fields)
    assert row != decode(WebPage, "http://x/", {b"f:st": b"fetched", b"m:dp": b"2"})  # read whole: None
    assert pickle.loads(pickle.dumps(row)) == row and copy.deepcopy(row) == row


def test_a_partly_decoded_row_can_be_replaced_and_stays_partial() -> None:
    row = decode(WebPage, "http://x/", {b"f:st": b"fetched"}, ["status", "inlinks"])
    replaced = dataclasses.replace(row, inlinks={"http://a/": "link"})
    assert replaced.status is FetchStatus.FETCHED and replaced.inlinks == {"http://a/": "link"}
    assert replaced.url == "http://x/" and type(replaced) is WebPage
    assert dataclasses.fields(replaced) == dataclasses.fields(WebPage)
    with pytest.raises(FieldNotReadError, match="fetch_time"):
        bool(replaced.fetch_time)
    assert encode(replaced) == {b"f:st": b"fetched", b"il:http://a/": b"link"}
    assert with_fields(row, {"inlinks": {"http://a/": "link"}}) == replaced
    with pytest.raises(KeyError, match="nope"):
        with_fields(row, {"nope": 1})


def test_a_family_asked_for_whole_brings_its_columns() -> None:
    # HBase, given a family and then one of its columns, would narrow the family to that column.
    assert column_names(HostRow, ["robots_status", "counts", "count_cells", "audit_samples"]) == [b"r:st", b"n"]
    assert column_names(WebPage, ["quality_evidence", "status", "quality_evidence_cells"]) == [b"f:st", b"s"]
    assert column_names(WebPage, ["status", "score", "status"]) == [b"f:st", b"m:sc"]


def test_the_fields_asked_for_are_checked() -> None:
    with pytest.raises(KeyError, match="nope"):
        decode(WebPage, "http://x/", {}, ["status", "nope"])
    assert column_names(WebPage, ["status"]) == [b"f:st"]


def test_host_rows_fail_loudly_too() -> None:
    row = decode(HostRow, "http://x", {b"r:st": b"ok"}, ["robots_status", "origin"])
    assert row.robots_status is RobotsStatus.OK and row.origin == "http://x"
    with pytest.raises(FieldNotReadError):
        bool(row.crawl_delay)


def test_rows_decoded_without_fields_read_every_absent_field_as_none() -> None:
    row = decode(WebPage, "http://x/", {b"f:st": b"fetched"})
    assert row.score is None and type(row) is WebPage


# --------------------------------------------------------- construction --

def test_constructed_rows_equal_the_dataclass_way() -> None:
    fast = WebPage("http://x/", status=FetchStatus.GONE, depth=1)
    assert fast == dataclasses.replace(fast)  # replace goes through the dataclass's own __init__
    assert fast.score is None and fast.depth == 1
    assert WebPage("http://x/", FetchStatus.GONE) == WebPage("http://x/", status=FetchStatus.GONE)
    assert WebPage(url="http://x/", depth=1) == WebPage("http://x/", depth=1)
    with pytest.raises(TypeError, match="nope"):
        WebPage("http://x/", nope=1)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        WebPage()  # type: ignore[call-arg]
    assert fields_set(fast) == {"status": FetchStatus.GONE, "depth": 1} and fields_held(fast) == 3
    assert not unread(fast)
    assert repr(fast) == "WebPage(url='http://x/', status=<FetchStatus.GONE: 'gone'>, depth=1)"
