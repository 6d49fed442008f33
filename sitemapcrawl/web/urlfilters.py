"""Which URLs are wanted: the regex URL filter and the sitemap blacklist.

Both are read from small text files the user names (`--url-filter FILE`,
`--sitemap-blacklist FILE`, or the same keys in the config file), once per
job, and both answer with a reason rather than a bare no, so that a skipped
URL can say why on its row or in a log line. Both compare *canonical* URLs
(`sitemapcrawl.web.urls.canonicalize`). Pure logic: no network, no HBase.
The file formats, with examples: docs/commands.md, "The URL filter and the
sitemap blacklist".

Cost: per URL, the filter's regexes in order until one matches; the
blacklist, a host lookup per parent domain, the prefixes and its regexes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from sitemapcrawl.errors import InvalidUrlError, UsageError
from sitemapcrawl.urlparts import HTTP_SCHEMES
from sitemapcrawl.web.urls import (
    DEFAULT_RULES,
    CanonicalRules,
    canonical_host,
    canonicalize_prefix,
    host_key,
)

if TYPE_CHECKING:
    from sitemapcrawl.config import Settings

def _read_lines(path: Path, what: str) -> list[str]:
    """The lines of a rule file (UTF-8, a BOM allowed); UsageError naming the file."""
    try:
        return path.read_text(encoding="utf-8-sig").splitlines()
    except FileNotFoundError:
        raise UsageError(f"{what} not found: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{what} {path} cannot be read: {exc}") from None


def _rule_lines(lines: Iterable[str]) -> Iterable[tuple[int, str]]:
    """(line number, stripped text) of the lines that are not blank or `#` comments."""
    for number, line in enumerate(lines, start=1):
        text = line.strip()
        if text and not text.startswith("#"):
            yield number, text


def _compile(regex: str, source: str, number: int) -> re.Pattern[str]:
    try:
        return re.compile(regex)
    except re.error as exc:
        raise UsageError(f"{source} line {number}: bad regex {regex!r}: {exc}") from None


# --- the URL filter -------------------------------------------------------------------


class FilterRule(NamedTuple):
    """One `+regex` or `-regex` line of a URL filter file."""

    line: int
    accept: bool
    pattern: re.Pattern[str]

    def __str__(self) -> str:
        return ("+" if self.accept else "-") + self.pattern.pattern


@dataclass(frozen=True)
class UrlFilter:
    """Which URLs may become rows: allowed schemes, a maximum length, ordered regex rules.

    Checked in that order. The rules work as Nutch's regex URL filter: each
    regex is searched for anywhere in the URL, the first rule that matches
    decides (`+` keeps, `-` drops), and a URL that no rule matches is dropped,
    so a file usually ends with `+.`. With no rules (no file, or only
    comments) every URL within the scheme and length limits is kept. Applied
    at inject and to every URL discovered later, on the canonical URL.
    """

    rules: tuple[FilterRule, ...] = ()
    max_length: int = 2_048
    allowed_schemes: frozenset[str] = frozenset(HTTP_SCHEMES)
    source: str = "URL filter"
    """What the rules came from (a file name), for reasons and errors."""

    @classmethod
    def from_lines(
        cls,
        lines: Iterable[str],
        *,
        source: str = "URL filter",
        max_length: int = 2_048,
        allowed_schemes: Iterable[str] = HTTP_SCHEMES,
    ) -> UrlFilter:
        """Parse filter lines; blank lines and `#` comments are skipped.

        Raises UsageError naming the source and line for a line that does not
        start with `+` or `-`, or whose regex does not compile.
        """
        rules = []
        for number, text in _rule_lines(lines):
            sign, regex = text[0], text[1:].strip()
            if sign not in "+-":
                raise UsageError(f"{source} line {number}: expected +REGEX or -REGEX, got {text!r}")
            rules.append(FilterRule(number, sign == "+", _compile(regex, source, number)))
        return cls(
            tuple(rules),
            max_length=max_length,
            allowed_schemes=frozenset(scheme.lower() for scheme in allowed_schemes),
            source=source,
        )

    @classmethod
    def from_file(
        cls,
        path: Path,
        *,
        max_length: int = 2_048,
        allowed_schemes: Iterable[str] = HTTP_SCHEMES,
    ) -> UrlFilter:
        """Read a filter file (UTF-8). Raises UsageError for an unreadable file or a bad line."""
        return cls.from_lines(
            _read_lines(path, "URL filter file"),
            source=str(path),
            max_length=max_length,
            allowed_schemes=allowed_schemes,
        )

    @classmethod
    def from_settings(cls, settings: Settings) -> UrlFilter:
        """The filter the settings describe: `url_filter` (optional file), length, schemes."""
        if settings.url_filter is None:
            return cls.from_lines(
                (), max_length=settings.max_url_length, allowed_schemes=settings.allowed_schemes
            )
        return cls.from_file(
            settings.url_filter,
            max_length=settings.max_url_length,
            allowed_schemes=settings.allowed_schemes,
        )

    def reason(self, url: str) -> str | None:
        """Why `url` is dropped (`scheme ftp not allowed`, `too long (...)`,
        `filtered by FILE line 3: -\\.pdf$`), or None when it is kept.

        Cost: one search per rule until one matches.
        """
        scheme, colon, _ = url.partition(":")
        if not colon:
            return "not an absolute URL"
        if scheme.lower() not in self.allowed_schemes:
            return f"scheme {scheme} not allowed"
        if len(url) > self.max_length:
            return f"too long ({len(url)} > {self.max_length} characters)"
        if not self.rules:
            return None
        for rule in self.rules:
            if rule.pattern.search(url):
                if rule.accept:
                    return None
                return f"filtered by {self.source} line {rule.line}: {rule}"
        return f"matched no line of {self.source}"

    def accepts(self, url: str) -> bool:
        """True when `url` is kept (see `reason`)."""
        return self.reason(url) is None


# --- the sitemap blacklist -----------------------------------------------------------


@dataclass(frozen=True)
class SitemapBlacklist:
    """Sitemaps that are never fetched or parsed: by host, by URL prefix, or by regex.

    A host line (`example.com`) matches that host and all its subdomains
    (`www.example.com`, `a.b.example.com`), which is what people mean by
    "example.com"; a leading `*.` or `.` is accepted and changes nothing. An
    IP address matches itself only. A URL-prefix line (anything with `://`) is
    canonicalised as a prefix (`sitemapcrawl.web.urls.canonicalize_prefix`) and
    compared with the canonical URL. A `re:` line is a regex searched for
    anywhere in the URL. Empty (no file): nothing is blacklisted.
    """

    hosts: dict[str, int] = field(default_factory=dict)
    """Canonical host -> line number."""
    prefixes: tuple[tuple[str, int], ...] = ()
    """(canonical URL prefix, line number)."""
    patterns: tuple[tuple[re.Pattern[str], int], ...] = ()
    """(regex, line number)."""
    source: str = "sitemap blacklist"
    rules: CanonicalRules = DEFAULT_RULES
    """The canonicalisation the hosts and prefixes went through (and URLs go through)."""

    @classmethod
    def from_lines(
        cls,
        lines: Iterable[str],
        *,
        source: str = "sitemap blacklist",
        rules: CanonicalRules = DEFAULT_RULES,
    ) -> SitemapBlacklist:
        """Parse blacklist lines; blank lines and `#` comments are skipped.

        A `#` after whitespace starts a comment on host and prefix lines (not on
        `re:` lines, where it may be part of the regex). Raises UsageError
        naming the source and line for a bad host, prefix or regex.
        """
        hosts: dict[str, int] = {}
        prefixes: list[tuple[str, int]] = []
        patterns: list[tuple[re.Pattern[str], int]] = []
        for number, text in _rule_lines(lines):
            if text.startswith("re:"):
                patterns.append((_compile(text[3:].strip(), source, number), number))
                continue
            entry = re.split(r"\s+#", text, maxsplit=1)[0].strip()
            try:
                if "://" in entry:
                    prefixes.append((canonicalize_prefix(entry, rules), number))
                else:
                    host = entry.removeprefix("*.").removeprefix(".")
                    hosts.setdefault(canonical_host(host, rules), number)
            except InvalidUrlError as exc:
                raise UsageError(
                    f"{source} line {number}: not a host, URL prefix or re:REGEX ({exc})"
                ) from None
        return cls(hosts, tuple(prefixes), tuple(patterns), source, rules)

    @classmethod
    def from_file(cls, path: Path, *, rules: CanonicalRules = DEFAULT_RULES) -> SitemapBlacklist:
        """Read a blacklist file (UTF-8). Raises UsageError for an unreadable file or a bad line."""
        lines = _read_lines(path, "sitemap blacklist file")
        return cls.from_lines(lines, source=str(path), rules=rules)

    @classmethod
    def from_settings(cls, settings: Settings) -> SitemapBlacklist:
        """The blacklist of `sitemap_blacklist` (empty when unset), canonicalised as configured."""
        if settings.sitemap_blacklist is None:
            return cls(rules=CanonicalRules.from_settings(settings))
        return cls.from_file(
            settings.sitemap_blacklist, rules=CanonicalRules.from_settings(settings)
        )

    def match(self, url: str) -> str | None:
        """Why the sitemap at `url` is blacklisted, or None when it is not.

        E.g. `blacklisted host example.com (line 2 of FILE)`. Hosts are checked
        first, then prefixes, then regexes. Cost: a dictionary look-up per
        label of the host, then one comparison per prefix and one search per
        regex. Raises InvalidUrlError for a URL without a usable host.
        """
        if self.hosts:
            # An IP address has no parents in the table: a host line that is an
            # address is a whole dotted quad (or IPv6), never a suffix of one.
            for candidate in _suffixes(host_key(url, self.rules)):
                number = self.hosts.get(candidate)
                if number is not None:
                    return f"blacklisted host {candidate} (line {number} of {self.source})"
        for prefix, number in self.prefixes:
            if url.startswith(prefix):
                return f"blacklisted prefix {prefix} (line {number} of {self.source})"
        for pattern, number in self.patterns:
            if pattern.search(url):
                return f"blacklisted by re:{pattern.pattern} (line {number} of {self.source})"
        return None


def _suffixes(host: str) -> list[str]:
    """`a.b.example.com` -> the host itself and each parent: `b.example.com`, ... `com`."""
    labels = host.split(".")
    return [".".join(labels[index:]) for index in range(len(labels))]
