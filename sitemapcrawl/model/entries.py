"""What a sitemap's entries say beyond their hints: their extensions, stale news, one timestamp for all.

Pure: parse hands each entry here as it writes its inlink cell. An entry's
news, image, video and hreflang extensions become fields of that cell
(`extension_fields`: counts, the news date and title, whether the news was
older than `audit.NEWS_MAX_AGE` when parsed, the alternates canonicalised);
updatedb merges them into the row (`s:hl s:nd s:nt s:ns s:im s:vd`).
`NewsCount` counts a sitemap's news entries into its problems (stale ones,
those past the 1,000 Google News reads). `UniformLastmods` tells whether
every entry carried one lastmod, holding the entries only while they do,
so parse writes their cells once, marked (`lu=1`) when the document ends so.
`merged_extensions` is updatedb's merge of them into a row.

Cost: nothing for an entry without extensions; memory: the entries of a
sitemap only while its lastmods are all one.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from sitemapcrawl.model.audit import NEWS_MAX_AGE, NEWS_MAX_ENTRIES
from sitemapcrawl.model.codec import format_time
from sitemapcrawl.model.lastmod import UNIFORM_MIN
from sitemapcrawl.model.linkvalues import Inlink
from sitemapcrawl.model.webpage import WebPage
from sitemapcrawl.sitemaps.model import PageEntry, ProblemKind

__all__ = ["EXTENSION_FIELDS", "MAX_ALTERNATES", "NewsCount", "UniformLastmods", "extension_fields",
           "merged_extensions"]

#: hreflang alternates kept per sitemap entry and per page (`web.pagesays`): a site of many locales names a
#: few hundred.
MAX_ALTERNATES = 300


def extension_fields(entry: PageEntry, now: datetime, canonical: Callable[[str], str | None],
                     news: NewsCount) -> dict[str, Any] | None:
    """The `Inlink` fields an entry's extensions give (None: it has none), its news counted in `news`.

    `canonical` gives an alternate's canonical URL, or None when it has none (left out).
    """
    if not (entry.images or entry.videos or entry.news is not None or entry.alternates):
        return None
    fields: dict[str, Any] = {"images": len(entry.images), "videos": len(entry.videos)}
    if entry.news is not None:
        date = entry.news.publication_date
        stale = date is not None and date < now - NEWS_MAX_AGE
        news.add(stale)
        fields.update(news_date=date, news_stale=stale, anchor=entry.news.title or "")
    alternates: dict[tuple[str, str], None] = {}
    for alternate in entry.alternates:
        lang, href = alternate.hreflang.strip().lower(), canonical(alternate.href)
        if lang and " " not in lang and "=" not in lang and href and len(alternates) < MAX_ALTERNATES:
            alternates[(lang, href)] = None
    fields["alternates"] = tuple(alternates)
    return fields


class NewsCount:
    """A sitemap's news entries and the stale ones among them, as problems of the sitemap."""

    def __init__(self) -> None:
        self.entries = self.stale = 0

    def add(self, stale: bool) -> None:
        self.entries += 1
        self.stale += stale

    def problems(self) -> list[tuple[ProblemKind, int, str]]:
        """(kind, count, sentence) of the news problems found."""
        found = []
        if self.stale:
            found.append((ProblemKind.NEWS_STALE, self.stale,
                          f"{self.stale:,} news entries older than two days when parsed (Google News takes the "
                          "last two days' articles)"))
        over = self.entries - NEWS_MAX_ENTRIES
        if over > 0:
            found.append((ProblemKind.NEWS_OVER_LIMIT, over,
                          f"{self.entries:,} news entries: Google News reads at most {NEWS_MAX_ENTRIES:,} per sitemap"))
        return found


class UniformLastmods:
    """Whether every entry of a sitemap carried one lastmod; the entries, held only while they all did."""

    def __init__(self) -> None:
        self.lastmod: datetime | None = None
        self.held: list[tuple[Any, ...]] | None = []

    def add(self, lastmod: datetime | None, entry: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        """One entry (`entry`: what the caller needs to write its cell) and its lastmod; the entries let go:
        none while every lastmod is one (this one held), the held ones and this one when a second lastmod (or
        none) shows, this one alone after that. The caller writes an entry when it is let go, and the held ones
        once the document ends (`uniform` says how)."""
        if self.held is None:
            return [entry]
        if lastmod is None or (self.lastmod is not None and lastmod != self.lastmod):
            released, self.held = [*self.held, entry], None  # two lastmods, or none: not uniform
            return released
        self.lastmod = lastmod
        self.held.append(entry)
        return []

    @property
    def uniform(self) -> bool:
        """Did at least `UNIFORM_MIN` entries, every one written, carry one same lastmod?"""
        return self.held is not None and len(self.held) >= UNIFORM_MIN


def merged_extensions(links: list[Inlink], row: WebPage) -> dict[str, Any]:
    """The extension fields of a row from its sitemap inlinks `links` (those with extensions): the most images
    and videos, the latest news entry, every alternate (first ones kept); a field `row` holds that none of them
    gives any more is cleared (0, empty), so nothing is written for a row that never had one. No I/O.

    `row` needs the extension fields (`EXTENSION_FIELDS`).
    """
    news = max((link for link in links if link.news_date is not None),
               key=lambda link: link.news_date or datetime.min, default=None)
    alternates: dict[str, None] = {}
    for link in links:
        for lang, href in link.alternates:
            if len(alternates) < MAX_ALTERNATES:
                alternates[f"{lang} {href}"] = None
    now: dict[str, Any] = {
        "images": max((link.images for link in links), default=0),
        "videos": max((link.videos for link in links), default=0),
        "news_date": format_time(news.news_date) if news is not None and news.news_date is not None else "",
        "news_title": news.anchor if news is not None else "",
        "news_stale": news.news_stale if news is not None else False,
        "sitemap_hreflang": tuple(alternates),
    }
    return {name: value for name, value in now.items() if value or getattr(row, name)}


#: The fields `merged_extensions` writes (and reads of the row, to clear them).
EXTENSION_FIELDS = ("images", "videos", "news_date", "news_title", "news_stale", "sitemap_hreflang")
