"""Normalisation rules: loc, lastmod, changefreq, priority."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sitemap_testing import corpus, locs, read_all

from sitemapcrawl.sitemaps import ChangeFreq
from sitemapcrawl.sitemaps.normalize import (
    normalize_loc,
    parse_changefreq,
    parse_feed_date,
    parse_lastmod,
    parse_priority,
)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("  http://a.example/x  ", "http://a.example/x"),
        ("\n\thttps://a.example/\n", "https://a.example/"),
        ("HTTP://A.example/Path", "http://A.example/Path"),
        ("http://a.example/a b", "http://a.example/a%20b"),
        ("http://a.example/ä?q=é#frag", "http://a.example/%C3%A4?q=%C3%A9#frag"),
        ("http://bücher.example/", "http://xn--bcher-kva.example/"),
        ("http://a.example/already%20done", "http://a.example/already%20done"),
        ("http://[::1]:8080/v6", "http://[::1]:8080/v6"),
        ("ftp://a.example/", None),
        ("/relative/path", None),
        ("http://", None),
        ("http:///no-host", None),
        ("http://a.example:99999/", None),
        ("mailto:someone@example.com", None),
        ("", None),
        (None, None),
    ],
)
def test_normalize_loc(text, expected):
    assert normalize_loc(text) == expected


def test_iri_document_becomes_uris():
    entries, _ = read_all(corpus("iri.xml"), "http://www.example.com/sitemap.xml")
    assert locs(entries) == [
        "http://www.example.com/caf%C3%A9/men%C3%BC?q=cr%C3%A8me%20br%C3%BBl%C3%A9e",
        "http://www.example.com/already%20encoded",
    ]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("2024", datetime(2024, 1, 1, tzinfo=UTC)),
        ("2024-05", datetime(2024, 5, 1, tzinfo=UTC)),
        ("2024-05-06", datetime(2024, 5, 6, tzinfo=UTC)),
        ("2024-05-06T07:08Z", datetime(2024, 5, 6, 7, 8, tzinfo=UTC)),
        ("2024-05-06T07:08+01:00", datetime(2024, 5, 6, 6, 8, tzinfo=UTC)),
        ("2024-05-06T07:08:09Z", datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC)),
        ("2024-05-06T07:08:09.5-02:30", datetime(2024, 5, 6, 9, 38, 9, 500000, tzinfo=UTC)),
        ("2024-05-06T07:08:09.123456789Z", datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)),
        ("2024-05-06T07:08:09+0100", datetime(2024, 5, 6, 6, 8, 9, tzinfo=UTC)),
        ("  2024-05-06T07:08:09z ", datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC)),
        ("2024-05-06T07:08:09", datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC)),
        ("2024-13-01", None),
        ("2024-02-30", None),
        ("yesterday", None),
        ("0001-01-01T00:00:00+01:00", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_lastmod(text, expected):
    assert parse_lastmod(text) == expected


def test_lastmod_is_always_aware_utc():
    value = parse_lastmod("2024-05-06T07:08:09+05:30")
    assert value is not None and value.utcoffset() is not None
    assert value.utcoffset().total_seconds() == 0


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Tue, 10 Aug 2010 20:43:53 GMT", datetime(2010, 8, 10, 20, 43, 53, tzinfo=UTC)),
        ("10 Aug 2010 20:43:53 +0200", datetime(2010, 8, 10, 18, 43, 53, tzinfo=UTC)),
        ("2010-08-10T20:43:53Z", datetime(2010, 8, 10, 20, 43, 53, tzinfo=UTC)),
        ("not a date", None),
    ],
)
def test_parse_feed_date(text, expected):
    assert parse_feed_date(text) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("always", ChangeFreq.ALWAYS),
        (" Hourly ", ChangeFreq.HOURLY),
        ("DAILY", ChangeFreq.DAILY),
        ("weekly", ChangeFreq.WEEKLY),
        ("monthly", ChangeFreq.MONTHLY),
        ("yearly", ChangeFreq.YEARLY),
        ("never", ChangeFreq.NEVER),
        ("fortnightly", None),
        ("day", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_changefreq(text, expected):
    assert parse_changefreq(text) is expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("0", 0.0),
        ("0.5", 0.5),
        (" 1.0 ", 1.0),
        ("1", 1.0),
        (".3", 0.3),
        ("1.01", None),
        ("-0.1", None),
        ("nan", None),
        ("inf", None),
        ("high", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_priority(text, expected):
    assert parse_priority(text) == expected
