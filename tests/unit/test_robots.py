"""robots.txt conventions on top of protego."""

from __future__ import annotations

import pytest

from sitemapcrawl.model.webpage import RobotsStatus
from sitemapcrawl.web.robots import RobotsPolicy, product_token, status_for_http

ROBOTS = """\
User-agent: *
Disallow: /private/
Crawl-delay: 3

User-agent: MyBot
Disallow: /no-mybot/
Crawl-delay: 0.5

Sitemap: /sitemap.xml
Sitemap: http://other.example/cross.xml
sitemap:   https://a.example/s.xml.gz
Sitemap: /sitemap.xml
Not a line at all
"""


@pytest.mark.parametrize(
    ("agent", "token"),
    [
        ("MyBot/1.2 (+https://example.org/bot)", "MyBot"),
        ("MyBot", "MyBot"),
        ("Mozilla/5.0 (compatible; MyBot/1.2; +https://example.org)", "MyBot"),
        ("my-bot_2.0/3", "my-bot_2.0"),
    ],
)
def test_product_token(agent: str, token: str) -> None:
    assert product_token(agent) == token


@pytest.mark.parametrize(
    ("code", "status"),
    [(200, RobotsStatus.OK), (204, RobotsStatus.OK), (404, RobotsStatus.MISSING), (410, RobotsStatus.MISSING),
     (403, RobotsStatus.MISSING), (500, RobotsStatus.ERROR), (503, RobotsStatus.ERROR), (None, RobotsStatus.ERROR),
     (301, RobotsStatus.ERROR)],
)
def test_status_for_http(code: int | None, status: RobotsStatus) -> None:
    assert status_for_http(code) is status


def test_group_for_our_agent_applies() -> None:
    policy = RobotsPolicy.from_text(RobotsStatus.OK, ROBOTS, "MyBot/1.0 (+x)")
    assert not policy.allowed("http://h.example/no-mybot/x")
    assert policy.allowed("http://h.example/private/x")  # the * group does not apply to MyBot
    assert policy.crawl_delay == 0.5
    other = RobotsPolicy.from_text(RobotsStatus.OK, ROBOTS, "OtherBot/2")
    assert not other.allowed("http://h.example/private/x")
    assert other.allowed("http://h.example/no-mybot/x")
    assert other.crawl_delay == 3.0


def test_sitemaps_are_resolved_and_deduplicated_in_order() -> None:
    policy = RobotsPolicy.from_text(RobotsStatus.OK, ROBOTS, "MyBot")
    assert policy.sitemaps("http://h.example:8080/robots.txt") == [
        "http://h.example:8080/sitemap.xml",
        "http://other.example/cross.xml",
        "https://a.example/s.xml.gz",
    ]
    assert policy.malformed_sitemap_lines == 0


def test_only_proper_sitemap_lines_count() -> None:
    text = ("Sitemap:\nSitmap: /typo.xml\nSitemap /no-colon.xml\nSitemap: ht!tp:/ broken url\n"
            "SITEMAP : /ok.xml # the main one\nsitemaps: /plural.xml\n")
    policy = RobotsPolicy.from_text(RobotsStatus.OK, text, "MyBot")
    assert policy.sitemaps("http://h.example/robots.txt") == ["http://h.example/ok.xml"]
    assert policy.malformed_sitemap_lines == 3


def test_missing_robots_allows_all_and_error_denies_all() -> None:
    missing = RobotsPolicy.from_text(RobotsStatus.MISSING, None, "MyBot")
    assert missing.allowed("http://h.example/anything") and missing.sitemaps("http://h.example/robots.txt") == []
    error = RobotsPolicy.from_text(RobotsStatus.ERROR, "User-agent: *\nAllow: /", "MyBot")
    assert not error.allowed("http://h.example/") and error.crawl_delay is None


def test_garbage_is_forgiven() -> None:
    policy = RobotsPolicy.from_text(RobotsStatus.OK, "\x00\xff<html>not robots</html>\nDisallow /x", "MyBot")
    assert policy.allowed("http://h.example/x")
