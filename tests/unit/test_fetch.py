"""fetch's pure parts: what an HTTP answer writes on the row, robots.txt freshness, options."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from types import MappingProxyType

import pytest

from sitemapcrawl.config import Settings
from sitemapcrawl.errors import UsageError
from sitemapcrawl.fetcher.feed import stored_rule
from sitemapcrawl.fetcher.model import FetchItem, parse_split
from sitemapcrawl.fetcher.outcomes import outcome_row, retry_or_gone
from sitemapcrawl.jobs.fetch import FetchCounts, FetchOptions
from sitemapcrawl.model.schedule import SchedulePolicy, schedule
from sitemapcrawl.model.webpage import FetchStatus, HostRow, RobotsStatus
from sitemapcrawl.modes import QueueBy
from sitemapcrawl.web.http import HttpResponse, conditional_headers
from sitemapcrawl.web.robots_txt import HostReport, robots_host_row

NOW = datetime(2025, 3, 1, 12, tzinfo=UTC)
SETTINGS = Settings(user_agent="TestBot/1.0", fetch_retry_interval=100, max_fetch_retries=3,
                    max_cell_bytes=10_485_760)


def item(**fields: object) -> FetchItem:
    base: dict[str, object] = {"url": "http://h.test/a", "key": b"test.h:http/a", "origin": "http://h.test",
                               "host": "h.test", "queue": "h.test"}
    base.update(fields)
    return FetchItem(**base)  # type: ignore[arg-type]


def answer(status: int | None, body: bytes = b"", error: str | None = None, **headers: str) -> HttpResponse:
    return HttpResponse("http://h.test/a", status, MappingProxyType({k.replace("_", "-"): v for k, v in
                                                                      headers.items()}), body, error=error)


def test_a_fetched_page() -> None:
    row = outcome_row(item(fetch_time=NOW - timedelta(days=1), signature="old"),
                      answer(200, b"<html>", content_type="text/html", etag='"e1"',
                             last_modified="Sat, 01 Mar 2025 10:00:00 GMT"), NOW, SETTINGS, store_content=False)
    assert (row.status, row.http_code, row.content_type) == (FetchStatus.FETCHED, 200, "text/html")
    assert (row.etag, row.last_modified) == ('"e1"', "Sat, 01 Mar 2025 10:00:00 GMT")
    assert row.signature and row.signature != "old" and row.content_changed == NOW
    assert row.prev_fetch_time == NOW - timedelta(days=1) and row.fetch_time == NOW
    assert row.content is None and row.retries == 0 and row.error == "" and row.truncated is False


def test_a_fetched_page_records_what_it_says_about_itself_whatever_is_stored() -> None:
    head = (b'<html><head><meta name="robots" content="noindex"><link rel="canonical" href="/b">'
            b'<link rel="alternate" hreflang="de" href="/de/a"></head><body><a href="/x">x</a></body></html>')
    row = outcome_row(item(), answer(200, head, content_type="text/html", x_robots_tag="googlebot: nofollow"),
                      NOW, SETTINGS, store_content=False)
    assert (row.noindex, row.nofollow, row.canonical) == (True, False, "http://h.test/b")
    assert row.hreflang == ("de http://h.test/de/a",)
    assert row.robots == ("X-Robots-Tag: googlebot: nofollow", "meta robots: noindex")
    plain = outcome_row(item(), answer(200, b"<html><head></head></html>", content_type="text/html"), NOW, SETTINGS,
                        store_content=True)
    # Every fact written, so what a page stopped saying leaves its row.
    assert (plain.noindex, plain.nofollow, plain.canonical, plain.hreflang, plain.robots) == (False, False, "", (), ())
    sitemap = outcome_row(item(is_sitemap=True), answer(200, b"<urlset/>", x_robots_tag="noindex"), NOW, SETTINGS,
                          store_content=False)
    assert sitemap.noindex is None and sitemap.robots is None  # a sitemap says nothing of a page
    for code in (304, 404, 500):
        assert outcome_row(item(), answer(code), NOW, SETTINGS, store_content=False).noindex is None


def test_an_unchanged_body_keeps_its_change_time_and_content_is_kept_when_asked() -> None:
    first = outcome_row(item(), answer(200, b"same"), NOW, SETTINGS, store_content=True)
    again = outcome_row(item(signature=first.signature), answer(200, b"same"), NOW, SETTINGS, store_content=True)
    assert first.content == b"same" and again.content_changed is None


def test_sitemaps_always_keep_their_body() -> None:
    row = outcome_row(item(is_sitemap=True), answer(200, b"<urlset/>"), NOW, SETTINGS, store_content=False)
    assert row.content == b"<urlset/>"


def test_a_body_over_the_cell_limit_is_too_large() -> None:
    settings = Settings(max_cell_bytes=2_000)
    noise = random.Random(1).randbytes(10_000)  # gzip cannot shrink it
    row = outcome_row(item(is_sitemap=True), answer(200, noise), NOW, settings, store_content=False)
    assert row.status is FetchStatus.TOO_LARGE and row.content is None and "cell limit" in (row.error or "")
    small = outcome_row(item(is_sitemap=True), answer(200, b"x" * 10_000), NOW, settings, store_content=False)
    assert small.status is FetchStatus.FETCHED and small.content == b"x" * 10_000  # compresses well


def test_not_modified_keeps_old_validators_unless_new_ones_come() -> None:
    row = outcome_row(item(etag='"e1"'), answer(304), NOW, SETTINGS, store_content=False)
    assert (row.status, row.http_code, row.etag, row.last_modified) == (FetchStatus.NOT_MODIFIED, 304, None, None)
    row = outcome_row(item(etag='"e1"'), answer(304, etag='"e2"'), NOW, SETTINGS, store_content=False)
    assert row.etag == '"e2"'


def test_redirects_gone_and_failures() -> None:
    moved = outcome_row(item(), answer(301, location="/b"), NOW, SETTINGS, store_content=False)
    assert (moved.status, moved.redirect_to) == (FetchStatus.REDIRECT, "http://h.test/b")
    for code in (404, 410, 403):
        assert outcome_row(item(), answer(code), NOW, SETTINGS, False).status is FetchStatus.GONE
    no_location = outcome_row(item(), answer(302), NOW, SETTINGS, False)
    assert no_location.status is FetchStatus.GONE and no_location.error == "HTTP 302"
    policy = SchedulePolicy.from_settings(SETTINGS)
    for response in (answer(500), answer(503), answer(429), answer(None, error="timed out")):
        row = outcome_row(item(), response, NOW, SETTINGS, False)
        # fetch records facts only (issue 10): the next fetch time is the schedule's
        assert row.status is FetchStatus.RETRY and row.retries == 1 and row.next_fetch is None
        assert schedule(row, policy, NOW, just_fetched=True).next_fetch == NOW + timedelta(seconds=100)
    assert outcome_row(item(), answer(None, error="timed out"), NOW, SETTINGS, False).error == "timed out"


def test_retry_after_is_recorded_as_a_fact() -> None:
    for header, wait in (("120", 120), ("Sat, 01 Mar 2025 13:00:00 GMT", 3600)):
        row = outcome_row(item(), answer(503, retry_after=header), NOW, SETTINGS, False)
        assert row.retry_at == NOW + timedelta(seconds=wait) and row.next_fetch is None
    assert outcome_row(item(), answer(429, retry_after="soon"), NOW, SETTINGS, False).retry_at is None
    assert outcome_row(item(), answer(500, retry_after="120"), NOW, SETTINGS, False).retry_at is None


def test_retry_count_then_gone() -> None:
    second = retry_or_gone(item(retries=1), SETTINGS, "HTTP 500")
    assert second["status"] is FetchStatus.RETRY and second["retries"] == 2 and "next_fetch" not in second
    third = retry_or_gone(item(retries=2), SETTINGS, "HTTP 500")
    assert third["status"] is FetchStatus.GONE and third["retries"] == 3 and "next_fetch" not in third


def test_conditional_headers_only_from_validators() -> None:
    assert conditional_headers(None, None) == {}
    assert conditional_headers('"e"', "") == {"If-None-Match": '"e"'}
    assert conditional_headers("", "Sat, 01 Mar 2025 10:00:00 GMT") == {
        "If-Modified-Since": "Sat, 01 Mar 2025 10:00:00 GMT"}


def test_stored_robots_rules_and_when_they_expire() -> None:
    fresh = HostRow("http://h.test", robots_fetch_time=NOW - timedelta(hours=1), robots_status=RobotsStatus.OK,
                    robots_text="User-agent: *\nDisallow: /x\nCrawl-delay: 3\n")
    rule = stored_rule(fresh, "TestBot/1.0", NOW, max_age=86_400)
    assert rule is not None and rule.crawl_delay == 3.0 and rule.error is None
    assert not rule.policy.allowed("http://h.test/x/1") and rule.policy.allowed("http://h.test/y")
    assert stored_rule(fresh, "TestBot/1.0", NOW, max_age=60) is None
    assert stored_rule(HostRow("http://h.test"), "TestBot/1.0", NOW, max_age=60) is None
    failing = HostRow("http://h.test", robots_fetch_time=NOW, robots_status=RobotsStatus.ERROR,
                      robots_retry_at=NOW + timedelta(minutes=5))
    rule = stored_rule(failing, "TestBot/1.0", NOW, max_age=86_400)
    assert rule is not None and rule.error and rule.retry_at == NOW + timedelta(minutes=5)
    assert stored_rule(failing, "TestBot/1.0", NOW + timedelta(minutes=5), max_age=86_400) is None


def test_robots_host_row_from_a_report() -> None:
    report = HostReport("http://h.test", RobotsStatus.ERROR, 503, error="HTTP 503")
    row = robots_host_row(report, NOW, retry_after=600)
    assert row.robots_retry_at == NOW + timedelta(minutes=10) and row.robots_error == "HTTP 503"
    assert row.sitemaps is None and row.sitemaps_found is None  # detect's own columns are left alone
    ok = robots_host_row(HostReport("http://h.test", RobotsStatus.OK, 200, robots_text="x"), NOW, 600)
    assert ok.robots_retry_at == NOW and ok.robots_text == "x"


def test_partition_and_options() -> None:
    assert parse_split("0/4") == (0, 4) and parse_split("3/4") == (3, 4)
    for bad in ("4/4", "1", "a/b", "-1/2", "0/0"):
        with pytest.raises(UsageError):
            parse_split(bad)
    options = FetchOptions.from_settings(Settings(max_connections=3, delay=0.5, queue_by=QueueBy.IP), "b1",
                                         threads_per_host=None, time_limit=10.0)
    assert (options.connections, options.delay, options.queue_by, options.time_limit) == (3, 0.5, QueueBy.IP, 10.0)
    for bad_options in (FetchOptions(""), FetchOptions("b", connections=0), FetchOptions("b", delay=-1),
                        FetchOptions("b", time_limit=0)):
        with pytest.raises(UsageError):
            bad_options.check()


def test_counts_summary() -> None:
    counts = FetchCounts("b1", total=3, done=2, seconds=2.0, stopped="time limit of 1 s")
    counts.by_status.update({"fetched": 1, "gone": 1})
    counts.by_host["h.test"] = counts.by_status.copy()
    assert counts.errors == 1 and counts.left == 1
    line = counts.summary()
    assert "2 of 3 done (fetched 1, gone 1)" in line and "stopped: time limit of 1 s, 1 left" in line
    assert counts.host_lines() == ["h.test: 2 (fetched 1, gone 1)"]


def test_queue_by_ip_resolves_names_once_and_keeps_addresses() -> None:
    from sitemapcrawl.storage.politeness import Resolver

    resolve = Resolver()
    assert resolve("127.0.0.2") == "127.0.0.2"
    assert resolve("[::1]") == "::1"
    assert resolve("localhost") in ("127.0.0.1", "::1")
