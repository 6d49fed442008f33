"""Seed lines and how a seed meets an existing row (pure logic of inject)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from sitemapcrawl.config import Settings
from sitemapcrawl.jobs.inject import Seed, SeedLineError, parse_seed_line, row_for_seed
from sitemapcrawl.model.webpage import FetchStatus, SitemapSource, WebPage
from sitemapcrawl.web.rules import UrlRules
from sitemapcrawl.web.urlfilters import SitemapBlacklist, UrlFilter
from sitemapcrawl.web.urls import DEFAULT_RULES

SETTINGS = Settings()
RULES = UrlRules(SETTINGS, DEFAULT_RULES, UrlFilter.from_lines(["-\\.pdf$", "+."]),
                 SitemapBlacklist.from_lines(["spam.example"]))
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def test_blank_and_comment_lines_give_nothing() -> None:
    assert parse_seed_line("   \n", 1, RULES) == []
    assert parse_seed_line("# http://example.com/", 2, RULES) == []


def test_metadata_is_read() -> None:
    seed, sitemap = parse_seed_line(
        "http://Example.com/a\tscore=1.5\tfetchInterval=60\tdepth=4\tradius=1\tsitemaps=http://example.com/s.xml",
        3, RULES)
    assert seed == Seed("http://example.com/a", 3, score=1.5, fetch_interval=60, depth=4, radius=1)
    assert sitemap == Seed("http://example.com/s.xml", 3, depth=4, radius=1, is_seed=False, is_sitemap=True,
                           vouched_by=("example.com",))
    (only,) = parse_seed_line("http://example.com/s.xml\tsitemap=TRUE", 4, RULES)
    assert only.is_sitemap and only.is_seed


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("example.com/no-scheme", "not a URL"),
        ("mailto:someone@example.com", "not a URL"),
        ("http://example.com/\tdepth=x", "bad metadata"),
        ("http://example.com/\tradius=-2", "bad metadata"),
        ("http://example.com/\tsitemap=maybe", "bad metadata"),
        ("http://example.com/\tnovalue", "bad metadata"),
        ("http://example.com/\tcolour=blue", "bad metadata"),
        ("http://example.com/manual.pdf", "filtered"),
        ("ftp://example.com/", "filtered"),
        ("http://example.com/\tsitemaps=http://example.com/x.pdf", "filtered"),
        ("http://spam.example/sitemap.xml\tsitemap=true", "blacklisted"),
        ("http://example.com/\tsitemaps=http://www.spam.example/s.xml", "blacklisted"),
    ],
)
def test_bad_lines_say_why(line: str, reason: str) -> None:
    with pytest.raises(SeedLineError) as caught:
        parse_seed_line(line, 1, RULES)
    assert caught.value.reason == reason


def test_blacklisted_host_is_fine_as_a_page() -> None:
    assert parse_seed_line("http://spam.example/", 1, RULES)[0].url == "http://spam.example/"


def test_new_row_starts_unfetched_and_due_now() -> None:
    row = row_for_seed(Seed("http://e.example/", 1, depth=3, radius=0, is_sitemap=True), None, NOW, SETTINGS, False)
    assert row == WebPage(
        "http://e.example/", status=FetchStatus.UNFETCHED, next_fetch=NOW,
        fetch_interval=SETTINGS.default_fetch_interval, score=SETTINGS.seed_score, depth=3, radius=0,
        seed=True, inject_mark=NOW, is_sitemap=True, sitemap_source=SitemapSource.SEED)


def test_existing_row_keeps_what_it_knows() -> None:
    old = WebPage("http://e.example/", status=FetchStatus.FETCHED, score=7.0, depth=5, radius=0,
                  sitemap_source=SitemapSource.ROBOTS)
    seed = Seed("http://e.example/", 1, score=1.0, depth=2, radius=3, is_sitemap=True)
    row = row_for_seed(seed, old, NOW, SETTINGS, overwrite_score=False)
    assert row.status is None and row.next_fetch is None  # fetch state and schedule untouched
    assert (row.depth, row.radius, row.score) == (5, 3, None)
    assert row.is_sitemap and row.sitemap_source is None  # the first source stays
    assert row_for_seed(seed, old, NOW, SETTINGS, overwrite_score=True).score == 1.0


def test_an_injected_sitemap_is_vouched_for_by_the_seed_host():
    (own,) = parse_seed_line("http://127.0.0.2:8700/maps/s.xml\tsitemap=true", 1, RULES)
    assert own.vouched_by == ("127.0.0.2:8700",)
    seed, other = parse_seed_line("https://a.example/\tsitemaps=http://cdn.b.example/a-maps/s.xml", 2, RULES)
    assert seed.vouched_by == () and other.vouched_by == ("a.example",)
    existing = WebPage("http://cdn.b.example/a-maps/s.xml", status=FetchStatus.FETCHED,
                       vouched_by=("b.example 1", "a.example 2"))
    row = row_for_seed(replace(other, depth=0, radius=0), existing, NOW, SETTINGS, False)
    assert row.vouched_by == ("a.example 0", "b.example 1")
    plain = row_for_seed(replace(seed, depth=0, radius=0), None, NOW, SETTINGS, False)
    assert plain.vouched_by is None
