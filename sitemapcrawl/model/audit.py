"""What an SEO audit asks of one row: how it was found, and what is wrong with a listed URL, and why.

Pure: a decoded `WebPage` in, answers out. The one owner of the audit lists:
their names (`AuditList`, kept in `modes` so the command line offers them
without loading the model), titles, the lists a row is on (`audit_lists`)
and why (`reason`); the report (`report.panels`), the row counts
(`scoring.rowcounts`) and `export` read them here, so they agree: the problems of a listed URL (`PROBLEMS`:
`http-error`, `redirect`, `blocked` by robots.txt, `blocked-by-site` (a bot
challenge or WAF block: we are blocked, the site is not broken),
`noindex`, `canonical` (both as fetch read them from the head or the
headers), `hreflang-no-return`, `lastmod-suspect`, `news-stale`), those of
a sitemap document (`blocked-by-site`; `news-stale` for a news sitemap over
`NEWS_MAX_ENTRIES`), orphans (listed, linked from no crawled page: `m:nil`
= 0), unlisted pages (reached by links, listed by no sitemap) and
multi-listed ones (`s:nl` > 1); `reason` says why a row is on a list, in a
few words. Orphans and unlisted pages need a mixed crawl; `m:nil` and
`s:nl` are counted by updatedb's merge. The lists: docs/commands.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta

from sitemapcrawl.model.lastmod import LastmodVerdict
from sitemapcrawl.model.webpage import FetchStatus, WebPage
from sitemapcrawl.modes import AuditList
from sitemapcrawl.sitemaps.model import ProblemKind, read_problem_lines

#: Google News takes articles of the last two days: an older news entry is stale (when its sitemap is parsed).
NEWS_MAX_AGE = timedelta(days=2)
#: News entries Google News reads per sitemap.
NEWS_MAX_ENTRIES = 1_000

#: The audit lists, in the order the report shows them.
AUDIT_NAMES = tuple(name.value for name in AuditList)
#: The title the report gives each list.
TITLES: dict[AuditList, str] = {
    AuditList.HTTP_ERROR: "Sitemap URLs answering 4xx/5xx",
    AuditList.REDIRECT: "Sitemap URLs that redirect",
    AuditList.BLOCKED: "Sitemap URLs blocked by robots.txt",
    AuditList.BLOCKED_BY_SITE: "Blocked by the site: a bot challenge or WAF block answered (we are blocked, not "
                               "broken)",
    AuditList.NOINDEX: "Sitemap URLs saying noindex (meta robots, googlebot or X-Robots-Tag)",
    AuditList.CANONICAL: "Sitemap URLs naming another canonical (in the head or a Link header)",
    AuditList.HREFLANG_NO_RETURN: "hreflang alternates that do not name the page back",
    AuditList.LASTMOD_SUSPECT: "Suspect lastmods: future, moved without a change, stale after a change, one for all",
    AuditList.NEWS_STALE: "Stale news: entries over two days old when read, news sitemaps over 1,000 entries",
    AuditList.ORPHANS: "Orphans: in a sitemap, linked from no crawled page",
    AuditList.UNLISTED: "Missing from the sitemaps: reached by links, listed nowhere",
    AuditList.MULTI_LISTED: "Listed by several sitemaps",
}
#: The lists only a mixed crawl fills (they need the links between pages).
NEED_LINKS = frozenset({AuditList.ORPHANS, AuditList.UNLISTED})
#: The problem kinds of a sitemap-listed URL (and of a sitemap document), in the order the report shows them.
PROBLEMS = tuple(name.value for name in AuditList
                 if name not in (AuditList.ORPHANS, AuditList.UNLISTED, AuditList.MULTI_LISTED))
#: The fields `problems` reads (beside `in_sitemap` and `is_sitemap`).
PROBLEM_FIELDS = ("status", "http_code", "blocked_by", "noindex", "canonical", "hreflang_no_return",
                  "lastmod_verdict", "news_stale", "problem_kinds")
#: The fields `reason` reads beside them.
REASON_FIELDS = ("redirect_to", "robots", "news_date", "link_inlinks", "sitemaps_listing", "in_sitemap",
                 "is_sitemap")
#: Answers whose page fetch read (what a page says about itself is kept from its last such answer).
_READ = frozenset({FetchStatus.FETCHED, FetchStatus.NOT_MODIFIED, FetchStatus.TOO_LARGE})
_LASTMOD_REASONS = {
    LastmodVerdict.UNIFORM.value: "its sitemap gives every URL one timestamp",
    LastmodVerdict.FUTURE.value: "lastmod in the future",
    LastmodVerdict.MOVED.value: "lastmod moved while the content stayed the same",
    LastmodVerdict.STAYED.value: "content changed while the lastmod stayed",
}


def discovered_via(row: WebPage) -> str:
    """How a row came to be: `sitemap document`, `seed`, `sitemap` or `link`."""
    if row.is_sitemap:
        return "sitemap document"
    if row.seed:
        return "seed"
    if row.in_sitemap:
        return "sitemap"
    return "link"


def audit_lists(row: WebPage) -> list[str]:
    """The audit lists a row is on, in `AUDIT_NAMES` order. `row` needs `PROBLEM_FIELDS`, `in_sitemap`,
    `is_sitemap`, `link_inlinks` and `sitemaps_listing`."""
    found = problems(row)
    if is_orphan(row):
        found.append(AuditList.ORPHANS.value)
    if is_unlisted(row):
        found.append(AuditList.UNLISTED.value)
    if is_multi_listed(row):
        found.append(AuditList.MULTI_LISTED.value)
    return found


def problems(row: WebPage) -> list[str]:
    """The problems of a sitemap-listed page or of a sitemap document (`PROBLEMS` order; none for other rows).

    `row` needs `in_sitemap`, `is_sitemap` and `PROBLEM_FIELDS`.
    """
    if row.is_sitemap:
        return _sitemap_problems(row)
    if not row.in_sitemap:
        return []
    found = []
    code = row.http_code or 0
    blocked = blocked_by_site(row)
    if code >= 400 and not blocked:
        found.append(AuditList.HTTP_ERROR.value)
    if row.status is FetchStatus.REDIRECT or 300 <= code < 400:
        found.append(AuditList.REDIRECT.value)
    if row.status is FetchStatus.BLOCKED_ROBOTS:
        found.append(AuditList.BLOCKED.value)
    if blocked:
        found.append(AuditList.BLOCKED_BY_SITE.value)
    read = row.status in _READ  # a page that answers no more is on the lists above, not on these two
    if read and row.noindex:
        found.append(AuditList.NOINDEX.value)
    if read and row.canonical and row.canonical != row.url:
        found.append(AuditList.CANONICAL.value)
    if row.hreflang_no_return:
        found.append(AuditList.HREFLANG_NO_RETURN.value)
    if row.lastmod_verdict:
        found.append(AuditList.LASTMOD_SUSPECT.value)
    if row.news_stale:
        found.append(AuditList.NEWS_STALE.value)
    return found


def _sitemap_problems(row: WebPage) -> list[str]:
    found = [AuditList.BLOCKED_BY_SITE.value] if blocked_by_site(row) else []
    if row.problem_kinds and ProblemKind.NEWS_OVER_LIMIT in read_problem_lines(row.problem_kinds):
        found.append(AuditList.NEWS_STALE.value)
    return found


def reason(row: WebPage, name: str) -> str:
    """Why `row` is on audit list `name`, in a few words (for the report and export).

    `row` needs `PROBLEM_FIELDS` and `REASON_FIELDS`.
    """
    code = row.http_code
    if name == AuditList.HTTP_ERROR:
        return f"HTTP {code}"
    if name == AuditList.REDIRECT:
        return f"HTTP {code} to {row.redirect_to}" if row.redirect_to else f"HTTP {code}"
    if name == AuditList.BLOCKED:
        return "robots.txt disallows it"
    if name == AuditList.BLOCKED_BY_SITE:
        return f"{row.blocked_by} (HTTP {code})"
    if name == AuditList.NOINDEX:
        return "; ".join(line for line in row.robots or () if "noindex" in line.lower() or "none" in line.lower()) \
            or "noindex"
    if name == AuditList.CANONICAL:
        return f"names {row.canonical}"
    if name == AuditList.HREFLANG_NO_RETURN:
        lines = row.hreflang_no_return or ()
        more = f" (and {len(lines) - 3} more)" if len(lines) > 3 else ""
        return "; ".join(f"{line} does not name it back" for line in lines[:3]) + more
    if name == AuditList.LASTMOD_SUSPECT:
        return _LASTMOD_REASONS.get(row.lastmod_verdict or "", row.lastmod_verdict or "")
    if name == AuditList.NEWS_STALE:
        if row.is_sitemap:
            over = read_problem_lines(row.problem_kinds or ()).get(ProblemKind.NEWS_OVER_LIMIT, 0)
            return f"{NEWS_MAX_ENTRIES + over:,} news entries: Google News reads {NEWS_MAX_ENTRIES:,}"
        return f"published {row.news_date or '?'}, over two days before its sitemap was read"
    if name == AuditList.ORPHANS:
        return "linked from no crawled page"
    if name == AuditList.UNLISTED:
        return f"linked from {row.link_inlinks or 0} pages, in no sitemap"
    if name == AuditList.MULTI_LISTED:
        return f"listed by {listing_count(row)} sitemaps"
    return ""


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
