"""The regex URL filter: schemes, length, ordered +/- rules, reasons, bad files."""

from __future__ import annotations

from pathlib import Path

import pytest

from sitemapcrawl.config import Settings
from sitemapcrawl.errors import UsageError
from sitemapcrawl.web.urlfilters import UrlFilter

NUTCH_STYLE = """\
# skip binaries, then calendars; keep the rest of example.com and nothing else

-\\.(pdf|zip|exe)$
   -/calendar/
+^https?://([a-z0-9-]+\\.)*example\\.com/
"""


def test_first_matching_rule_wins() -> None:
    rules = UrlFilter.from_lines(["+/keep/", "-/keep/but-not", "-.", "+."], source="f.txt")
    assert rules.reason("http://a.example/keep/but-not") is None
    assert rules.reason("http://a.example/other") == "filtered by f.txt line 3: -."


def test_nutch_style_file_with_comments_and_blank_lines() -> None:
    rules = UrlFilter.from_lines(NUTCH_STYLE.splitlines(), source="urls.txt")
    assert rules.accepts("https://www.example.com/a.html")
    assert rules.reason("http://example.com/doc.pdf") == "filtered by urls.txt line 3: -\\.(pdf|zip|exe)$"
    assert rules.accepts("http://example.com/doc.PDF")  # regexes are case-sensitive
    assert rules.reason("http://example.com/calendar/2024") == (
        "filtered by urls.txt line 4: -/calendar/"
    )
    # No rule matches: dropped, as in Nutch.
    assert rules.reason("http://other.example/") == "matched no line of urls.txt"
    assert not rules.accepts("http://other.example/")


def test_regexes_are_searched_not_anchored() -> None:
    rules = UrlFilter.from_lines(["-\\?", "+."])
    assert not rules.accepts("http://a.example/p?x=1")
    assert rules.accepts("http://a.example/p")


def test_no_rules_accepts_everything_within_scheme_and_length() -> None:
    for rules in (UrlFilter(), UrlFilter.from_lines(["# only a comment", ""])):
        assert rules.accepts("http://a.example/anything.pdf")
        assert rules.accepts("HTTPS://a.example/")
        assert rules.reason("ftp://a.example/") == "scheme ftp not allowed"
        assert rules.reason("mailto:a@example.com") == "scheme mailto not allowed"
        assert rules.reason("no-scheme") == "not an absolute URL"


def test_length_limit_counts_characters_of_the_url() -> None:
    rules = UrlFilter(max_length=30)
    fits = "http://a.example/" + "x" * 13
    assert len(fits) == 30
    assert rules.accepts(fits)
    assert rules.reason(fits + "y") == "too long (31 > 30 characters)"


def test_scheme_and_length_are_checked_before_rules() -> None:
    rules = UrlFilter.from_lines(["+."], max_length=20, allowed_schemes=["https"])
    assert rules.reason("http://a.example/") == "scheme http not allowed"
    assert rules.reason("https://a.example/long-path") == "too long (27 > 20 characters)"
    assert rules.accepts("https://a.example/")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("\\.pdf$", "line 2: expected \\+REGEX or -REGEX"),
        ("-(unclosed", "line 2: bad regex '\\(unclosed'"),
        ("+[z-a]", "line 2: bad regex"),
    ],
)
def test_bad_lines_name_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "filter.txt"
    path.write_text(f"+good\n{line}\n", encoding="utf-8")
    with pytest.raises(UsageError, match=message) as info:
        UrlFilter.from_file(path)
    assert str(path) in str(info.value)


def test_missing_and_undecodable_files_are_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="URL filter file not found"):
        UrlFilter.from_file(tmp_path / "nope.txt")
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"+\xff\xfe\n")
    with pytest.raises(UsageError, match="cannot be read"):
        UrlFilter.from_file(binary)


def test_from_file_reads_utf8_with_bom(tmp_path: Path) -> None:
    path = tmp_path / "filter.txt"
    path.write_text("\ufeff-/caf%C3%A9/\r\n+.\r\n", encoding="utf-8")
    rules = UrlFilter.from_file(path)
    assert rules.reason("http://a.example/caf%C3%A9/") == f"filtered by {path} line 1: -/caf%C3%A9/"
    assert rules.accepts("http://a.example/tea/")


def test_from_settings(tmp_path: Path) -> None:
    default = UrlFilter.from_settings(Settings())
    assert default.rules == ()
    assert default.max_length == 2_048
    assert default.allowed_schemes == {"http", "https"}
    path = tmp_path / "f.txt"
    path.write_text("-private\n+.\n", encoding="utf-8")
    configured = UrlFilter.from_settings(
        Settings(url_filter=path, max_url_length=100, allowed_schemes=("https",))
    )
    assert configured.reason("https://a.example/private") == f"filtered by {path} line 1: -private"
    assert configured.reason("http://a.example/") == "scheme http not allowed"
    assert configured.reason("https://a.example/" + "x" * 100) == "too long (118 > 100 characters)"
