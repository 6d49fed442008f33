"""`changes --fail-on-*`'s decisions (model.alerts): how much a parse removed, and whether a sitemap fails now."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sitemapcrawl.model.alerts import fails_now, lost_share, shrank
from sitemapcrawl.model.webpage import FetchStatus, HistoryRow, WebPage

PARSED = datetime(2026, 5, 1, tzinfo=UTC)
LATER = PARSED + timedelta(days=1)


def parse(entries: int, added: int = 0, removed: int = 0, baseline: bool = False) -> HistoryRow:
    return HistoryRow("k", entries=entries, added=added, removed=removed, baseline=baseline)


def test_the_share_removed_is_against_the_entries_before_the_parse() -> None:
    assert lost_share(parse(4, removed=6)) == (60.0, 10, 4)
    assert lost_share(parse(10, added=5, removed=5)) == (50.0, 10, 10)  # a news sitemap's rotation removes too
    assert lost_share(parse(10)) == (0.0, 10, 10)
    assert lost_share(parse(10, baseline=True)) is None and lost_share(parse(0, added=0)) is None
    assert shrank(parse(4, removed=6), 30) == "lost 60% of its entries (10 -> 4)"
    assert shrank(parse(4, removed=6), 60) is None and shrank(parse(10), 0) is None


def row(**fields: object) -> WebPage:
    base = {"status": FetchStatus.FETCHED, "fetch_time": LATER, "http_code": 200, "error": "", "parse_time": LATER,
            "problem_kinds": (), "sitemap_problems": ()}
    return WebPage("http://a.test/sitemap.xml", **{**base, **fields})  # type: ignore[arg-type]


def test_a_sitemap_fails_now_when_its_fetch_or_its_parse_failed_after_its_last_recorded_parse() -> None:
    assert fails_now(row(), PARSED) is None
    assert fails_now(row(status=FetchStatus.RETRY, http_code=500, error="HTTP 500"), PARSED) == \
        "fetch retry (HTTP 500): HTTP 500"
    assert fails_now(row(status=FetchStatus.GONE, http_code=None, error="timed out"), PARSED) == "fetch gone: timed out"
    assert fails_now(row(status=FetchStatus.RETRY, fetch_time=PARSED - timedelta(hours=1)), PARSED) is None
    # Times are kept to the second: a fetch that failed in the second of the last parse came after it.
    assert fails_now(row(status=FetchStatus.RETRY, fetch_time=PARSED, http_code=500, error="HTTP 500"), PARSED) == \
        "fetch retry (HTTP 500): HTTP 500"
    assert fails_now(row(status=FetchStatus.NOT_MODIFIED), PARSED) is None
    unread = row(problem_kinds=("not-a-sitemap=1",), sitemap_problems=("not read as a sitemap: HTML",))
    assert fails_now(unread, PARSED) == "not read as a sitemap: HTML"
    assert fails_now(row(problem_kinds=("not-a-sitemap=1",), parse_time=PARSED), PARSED) is None
