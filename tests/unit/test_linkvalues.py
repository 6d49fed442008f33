"""Inlink cell text: round trips for every kind, and what parse_inlink keeps, drops or refuses."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sitemapcrawl.model.linkvalues import Inlink, InlinkKind, format_inlink, parse_inlink
from sitemapcrawl.model.webpage import ChangeFreq

INLINKS = st.builds(
    Inlink,
    kind=st.sampled_from(InlinkKind),
    depth=st.integers(-5, 1000),
    radius=st.integers(-5, 1000),
    batch=st.from_regex(r"[0-9a-z-]{0,20}", fullmatch=True),
    priority=st.none() | st.sampled_from([0.0, 0.1, 0.5, 0.85, 1.0]),
    changefreq=st.none() | st.sampled_from(ChangeFreq),
    lastmod=st.none() | st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31),
                                     timezones=st.just(UTC)).map(lambda d: d.replace(microsecond=0)),
    score=st.none() | st.sampled_from([0.0, 0.25, 1.5, 123456.0]),
    sitemap_candidate=st.booleans(),
    anchor=st.lists(st.from_regex(r"[A-Za-zÀ-ÿ0-9]{1,8}", fullmatch=True), max_size=5).map(" ".join),
    vouched_by=st.lists(st.tuples(st.from_regex(r"[a-z0-9.-]{1,20}", fullmatch=True), st.integers(0, 9)),
                        max_size=3).map(tuple),
    images=st.integers(0, 1000),
    videos=st.integers(0, 10),
    news_date=st.none() | st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31),
                                       timezones=st.just(UTC)).map(lambda d: d.replace(microsecond=0)),
    news_stale=st.booleans(),
    uniform=st.booleans(),
    alternates=st.lists(st.tuples(st.sampled_from(["de", "en-us", "x-default"]),
                                  st.from_regex(r"https?://[a-z0-9.]{1,12}/[a-z0-9/?=&%.-]{0,20}", fullmatch=True)),
                        max_size=4).map(tuple),
)


@given(INLINKS)
def test_every_inlink_round_trips(link: Inlink) -> None:
    assert parse_inlink(format_inlink(link)) == link


def test_the_text_is_the_documented_one() -> None:
    link = Inlink(InlinkKind.LINK, 1, 0, "20250101-ab12", score=0.25, sitemap_candidate=True, anchor="Sitemap")
    assert format_inlink(link) == "link dp=1 ra=0 sc=0.25 sm=1 b=20250101-ab12\tSitemap"
    assert format_inlink(Inlink(InlinkKind.INDEX, 1, 0, "b", lastmod=datetime(5, 1, 2, tzinfo=UTC))) == (
        "index lm=0005-01-02T00:00:00Z dp=1 ra=0 b=b")


def test_a_sitemap_entry_with_extensions_reads_like_the_docs() -> None:
    link = Inlink(InlinkKind.SITEMAP, 1, 0, "b1", lastmod=datetime(2024, 5, 1, tzinfo=UTC), anchor="A title",
                  images=2, videos=1, news_date=datetime(2024, 5, 1, 10, tzinfo=UTC), news_stale=True, uniform=True,
                  alternates=(("de", "http://example.com/de/?a=b"), ("x-default", "http://example.com/")))
    text = format_inlink(link)
    assert text == ("sitemap lm=2024-05-01T00:00:00Z dp=1 ra=0 im=2 vd=1 nd=2024-05-01T10:00:00Z ns=1 lu=1 "
                    "hl:de=http://example.com/de/?a=b hl:x-default=http://example.com/ b=b1\tA title")
    assert parse_inlink(text) == link
    assert parse_inlink("sitemap nd=yesterday") is None and parse_inlink("sitemap im=x") is None


@pytest.mark.parametrize(("text", "expected"), [
    # Unknown keys and words without "=" are skipped; a key given twice keeps the last.
    ("sitemap zz=1 junk dp=2 dp=3", Inlink(InlinkKind.SITEMAP, 3, 0)),
    # Missing depth and radius read as 0.
    ("redirect b=x", Inlink(InlinkKind.REDIRECT, 0, 0, "x")),
    # Priority outside [0, 1] and a score that is not finite are dropped, the rest kept.
    ("sitemap pr=1.5 dp=1", Inlink(InlinkKind.SITEMAP, 1, 0)),
    ("link sc=inf dp=1", Inlink(InlinkKind.LINK, 1, 0)),
    ("link sc=nan", Inlink(InlinkKind.LINK, 0, 0)),
    # Times as the old strptime reading took them, and the short year strftime wrote.
    ("sitemap lm=2024-3-1T0:0:0Z", Inlink(InlinkKind.SITEMAP, 0, 0, lastmod=datetime(2024, 3, 1, tzinfo=UTC))),
    ("index lm=5-01-01T00:00:00Z", Inlink(InlinkKind.INDEX, 0, 0, lastmod=datetime(5, 1, 1, tzinfo=UTC))),
    # The anchor is everything after the first tab.
    ("link dp=1\tA\tB", Inlink(InlinkKind.LINK, 1, 0, anchor="A\tB")),
])
def test_what_parse_inlink_keeps(text: str, expected: Inlink) -> None:
    assert parse_inlink(text) == expected


@pytest.mark.parametrize("text", [
    "", " ", "\tanchor", "Sitemap dp=1", "sitemaps dp=1", "sitemap dp=1.5", "sitemap ra=x", "sitemap pr=high",
    "link sc=", "sitemap cf=Daily", "sitemap cf=", "sitemap lm=2024-03-01", "sitemap lm=2024-03-01T00:00:00+00:00",
])
def test_what_parse_inlink_refuses(text: str) -> None:
    assert parse_inlink(text) is None
