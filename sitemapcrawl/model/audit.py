"""What an SEO audit asks of one row: how it was found, and what is wrong with a listed URL.

Pure: a decoded `WebPage` in, answers out. The report's audit lists
(`report.panels`), the row counts (`scoring.rowcounts`) and
`export --orphans/--unlisted` use these definitions, so they agree: the
problems of a listed URL (`http-error`, `redirect`, `blocked`, `noindex`,
`canonical`), orphans (listed, linked from no crawled page: `m:nil` = 0),
unlisted pages (reached by links, listed by no sitemap) and multi-listed
ones (`s:nl` > 1). Orphans and unlisted pages need a mixed crawl; `m:nil`
and `s:nl` are counted by updatedb's merge. The lists: docs/commands.md,
report --html.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta

from sitemapcrawl.model.webpage import FetchStatus, WebPage

#: Google News takes articles of the last two days: an older news entry is stale (when its sitemap is parsed).
NEWS_MAX_AGE = timedelta(days=2)
#: News entries Google News reads per sitemap.
NEWS_MAX_ENTRIES = 1_000

#: The problem kinds of a sitemap-listed URL, in the order the report shows them.
PROBLEMS = ("http-error", "redirect", "blocked", "noindex", "canonical")


def discovered_via(row: WebPage) -> str:
    """How a row came to be: `sitemap document`, `seed`, `sitemap` or `link`."""
    if row.is_sitemap:
        return "sitemap document"
    if row.seed:
        return "seed"
    if row.in_sitemap:
        return "sitemap"
    return "link"


def problems(row: WebPage) -> list[str]:
    """The problems of a sitemap-listed page (empty for rows no sitemap lists, and for sitemaps)."""
    if not row.in_sitemap or row.is_sitemap:
        return []
    found = []
    code = row.http_code or 0
    if code >= 400 and not blocked_by_site(row):
        found.append("http-error")
    if row.status is FetchStatus.REDIRECT or 300 <= code < 400:
        found.append("redirect")
    if row.status is FetchStatus.BLOCKED_ROBOTS:
        found.append("blocked")
    if row.noindex:
        found.append("noindex")
    if row.canonical and row.canonical != row.url:
        found.append("canonical")
    return found


def blocked_by_site(row: WebPage) -> bool:
    """The site's bot defence answered instead of the page (`web.challenge`): we are blocked, it is not broken.
    `row` needs `status` and `blocked_by`."""
    return row.status is FetchStatus.DEFERRED and bool(row.blocked_by)


def alternates(row: WebPage) -> tuple[tuple[str, str], ...]:
    """The hreflang alternates a row names, the page's (`m:hl`) then its sitemaps' (`s:hl`), without repeats.
    `row` needs `hreflang` and `sitemap_hreflang`."""
    found: dict[tuple[str, str], None] = {}
    for line in (*(row.hreflang or ()), *(row.sitemap_hreflang or ())):
        lang, _, url = line.partition(" ")
        if url:
            found[(lang, url)] = None
    return tuple(found)


def declared(row: WebPage) -> frozenset[str] | None:
    """The URLs a row names as its alternates, or None when nothing is known of them (never fetched as a page,
    and no sitemap gives it alternates): an alternate of unknown mind is not judged."""
    if row.hreflang is None and not row.sitemap_hreflang:
        return None
    return frozenset(url for _lang, url in alternates(row))


def missing_returns(url: str, named: tuple[tuple[str, str], ...],
                    minds: Mapping[str, frozenset[str] | None]) -> tuple[str, ...]:
    """The alternates of page `url` (`named`, (lang, URL) pairs) that do not name it back: `LANG URL` lines.

    `minds` holds what each alternate names (`declared`); one not in it, or
    None there, is not known yet and not judged; the page itself is skipped.
    """
    return tuple(f"{lang} {other}" for lang, other in named
                 if other != url and (mind := minds.get(other)) is not None and url not in mind)


def is_orphan(row: WebPage) -> bool:
    """Listed in a sitemap, linked from no crawled page."""
    return bool(row.in_sitemap) and not row.is_sitemap and not row.link_inlinks


def is_unlisted(row: WebPage) -> bool:
    """Reached by links, listed in no sitemap."""
    return not row.in_sitemap and not row.is_sitemap and bool(row.link_inlinks)


def is_multi_listed(row: WebPage) -> bool:
    """Listed by more than one sitemap."""
    return listing_count(row) > 1


def listing_count(row: WebPage) -> int:
    """How many sitemaps list the row: `s:nl` where updatedb wrote it, else 1 for a listed row, 0 otherwise.

    updatedb's merge writes `s:nl` only where it differs from that (more than
    one sitemap, or a stored count to correct), and `m:nil` only where it is
    not 0: most rows of an inventory are listed once and linked from nowhere.
    `row` needs `sitemaps_listing` and `in_sitemap`.
    """
    if row.sitemaps_listing is not None:
        return row.sitemaps_listing
    return 1 if row.in_sitemap else 0
