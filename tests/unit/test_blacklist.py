"""The sitemap blacklist: host lines (with subdomains), URL prefixes, regexes, reasons."""

from __future__ import annotations

from pathlib import Path

import pytest

from sitemapcrawl.config import Settings
from sitemapcrawl.errors import InvalidUrlError, UsageError
from sitemapcrawl.web.urlfilters import SitemapBlacklist
from sitemapcrawl.web.urls import CanonicalRules

BLACKLIST = """\
# sitemaps we never want
example.com
*.Bücher.example            # a comment after a host
127.0.0.2
[::1]
HTTP://Other.Example:80/archive/
https://other.example/old%7e/
re:/sitemap-\\d{4}\\.xml$
re:news#sitemap
"""


@pytest.fixture
def blacklist() -> SitemapBlacklist:
    return SitemapBlacklist.from_lines(BLACKLIST.splitlines(), source="bl.txt")


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://example.com/sitemap.xml", "blacklisted host example.com (line 2 of bl.txt)"),
        ("https://www.example.com:8443/s.xml", "blacklisted host example.com (line 2 of bl.txt)"),
        ("http://a.b.example.com/s.xml", "blacklisted host example.com (line 2 of bl.txt)"),
        ("http://xn--bcher-kva.example/s.xml",
         "blacklisted host xn--bcher-kva.example (line 3 of bl.txt)"),
        ("http://shop.xn--bcher-kva.example/s.xml",
         "blacklisted host xn--bcher-kva.example (line 3 of bl.txt)"),
        ("http://127.0.0.2:8080/sitemap.xml", "blacklisted host 127.0.0.2 (line 4 of bl.txt)"),
        ("http://[::1]:8080/sitemap.xml", "blacklisted host [::1] (line 5 of bl.txt)"),
        ("http://other.example/archive/2020.xml",
         "blacklisted prefix http://other.example/archive/ (line 6 of bl.txt)"),
        ("https://other.example/old~/s.xml",
         "blacklisted prefix https://other.example/old~/ (line 7 of bl.txt)"),
        ("http://fine.example/sitemap-2024.xml",
         "blacklisted by re:/sitemap-\\d{4}\\.xml$ (line 8 of bl.txt)"),
        ("http://fine.example/news#sitemap", "blacklisted by re:news#sitemap (line 9 of bl.txt)"),
    ],
)
def test_blacklisted(blacklist: SitemapBlacklist, url: str, reason: str) -> None:
    assert blacklist.match(url) == reason


@pytest.mark.parametrize(
    "url",
    [
        "http://example.community/sitemap.xml",  # not a subdomain, only a longer name
        "http://notexample.com/sitemap.xml",
        "http://example.com.evil.example/sitemap.xml",
        "http://com/sitemap.xml",
        "http://127.0.0.20/sitemap.xml",
        "http://1.127.0.0.2.example/sitemap.xml",
        "http://[::2]/sitemap.xml",
        "https://other.example/archive/2020.xml",  # the prefix line says http
        "http://other.example:8080/archive/x.xml",
        "http://other.example/archived.xml",
        "http://fine.example/sitemap-24.xml",
    ],
)
def test_not_blacklisted(blacklist: SitemapBlacklist, url: str) -> None:
    assert blacklist.match(url) is None


def test_empty_blacklist_matches_nothing() -> None:
    assert SitemapBlacklist().match("http://example.com/sitemap.xml") is None
    empty = SitemapBlacklist.from_settings(Settings())
    assert empty.match("http://example.com/sitemap.xml") is None


def test_match_refuses_a_url_without_a_host(blacklist: SitemapBlacklist) -> None:
    with pytest.raises(InvalidUrlError):
        blacklist.match("/sitemap.xml")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("example.com:8080", "line 2: not a host, URL prefix or re:REGEX"),
        ("example.com/path", "line 2: not a host, URL prefix or re:REGEX"),
        ("http:///no-host", "line 2: not a host, URL prefix or re:REGEX"),
        ("re:(unclosed", "line 2: bad regex"),
    ],
)
def test_bad_lines_name_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "blacklist.txt"
    path.write_text(f"good.example\n{line}\n", encoding="utf-8")
    with pytest.raises(UsageError, match=message) as info:
        SitemapBlacklist.from_file(path)
    assert str(path) in str(info.value)


def test_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="sitemap blacklist file not found"):
        SitemapBlacklist.from_file(tmp_path / "nope.txt")


def test_from_settings_reads_the_file_and_uses_the_canonical_rules(tmp_path: Path) -> None:
    path = tmp_path / "blacklist.txt"
    path.write_text("www.example.org\n", encoding="utf-8")
    plain = SitemapBlacklist.from_settings(Settings(sitemap_blacklist=path))
    assert plain.match("http://www.example.org/s.xml") == (
        f"blacklisted host www.example.org (line 1 of {path})"
    )
    assert plain.match("http://example.org/s.xml") is None
    stripped = SitemapBlacklist.from_settings(Settings(sitemap_blacklist=path, strip_www=True))
    assert stripped.rules == CanonicalRules(strip_www=True)
    assert stripped.match("http://example.org/s.xml") == (
        f"blacklisted host example.org (line 1 of {path})"
    )
