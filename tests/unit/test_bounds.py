"""The bounds of issue 27 as pure logic: shares, dates, CSV cells, JSON, batch states, months."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime

import pytest

from sitemapcrawl.batch.registry import BatchState
from sitemapcrawl.config import Settings
from sitemapcrawl.errors import UsageError
from sitemapcrawl.fetcher.model import parse_split
from sitemapcrawl.jobs.export import csv_text
from sitemapcrawl.jobs.inject import SeedLineError, parse_seed_line
from sitemapcrawl.model.splits import Split, parse_share
from sitemapcrawl.report.panels import lastmod_months
from sitemapcrawl.safetext import json_text, printable, printable_json
from sitemapcrawl.sitemaps import PageEntry, SitemapRef, parse_sitemap
from sitemapcrawl.sitemaps.model import ProblemKind
from sitemapcrawl.sitemaps.render import json_line, table_row
from sitemapcrawl.sitemaps.times import format_time
from sitemapcrawl.web.rules import UrlRules

YEAR_ONE = datetime(1, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize("text", ["0/" + "9" * 5000, "9" * 5000 + "/2", "0/99999999999999999999", "0/4097",
                                  "4/4", "-1/2", "a/b", "0", "０/２"])
def test_a_share_out_of_bounds_is_one_usage_error(text: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_share(text, "--partition", 4096)
    assert "\n" not in str(caught.value) and len(str(caught.value)) < 120


def test_shares_at_their_bounds_are_read() -> None:
    assert parse_split("4095/4096") == (4095, 4096)
    assert parse_split(" 0 / 1 ") == (0, 1)
    assert Split.parse("255/256") == Split(255, 256)
    with pytest.raises(UsageError, match="N <= 256"):
        Split.parse("0/257")


@pytest.mark.parametrize(("moment", "text"), [
    (YEAR_ONE, "0001-01-01T00:00:00Z"),
    (datetime(999, 12, 31, 23, 59, 59, tzinfo=UTC), "0999-12-31T23:59:59Z"),
    (datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC), "9999-12-31T23:59:59Z"),
])
def test_every_year_is_zero_padded_in_the_engine_output(moment: datetime, text: str) -> None:
    assert format_time(moment) == text
    entry = PageEntry("http://127.0.0.1/a", moment)
    assert json.loads(json_line(entry))["lastmod"] == text == entry.to_dict()["lastmod"]
    assert json_line(entry) == json.dumps(entry.to_dict(), ensure_ascii=False, separators=(",", ":"))
    assert text in table_row(entry)
    assert SitemapRef("http://127.0.0.1/s.xml", moment).to_dict()["lastmod"] == text


def test_lastmods_outside_years_one_to_9999_are_counted_invalid() -> None:
    body = b"""<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<url><loc>http://127.0.0.1/a</loc><lastmod>0001-01-01</lastmod></url>
<url><loc>http://127.0.0.1/b</loc><lastmod>0000-01-01</lastmod></url>
<url><loc>http://127.0.0.1/c</loc><lastmod>10000-01-01</lastmod></url>
<url><loc>http://127.0.0.1/d</loc><lastmod>0001-01-01T00:30:00+01:00</lastmod></url>
<url><loc>http://127.0.0.1/e</loc><lastmod>2026-02-30</lastmod></url>
</urlset>"""
    document = parse_sitemap(body, "http://127.0.0.1/sitemap.xml")
    entries = list(document)
    assert [e.lastmod for e in entries] == [YEAR_ONE, None, None, None, None]
    assert dict(document.report.problem_counts)[ProblemKind.INVALID_LASTMOD] == 4
    assert any("4 entries with an invalid lastmod" in p for p in document.report.problems)


@pytest.mark.parametrize("text", ["=cmd|' /C calc'!A0", "+SUM(1+1)", "-2+3", "@SUM(1+1)", "\tx", "\rx"])
def test_csv_cells_that_start_a_formula_are_neutralised(text: str) -> None:
    assert csv_text(text) == "'" + printable(text)


def test_csv_cells_escape_control_characters_and_leave_plain_text() -> None:
    assert csv_text("text/html") == "text/html"
    assert csv_text("a\x1b]0;pwned\x07b") == "a\\x1b]0;pwned\\x07b"
    assert csv_text("=1\x1b") == "'=1\\x1b"
    assert csv_text("\rx") == "'\\x0dx"


def test_json_output_is_always_valid_json() -> None:
    assert json_text({"p": float("nan"), "q": [float("inf"), 1.5], "r": (-float("inf"),)}) == \
        '{"p": null, "q": [null, 1.5], "r": [null]}'
    assert json_text({"p": 0.5}, sort_keys=True) == '{"p": 0.5}'
    assert printable_json({"t": "\u202e", "n": float("nan")}) == '{"t": "\\u202e", "n": null}'


def test_the_fetched_partitions_are_counted_from_the_marks() -> None:
    state = BatchState("b", fetch_splits=4096, done={"fetch.0/4096": "t", "fetch.7/4096": "t", "fetch.1/2": "t"})
    assert state.fetched == 2
    assert state.phase() == "fetching (2 of 4096 fetch splits done)"
    whole = BatchState("b", fetch_splits=4096, done={"fetch": "t"})
    assert whole.fetched == 4096 and whole.phase().startswith("fetched, not parsed")


def test_lastmod_months_from_year_one_and_bad_labels() -> None:
    assert lastmod_months(Counter({"0001-01": 2})) == [["0001-01", 2]]
    assert lastmod_months(Counter({"1-01": 1, "0000-01": 1, "2026-13": 1, "x": 1})) == []
    months = lastmod_months(Counter({"0001-01": 1, "2026-01": 1}))
    assert months[0] == ["before 2021-02", 1] and months[-1] == ["2026-01", 1]


@pytest.mark.parametrize(("pair", "message"), [
    ("depth=99999999999999999999", "outside 0..1_000"), ("radius=1001", "outside 0..1_000"),
    ("fetchInterval=" + "9" * 5000, "not a number"), ("fetchInterval=0", "outside 1..315_360_000"),
    ("score=1e300", "outside -9_007_199_254_740_992..9_007_199_254_740_992"),
])
def test_seed_numbers_out_of_range_are_refused(pair: str, message: str) -> None:
    with pytest.raises(SeedLineError, match=message) as caught:
        parse_seed_line(f"http://127.0.0.1/\t{pair}", 1, UrlRules.from_settings(Settings()))
    assert caught.value.reason == "bad metadata"
