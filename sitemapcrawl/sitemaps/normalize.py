"""Turn the text of sitemap fields into values: URLs, UTC times, changefreq, priority.

Pure functions, never raising: anything unusable becomes None. The hot ones
(`normalize_loc`, `parse_lastmod`) have a fast path for the common, already
clean case. `parse_lastmod` is not memoised: `datetime.fromisoformat` (C) costs
about what a cache hit does, and a miss (the unique dates of a large sitemap)
cost about twice the parse itself. The urlset reader (`xml.UrlsetEntries`) inlines these fast
paths and falls back to the functions here, which remain the definition.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta, timezone
from email.utils import parsedate_to_datetime
from urllib.parse import quote, urlsplit, urlunsplit

from sitemapcrawl.sitemaps.model import ChangeFreq
from sitemapcrawl.urlparts import HTTP_SCHEMES

#: changefreq text as written in nearly every sitemap -> its value (lookup, no parsing).
CHANGEFREQS = {member.value: member for member in ChangeFreq}
#: The priorities nearly every sitemap uses, looked up instead of parsed.
COMMON_PRIORITIES = {f"{tenth / 10:.1f}": tenth / 10 for tenth in range(11)} | {"0": 0.0, "1": 1.0}
# Characters kept as they are when an IRI becomes a URI: reserved, unreserved, "%".
_URI_SAFE = "!#$%&'()*+,/:;=?@[]~-._"
_W3C = re.compile(
    r"(\d{4})(?:-(\d{2})(?:-(\d{2})"
    r"(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?\s*(Z|z|[+-]\d{2}:?\d{2})?)?)?)?"
)


def normalize_loc(text: str | None) -> str | None:
    """A trimmed absolute http(s) URI from a `loc` text, or None.

    Non-ASCII characters and spaces are percent-encoded (host names become
    IDNA), so an IRI becomes a URI. The host is kept as written; the
    canonical form is the crawler's business. Cost: a few string checks for a
    clean ASCII URL; `urlsplit` only otherwise.
    """
    if not text:
        return None
    loc = text.strip()
    if is_normal_loc(loc):
        return loc
    if not loc[:8].lower().startswith(("http://", "https://")):
        return None
    return _iri_to_uri(loc)


def is_normal_loc(loc: str) -> bool:
    """True when `loc` is an http(s) URI that `normalize_loc` returns as it is.

    That is: a lower-case scheme, ASCII, printable, no space, a host that does
    not start with a delimiter, and a valid port if any. Whatever follows the
    first "/" after the host only has to be ASCII, printable and space-free,
    so a prefix `scheme://host[:port]/...` for which this is True makes every
    such URL starting with it normal too (`Scope.open_prefixes` relies on it).
    """
    if loc.startswith("http://"):
        start = 7
    elif loc.startswith("https://"):
        start = 8
    else:
        return False
    if not (loc.isascii() and loc.isprintable()) or " " in loc:
        return False
    end = loc.find("/", start)
    if end < 0:
        end = len(loc)
    if end <= start or loc[start] in "?#@:[":
        return False
    colon = loc.find(":", start, end)
    if colon < 0:
        return True
    port = loc[colon + 1 : end]
    return port.isdigit() and len(port) <= 5 and int(port) <= 65535


def _iri_to_uri(loc: str) -> str | None:
    try:
        parts = urlsplit(loc)
        host = parts.hostname
        if not host or parts.scheme.lower() not in HTTP_SCHEMES:
            return None
        netloc = parts.netloc
        if not host.isascii():
            ascii_host = host.encode("idna").decode("ascii")
            netloc = netloc.replace(host, ascii_host) if host in netloc else ascii_host
        if not netloc.isascii() or any(c.isspace() for c in netloc):
            return None
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except (ValueError, UnicodeError):
        return None
    return urlunsplit(
        (
            parts.scheme,
            netloc,
            quote(parts.path, safe=_URI_SAFE),
            quote(parts.query, safe=_URI_SAFE),
            quote(parts.fragment, safe=_URI_SAFE),
        )
    )


def parse_lastmod(text: str | None) -> datetime | None:
    """A W3C datetime (any precision, `Z` or offset) as an aware UTC datetime, or None.

    A date or time with no zone is read as UTC. Year-only and year-month forms
    give the first instant of that period.
    """
    if not text:
        return None
    value = text.strip()
    parsed: datetime | None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        parsed = _parse_w3c(value)
    if parsed is None or parsed.tzinfo is UTC:
        return parsed
    return _as_utc(parsed)


def _as_utc(moment: datetime) -> datetime | None:
    """`moment` in UTC; a naive time is taken as UTC; None when it cannot be shifted."""
    try:
        if moment.tzinfo is None:
            return moment.replace(tzinfo=UTC)
        return moment.astimezone(UTC)
    except (OverflowError, ValueError):
        return None


def _parse_w3c(value: str) -> datetime | None:
    match = _W3C.fullmatch(value)
    if match is None:
        return None
    year, month, day, hour, minute, second, fraction, zone = match.groups()
    tz = UTC
    if zone and zone not in "Zz":
        sign = -1 if zone[0] == "-" else 1
        digits = zone[1:].replace(":", "")
        offset = timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
        if offset >= timedelta(hours=24):
            return None
        tz = timezone(sign * offset)
    try:
        return datetime(
            int(year),
            int(month or 1),
            int(day or 1),
            int(hour or 0),
            int(minute or 0),
            int(second or 0),
            int((fraction or "0")[:6].ljust(6, "0")),
            tzinfo=tz,
        )
    except ValueError:
        return None


def parse_feed_date(text: str | None) -> datetime | None:
    """An RSS `pubDate` (RFC 822/2822) or, failing that, a W3C datetime; UTC or None."""
    if not text:
        return None
    try:
        parsed = parsedate_to_datetime(text.strip())
    except (ValueError, TypeError, IndexError, OverflowError):
        return parse_lastmod(text)
    return _as_utc(parsed)


def parse_changefreq(text: str | None) -> ChangeFreq | None:
    """One of always … never, trimmed and case-insensitive; anything else None."""
    if not text:
        return None
    return CHANGEFREQS.get(text) or CHANGEFREQS.get(text.strip().lower())


def parse_priority(text: str | None) -> float | None:
    """A number in [0, 1]; out of range, NaN or not a number gives None."""
    if not text:
        return None
    common = COMMON_PRIORITIES.get(text)
    if common is not None:
        return common
    try:
        value = float(text)
    except ValueError:
        return None
    if math.isnan(value) or not 0.0 <= value <= 1.0:
        return None
    return abs(value)  # `-0` is 0: one value, one text


def parse_text(text: str | None) -> str | None:
    """Trimmed text, None when empty (titles, captions, names)."""
    if text is None:
        return None
    value = text.strip()
    return value or None


def parse_duration(text: str | None) -> int | None:
    """Whole seconds from a video `duration`, or None."""
    if not text:
        return None
    value = text.strip()
    if not value.isdigit() or len(value) > 9:
        return None
    return int(value)
