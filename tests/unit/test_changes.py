"""Sitemap change tracking, pure parts: diff, cells, keys; the generate boost; the audit; lastmod months."""

from __future__ import annotations

import base64
import io
import zlib
from collections import Counter
from datetime import UTC, datetime

import pytest

from sitemapcrawl.errors import CellDecodeError
from sitemapcrawl.jobs.export import COLUMNS, flat_row, split_cells, write_csv
from sitemapcrawl.model.audit import discovered_via, is_multi_listed, is_orphan, is_unlisted, problems
from sitemapcrawl.model.cells import column_names, decode, encode
from sitemapcrawl.model.changes import (
    CHUNK_BYTES,
    CHUNK_LINES,
    PACKED,
    PACKED_85,
    Change,
    ChangeKind,
    Hints,
    change_lines,
    chunks,
    count_changes,
    diff,
    entry_hints,
    history_key,
    pack,
    read_changes,
    read_snapshot,
    sitemap_key_of,
    snapshot_lines,
    unpack,
)
from sitemapcrawl.model.rank import NEW_URL_BOOST, rank
from sitemapcrawl.model.webpage import FetchStatus, WebPage
from sitemapcrawl.report.panels import LASTMOD_MONTHS, lastmod_months
from sitemapcrawl.sitemaps.model import ChangeFreq, PageEntry, SitemapRef
from sitemapcrawl.storage.history import parse_statuses

A, B, C = "http://x.test/a", "http://x.test/b", "http://x.test/c"


def test_diff_names_every_kind_in_url_order() -> None:
    old = {A: Hints("2024-01-01T00:00:00Z", "daily", "0.5"), B: Hints("", "", ""), C: Hints("", "weekly", "1")}
    new = {A: Hints("2024-02-01T00:00:00Z", "hourly", "0.8"), C: Hints("", "weekly", "1"),
           "http://x.test/d": Hints()}
    assert diff(old, new) == [
        Change(ChangeKind.LASTMOD, A, "2024-01-01T00:00:00Z", "2024-02-01T00:00:00Z"),
        Change(ChangeKind.CHANGEFREQ, A, "daily", "hourly"),
        Change(ChangeKind.PRIORITY, A, "0.5", "0.8"),
        Change(ChangeKind.REMOVED, B),
        Change(ChangeKind.ADDED, "http://x.test/d"),
    ]
    assert diff(new, new) == []
    # A hint that appears or disappears is a change from / to nothing.
    assert diff({A: Hints()}, {A: Hints(priority="0.3")}) == [Change(ChangeKind.PRIORITY, A, None, "0.3")]
    assert count_changes(diff(old, new)) == {ChangeKind.ADDED: 1, ChangeKind.REMOVED: 1, ChangeKind.LASTMOD: 1,
                                              ChangeKind.CHANGEFREQ: 1, ChangeKind.PRIORITY: 1}


def test_entry_hints_are_the_text_the_snapshot_compares() -> None:
    entry = PageEntry(A, lastmod=datetime(2024, 3, 1, 8, tzinfo=UTC), changefreq=ChangeFreq.DAILY, priority=1.0)
    assert entry_hints(entry) == Hints("2024-03-01T08:00:00Z", "daily", "1")
    assert entry_hints(PageEntry(A)) == Hints("", "", "")
    assert entry_hints(SitemapRef(A, lastmod=datetime(2024, 3, 2, tzinfo=UTC))) == Hints("2024-03-02T00:00:00Z")


def test_snapshots_and_changes_survive_their_cells_and_cells_stay_small() -> None:
    snapshot = {f"http://x.test/{'p' * 150}/{i:06d}": Hints("2024-01-01T00:00:00Z", "daily", "0.5")
                for i in range(12_000)}
    cells = list(chunks(snapshot_lines(snapshot)))
    assert len(cells) == 3  # 5,000 lines per cell at most
    assert all(len(c.encode()) <= CHUNK_BYTES and c.count("\n") < CHUNK_LINES for c in cells)
    assert read_snapshot(cells) == snapshot
    changes = [Change(ChangeKind.ADDED, A), Change(ChangeKind.LASTMOD, B, None, "2024-01-01T00:00:00Z")]
    assert list(read_changes(chunks(change_lines(changes)))) == changes
    # Long lines cut a cell by bytes before the line count.
    long_lines = [f"{'u' * 400_000}\t\t\t" for _ in range(5)]
    assert [c.count("\n") + 1 for c in chunks(long_lines)] == [2, 2, 1]
    # Garbage lines are skipped, not fatal.
    assert read_snapshot(["not a line\nhttp://x.test/a\t\tdaily\t"]) == {A: Hints("", "daily", "")}
    assert list(read_changes(["bogus\tx\t\t", "added\thttp://x.test/a\t\t"])) == [Change(ChangeKind.ADDED, A)]


def test_packed_snapshot_cells_read_back_beside_plain_ones_and_are_smaller() -> None:
    snapshot = {f"http://x.test/blog/{i % 40}/post-{i:06d}": Hints("2024-01-01T00:00:00Z", "daily", "0.5")
                for i in range(12_000)}
    plain = list(chunks(snapshot_lines(snapshot)))
    packed = [pack(text) for text in plain]
    assert all(text.startswith(PACKED) and text.isascii() for text in packed)
    assert sum(map(len, packed)) * 4 < sum(map(len, plain))  # sorted URLs share most of their text
    assert [unpack(text) for text in packed] == plain
    # A table written before the packing, or packed in base85 (`z85:`) before base64, mixes with one
    # written after: all read.
    in_base85 = PACKED_85 + base64.b85encode(zlib.compress(plain[2].encode("utf-8"))).decode("ascii")
    assert read_snapshot([packed[0], plain[1], in_base85]) == snapshot
    assert unpack("http://x.test/a\t\t\t") == "http://x.test/a\t\t\t"
    with pytest.raises(ValueError, match="does not unpack"):
        read_snapshot([PACKED + "not base64 {{{"])
    with pytest.raises(ValueError, match="does not unpack"):
        read_snapshot([PACKED_85 + "not base85 {{{"])


def test_history_keys_sort_newest_first_under_their_sitemap() -> None:
    key = "test.x:http/sitemap.xml"
    older, newer = history_key(key, 1_700_000_000_000_000), history_key(key, 1_700_000_000_000_001)
    assert newer < older and older == "test.x:http/sitemap.xml 8299999999999999"
    assert sitemap_key_of(newer) == key and newer.startswith(key + " ")


def test_a_new_url_of_a_re_parsed_sitemap_outranks_everything_until_fetched() -> None:
    key = b"test.x:http/a"
    best = WebPage(A, score=50.0, priority=1.0, depth=9)
    new = WebPage(B, new_in_sitemap="20250101000000-abcd", score=0.0, priority=0.0)
    assert rank(new, key) > rank(best, key) + NEW_URL_BOOST / 2
    fetched = WebPage(B, new_in_sitemap="20250101000000-abcd", fetch_time=datetime(2025, 1, 1, tzinfo=UTC))
    assert rank(fetched, key) < 10


def test_audit_definitions() -> None:
    listed = WebPage(A, in_sitemap=True, status=FetchStatus.FETCHED, http_code=200, noindex=True, canonical=B)
    assert problems(listed) == ["noindex", "canonical"]
    # What a page said is kept from its last 2xx answer: a page that answers 404 now is an http-error only.
    gone = WebPage(A, in_sitemap=True, status=FetchStatus.GONE, http_code=404, noindex=True, canonical=B)
    assert problems(gone) == ["http-error"]
    assert problems(WebPage(A, in_sitemap=True, status=FetchStatus.REDIRECT, http_code=301)) == ["redirect"]
    assert problems(WebPage(A, in_sitemap=True, status=FetchStatus.BLOCKED_ROBOTS)) == ["blocked"]
    assert problems(WebPage(A, in_sitemap=True, canonical=A)) == []
    assert problems(WebPage(A, status=FetchStatus.GONE, http_code=404)) == []  # not in a sitemap
    assert is_orphan(WebPage(A, in_sitemap=True)) and not is_orphan(WebPage(A, in_sitemap=True, link_inlinks=2))
    assert is_unlisted(WebPage(A, link_inlinks=1)) and not is_unlisted(WebPage(A, link_inlinks=1, in_sitemap=True))
    assert not is_orphan(WebPage(A, in_sitemap=True, is_sitemap=True))
    assert is_multi_listed(WebPage(A, sitemaps_listing=2)) and not is_multi_listed(WebPage(A, sitemaps_listing=1))
    assert [discovered_via(WebPage(A, **kw)) for kw in ({"is_sitemap": True}, {"seed": True},
                                                       {"in_sitemap": True}, {})] == [
        "sitemap document", "seed", "sitemap", "link"]


def test_export_row_and_csv_values() -> None:
    page = WebPage(A, status=FetchStatus.FETCHED, http_code=200, in_sitemap=True, redirect_to="", canonical="",
                   fetch_time=datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC),
                   inlinks={"http://x.test/s2.xml": "sitemap dp=0 ra=0 b=1",
                            "http://x.test/s1.xml": "sitemap pr=0.5 dp=0 ra=0 b=1"})
    cells = encode(page)
    times, listing = split_cells(cells)
    assert times == {"fetched_at": "2025-01-02T03:04:05Z", "next_fetch_at": None, "lastmod": None}
    assert listing == ["http://x.test/s1.xml", "http://x.test/s2.xml"]
    row = decode(WebPage, A, cells)
    assert row.inlinks is None and row.fetch_time is None and row.http_code == 200  # taken out, the rest decodes
    flat = flat_row(row, {"http://x.test/s1.xml": 0.4, "http://x.test/s2.xml": 0.9}, times, listing)
    assert flat["sitemaps"] == ["http://x.test/s1.xml", "http://x.test/s2.xml"]
    assert flat["sitemap_quality"] == 0.9 and flat["host"] == "x.test" and flat["discovered_via"] == "sitemap"
    assert flat["redirect_to"] is None and flat["canonical"] is None
    out = io.StringIO()
    write_csv(iter([{**dict.fromkeys(COLUMNS), "noindex": True, "canonical": False, "sitemaps": ["a", "b"],
                     "http_code": 3}]), out)
    header, line = out.getvalue().splitlines()
    assert header.split(",") == list(COLUMNS)
    csv_row = dict(zip(COLUMNS, line.split(","), strict=True))
    assert (csv_row["noindex"], csv_row["canonical"], csv_row["sitemaps"], csv_row["http_code"], csv_row["url"]) == (
        "true", "false", "a b", "3", "")
    [fetch_column] = column_names(WebPage, ["fetch_time"])
    with pytest.raises(CellDecodeError, match=fetch_column.decode()):
        split_cells({**encode(page), fetch_column: b"yesterday"})


def test_lastmod_months_cover_every_month_and_sum_the_oldest() -> None:
    assert lastmod_months(Counter()) == []
    assert lastmod_months(Counter({"2023-11": 2, "2024-02": 1})) == [
        ["2023-11", 2], ["2023-12", 0], ["2024-01", 0], ["2024-02", 1]]
    wide = lastmod_months(Counter({"2010-01": 4, "2019-12": 1, "2024-06": 3}))
    assert len(wide) == LASTMOD_MONTHS + 1 and wide[0] == ["before 2019-07", 4] and wide[-1] == ["2024-06", 3]
    assert sum(n for _, n in wide) == 8


def test_statuses_text() -> None:
    assert parse_statuses("fetched=3 gone=1 bad x=y") == {"fetched": 3, "gone": 1}
    assert parse_statuses(None) == {}


def test_export_flags() -> None:
    from sitemapcrawl.errors import UsageError
    from sitemapcrawl.jobs.export import ExportFormat, ExportOptions, Listing

    assert ExportOptions.from_flags("jsonl", not_in_sitemaps=True).listing is Listing.NOT_IN_SITEMAPS
    assert ExportOptions.from_flags("parquet", orphans=True) == ExportOptions(
        listing=Listing.ORPHANS, format=ExportFormat.PARQUET)
    for kwargs, message in (({"fmt": "xls"}, "--format"), ({"fmt": "csv", "status": "nope"}, "--status"),
                            ({"fmt": "csv", "orphans": True, "unlisted": True}, "not both"),
                            ({"fmt": "csv", "unlisted": True, "in_sitemaps": True}, "--unlisted")):
        with pytest.raises(UsageError, match=message):
            ExportOptions.from_flags(**kwargs)  # type: ignore[arg-type]


def test_parquet_flag_without_pyarrow(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from sitemapcrawl.errors import UsageError
    from sitemapcrawl.jobs.export import PARQUET_MISSING, ExportOptions

    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(UsageError) as caught:
        ExportOptions.from_flags("parquet")
    assert str(caught.value) == PARQUET_MISSING and "\n" not in PARQUET_MISSING
