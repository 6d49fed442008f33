"""`render.json_line` and `table_row` take shortcuts for speed; they must print what `to_dict` says."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sitemapcrawl.sitemaps import ChangeFreq, PageEntry, SitemapRef, parse_sitemap, render
from sitemapcrawl.sitemaps.model import Alternate, Image, News, NotASitemapError

CORPUS = Path(__file__).parent / "corpus"


def reference_json(entry: PageEntry | SitemapRef) -> str:
    return json.dumps(entry.to_dict(), ensure_ascii=False, separators=(",", ":"))


def reference_row(entry: PageEntry | SitemapRef) -> str:
    data = entry.to_dict()
    priority = "-" if data["priority"] is None else f"{data['priority']:g}"
    return (f"{data['kind']:<7} {data['lastmod'] or '-':<20} {data['changefreq'] or '-':<10} "
            f"{priority:>4}  {data['loc']}")


EDGE_CASES = [
    PageEntry('http://a/"q"\\\u00e9\u2028\x01\x7f'),
    PageEntry("http://a/x", datetime(2024, 1, 2, 3, 4, 5, 123_456, tzinfo=UTC), ChangeFreq.DAILY, 0.5),
    PageEntry("http://a/old", datetime(999, 1, 2, tzinfo=UTC), None, 1.0),
    PageEntry("http://a/tz", datetime(2024, 1, 2, tzinfo=timezone(timedelta(hours=2))), priority=0.1),
    PageEntry("http://a/zero", priority=0),
    PageEntry("http://a/nan", priority=math.nan),
    PageEntry("http://a/big", priority=2.5),
    PageEntry("http://a/img", images=(Image("http://a/i.png"),)),
    PageEntry("http://a/news", news=News("Paper", "en", datetime(2024, 5, 1, tzinfo=UTC), "T")),
    PageEntry("http://a/alt", alternates=(Alternate("de", "http://a/de"),)),
    SitemapRef("http://a/s.xml", datetime(2020, 5, 5, tzinfo=UTC)),
    SitemapRef("http://a/t.xml"),
]


@pytest.mark.parametrize("entry", EDGE_CASES, ids=lambda e: e.loc)
def test_edge_cases_print_like_to_dict(entry: PageEntry | SitemapRef) -> None:
    assert render.json_line(entry) == reference_json(entry)
    assert render.table_row(entry) == reference_row(entry)


@pytest.mark.parametrize("path", sorted(CORPUS.glob("*.*")), ids=lambda p: p.name)
def test_the_corpus_prints_like_to_dict(path: Path) -> None:
    try:
        entries = list(parse_sitemap(path.read_bytes(), "http://127.0.0.1/" + path.name))
    except NotASitemapError:
        return
    for entry in entries:
        assert render.json_line(entry) == reference_json(entry)
        assert render.table_row(entry) == reference_row(entry)


@given(
    loc=st.text(min_size=1, max_size=40),
    lastmod=st.none() | st.datetimes(timezones=st.just(UTC)),
    changefreq=st.none() | st.sampled_from(list(ChangeFreq)),
    priority=st.none() | st.floats(min_value=0, max_value=1),
)
def test_any_plain_page_prints_like_to_dict(loc: str, lastmod: datetime | None, changefreq: ChangeFreq | None,
                                            priority: float | None) -> None:
    entry = PageEntry(loc, lastmod, changefreq, priority)
    assert render.json_line(entry) == reference_json(entry)
    assert render.table_row(entry) == reference_row(entry)
