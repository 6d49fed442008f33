"""The values the sitemap engine hands out: kinds, entries, extensions, the report, errors.

All are frozen (slotted) dataclasses or Enums, so they can be shared, hashed
and compared. Times are aware UTC datetimes. `to_dict` gives the JSON shape
the CLI prints with `--jsonl` (and that scripts read).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import Enum, StrEnum
from typing import Any, NamedTuple

from sitemapcrawl.errors import SitemapError
from sitemapcrawl.sitemaps.times import iso


class SitemapKind(Enum):
    """What a document was detected to be (by sniffing its bytes)."""

    URLSET = "urlset"
    INDEX = "index"
    TEXT = "text"
    RSS = "rss"
    ATOM = "atom"


class ChangeFreq(StrEnum):
    """The sitemaps.org `changefreq` values; anything else is read as None.

    The row model stores the same enum (column `s:cf`).
    """

    ALWAYS = "always"
    HOURLY = "hourly"
    DAILY = "daily"
    WEEKLY = "weekly"
    MONTHLY = "monthly"
    YEARLY = "yearly"
    NEVER = "never"


@dataclass(frozen=True, slots=True)
class Image:
    """One `image:image` of a page (Google image sitemap extension)."""

    loc: str
    caption: str | None = None
    title: str | None = None
    geo_location: str | None = None
    license: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape: every field, None as null."""
        return {
            "loc": self.loc,
            "caption": self.caption,
            "title": self.title,
            "geo_location": self.geo_location,
            "license": self.license,
        }


@dataclass(frozen=True, slots=True)
class Video:
    """One `video:video` of a page (Google video sitemap extension)."""

    thumbnail_loc: str | None = None
    title: str | None = None
    description: str | None = None
    content_loc: str | None = None
    player_loc: str | None = None
    duration: int | None = None
    """Seconds, when given as a whole number."""
    publication_date: datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape: every field, times as ISO-8601 UTC."""
        return {
            "thumbnail_loc": self.thumbnail_loc,
            "title": self.title,
            "description": self.description,
            "content_loc": self.content_loc,
            "player_loc": self.player_loc,
            "duration": self.duration,
            "publication_date": iso(self.publication_date),
        }


@dataclass(frozen=True, slots=True)
class News:
    """The `news:news` of a page (Google News sitemap extension)."""

    publication_name: str | None = None
    publication_language: str | None = None
    publication_date: datetime | None = None
    title: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape: every field, times as ISO-8601 UTC."""
        return {
            "publication_name": self.publication_name,
            "publication_language": self.publication_language,
            "publication_date": iso(self.publication_date),
            "title": self.title,
        }


@dataclass(frozen=True, slots=True)
class Alternate:
    """An `xhtml:link rel="alternate"`: the page in another language or region."""

    hreflang: str
    href: str

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape."""
        return {"hreflang": self.hreflang, "href": self.href}


class PageEntry(NamedTuple):
    """A page listed by a urlset, a text sitemap or a feed, with its hints.

    A NamedTuple (immutable, like the dataclasses here) because a document
    makes up to 50,000 of them and a tuple is built three times faster than a
    frozen dataclass.
    """

    loc: str
    lastmod: datetime | None = None
    changefreq: ChangeFreq | None = None
    priority: float | None = None
    """In [0, 1]; None when absent or invalid (consumers read None as 0.5)."""
    images: tuple[Image, ...] = ()
    videos: tuple[Video, ...] = ()
    news: News | None = None
    alternates: tuple[Alternate, ...] = ()

    @property
    def kind(self) -> str:
        """`url`: a page (the JSON `kind`)."""
        return "url"

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape; extensions only when present."""
        out: dict[str, Any] = {
            "kind": "url",
            "loc": self.loc,
            "lastmod": iso(self.lastmod),
            "changefreq": None if self.changefreq is None else self.changefreq.value,
            "priority": self.priority,
        }
        if self.images:
            out["images"] = [image.to_dict() for image in self.images]
        if self.videos:
            out["videos"] = [video.to_dict() for video in self.videos]
        if self.news is not None:
            out["news"] = self.news.to_dict()
        if self.alternates:
            out["alternates"] = [alternate.to_dict() for alternate in self.alternates]
        return out


class SitemapRef(NamedTuple):
    """A child sitemap listed by a sitemap index."""

    loc: str
    lastmod: datetime | None = None

    @property
    def kind(self) -> str:
        """`sitemap`: a child sitemap (the JSON `kind`)."""
        return "sitemap"

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape (same keys as a page, hints null)."""
        return {
            "kind": "sitemap",
            "loc": self.loc,
            "lastmod": iso(self.lastmod),
            "changefreq": None,
            "priority": None,
        }


class PageChunk:
    """Consecutive pages of a urlset as columns (`SitemapDocument.page_chunks`), not one tuple each.

    The same pages and values, counted the same, as the `PageEntry` values
    the document yields one by one; built for
    the usp drop-in, which packs the columns straight to disk. A lastmod is
    kept as ISO text that `datetime.fromisoformat` reads back to the engine's
    value (None: none, or invalid); `extensions` maps a page's position to
    its (images, videos, news, alternates) when it has any.
    """

    __slots__ = ("changefreqs", "extensions", "lastmods", "locs", "priorities")

    def __init__(self) -> None:
        self.locs: list[str] = []
        self.lastmods: list[str | None] = []
        self.changefreqs: list[ChangeFreq | None] = []
        self.priorities: list[float | None] = []
        self.extensions: dict[int, tuple[tuple[Image, ...], tuple[Video, ...], News | None,
                                         tuple[Alternate, ...]]] = {}

    def __len__(self) -> int:
        return len(self.locs)

    def appenders(self) -> tuple[Callable[[str], None], Callable[[str | None], None],
                                 Callable[[ChangeFreq | None], None], Callable[[float | None], None]]:
        """The `append` of each column (loc, lastmod, changefreq, priority), bound once for the hot loop."""
        return self.locs.append, self.lastmods.append, self.changefreqs.append, self.priorities.append


Entry = PageEntry | SitemapRef


class ProblemKind(StrEnum):
    """What kind of problem reading a sitemap met: what a program counts (the messages are for people).

    Each problem message belongs to one kind; the count of a kind is the
    entries it concerns, or, for a problem of the document, how many times
    it happened. A score reads these counts, never the messages, so a
    message may be reworded freely.
    """

    NOT_A_SITEMAP = "not-a-sitemap"
    """The body could not be read as a sitemap at all (parse)."""
    URL_LIMIT = "url-limit"
    """Entries past the URL limit, not kept."""
    BYTE_LIMIT = "byte-limit"
    """Reading stopped at the uncompressed-bytes limit."""
    BROKEN = "broken"
    """The XML or a compressed stream broke part-way (entries before kept), per break."""
    INVALID_URL = "invalid-url"
    """Entries without a usable http(s) URL."""
    INVALID_LASTMOD = "invalid-lastmod"
    """Entries kept whose lastmod is no W3C date of years 0001..9999 (the lastmod is ignored)."""
    UNCANONICAL_URL = "uncanonical-url"
    """Entries whose URL cannot be canonicalised (parse)."""
    OUT_OF_SCOPE_FOLDER = "out-of-scope-folder"
    """Entries on the sitemap's host, outside its folder."""
    OUT_OF_SCOPE_HOST = "out-of-scope-host"
    """Entries on a host that does not vouch for the sitemap."""
    NO_ENTRIES = "no-entries"
    """The document lists nothing."""
    ODD_NAMESPACE = "odd-namespace"
    """A root element in an unexpected namespace, read anyway."""
    UNKNOWN_ENCODING = "unknown-encoding"
    """A Content-Encoding not understood; the bytes were read as they are."""
    SKIPPED_PART = "skipped-part"
    """Zip members not read (no sitemap, or past the member limit)."""
    SCOPE_NOT_STRICT = "scope-not-strict"
    """Strict scope could not be applied (the URL is not http(s))."""
    FILTERED = "filtered"
    """Entries dropped by the URL filter (parse)."""
    PAST_DEPTH = "past-depth"
    """Entries past depth/radius, not kept (parse)."""
    CHILD_BLACKLISTED = "child-blacklisted"
    """Child sitemaps of an index that are blacklisted (parse)."""
    BODY_CUT = "body-cut"
    """The fetcher cut the body at its size cap (the tree walker)."""
    NEWS_STALE = "news-stale"
    """News entries older than two days when parsed: Google News takes only the last two days' (parse)."""
    NEWS_OVER_LIMIT = "news-over-limit"
    """News entries past the 1,000 Google News reads per sitemap (parse)."""
    OVER_10MB = "over-10mb"
    """The document is over 10 MB uncompressed (`OLD_BYTE_LIMIT`): read whole, but older consumers cut it."""


ProblemCounts = tuple[tuple[ProblemKind, int], ...]
"""(kind, count) pairs, in `ProblemKind` order, no zero count."""


def problem_counts(counts: Mapping[ProblemKind, int]) -> ProblemCounts:
    """`counts` as `ProblemCounts` (zeros left out)."""
    return tuple((kind, counts[kind]) for kind in ProblemKind if counts.get(kind))


def add_problem_counts(*parts: Iterable[tuple[ProblemKind, int]]) -> ProblemCounts:
    """The sum of several `ProblemCounts` (or pairs)."""
    total: dict[ProblemKind, int] = {}
    for part in parts:
        for kind, n in part:
            total[kind] = total.get(kind, 0) + n
    return problem_counts(total)


def problem_lines(counts: Iterable[tuple[ProblemKind, int]]) -> tuple[str, ...]:
    """`kind=count` lines, as the row stores them (column `problem_kinds`)."""
    return tuple(f"{kind.value}={n}" for kind, n in counts)


def read_problem_lines(lines: Iterable[str]) -> dict[ProblemKind, int]:
    """Inverse of `problem_lines`; a line of a kind this version does not know, or not `kind=count`, is
    left out (a newer version may store more kinds)."""
    known = {kind.value: kind for kind in ProblemKind}
    out: dict[ProblemKind, int] = {}
    for line in lines:
        name, _, count = line.partition("=")
        kind = known.get(name.strip())
        if kind is not None and count.strip().isdigit():
            out[kind] = out.get(kind, 0) + int(count)
    return out


@dataclass(frozen=True, slots=True)
class ParseReport:
    """What happened while reading one document (complete once it was iterated)."""

    kept: int = 0
    """Entries handed out."""
    dropped_scope: int = 0
    """Entries outside the sitemap's scope (strict scope)."""
    dropped_host: int = 0
    """Of `dropped_scope`, those on a host that neither holds nor vouches for the sitemap."""
    over_limit: int = 0
    """Valid, in-scope entries after the URL limit (not handed out)."""
    invalid: int = 0
    """Entries or lines with no usable http(s) URL."""
    bytes_limit_hit: bool = False
    """Reading stopped at the uncompressed-bytes limit."""
    truncated: bool = False
    """The XML or the compressed stream broke before its end (entries before are kept)."""
    bytes_read: int = 0
    """Uncompressed bytes read."""
    problems: tuple[str, ...] = ()
    """Short sentences for a person, one per problem met."""
    problem_counts: ProblemCounts = ()
    """How many of each kind of problem (`ProblemKind`): what a program reads, whatever the sentences say."""
    warnings: tuple[str, ...] = ()
    """Entries read although they break the rules, one sentence per leniency with its
    count (`LENIENCIES`): the site owner should fix them; other readers may not forgive them."""

    @property
    def dropped_folder(self) -> int:
        """Of `dropped_scope`, those on the sitemap's own host but outside its folder."""
        return self.dropped_scope - self.dropped_host


#: What the engine forgives, as the warning texts say it (`{n}` is the count).
#: crawler-commons reads the same: a <url> or <sitemap> whose URL is its own text,
#: and an RSS item whose only URL is its <guid>.
LOC_FROM_TEXT_URL = "{n:,} <url> element(s) without <loc>: the URL was read from the element's own text"
LOC_FROM_TEXT_SITEMAP = "{n:,} <sitemap> element(s) without <loc>: the URL was read from the element's own text"
LINK_FROM_GUID = "{n:,} RSS item(s) without <link>: the URL was read from <guid>"
LENIENCIES = (LOC_FROM_TEXT_URL, LOC_FROM_TEXT_SITEMAP, LINK_FROM_GUID)


class NotASitemapError(SitemapError):
    """The bytes are not a sitemap in any supported format (HTML, JSON, binary...)."""


class EmptySitemapError(SitemapError):
    """The document has no content at all (no bytes, only spaces or comments)."""
