"""Alerts for a nightly CI job: a sitemap that lost entries, or that parsed before and fails now.

Pure: a parse's history row, or a sitemap's row, in; a few words out.
`changes --fail-on-removed PCT` asks `shrank` of each sitemap's latest
parse: the URLs it removed, against the entries the parse before it held
(its entries, less what it added, plus what it removed: known from the
latest parse alone, even when `--since` leaves the earlier one out).
`changes --fail-on-error` asks `fails_now` of each sitemap with a recorded
parse: its latest fetch failed after that parse, or its latest parse could
not read it (only successful parses are recorded in the history).
"""

from __future__ import annotations

from datetime import datetime

from sitemapcrawl.model.webpage import FetchStatus, HistoryRow, WebPage
from sitemapcrawl.sitemaps.model import ProblemKind, read_problem_lines

__all__ = ["ALERT_FIELDS", "fails_now", "lost_share", "shrank"]

#: What `fails_now` reads of a sitemap's row.
ALERT_FIELDS = ("status", "fetch_time", "http_code", "error", "parse_time", "problem_kinds", "sitemap_problems")
#: Fetch outcomes that leave a sitemap unread (a redirect is followed to its target, a 304 is the same sitemap).
_UNREAD = frozenset({FetchStatus.RETRY, FetchStatus.GONE, FetchStatus.TOO_LARGE, FetchStatus.BLOCKED_ROBOTS,
                     FetchStatus.DEFERRED})


def lost_share(parse: HistoryRow) -> tuple[float, int, int] | None:
    """(percent of its entries a parse removed, entries before it, entries after it); None for a first parse.

    `parse` needs `baseline`, `entries`, `added` and `removed`.
    """
    if parse.baseline or parse.entries is None:
        return None
    removed = parse.removed or 0
    before = parse.entries - (parse.added or 0) + removed
    if before <= 0:
        return None
    return 100.0 * removed / before, before, parse.entries


def shrank(parse: HistoryRow, percent: float) -> str | None:
    """Why a parse is over `--fail-on-removed percent`: `lost 60% of its entries (10 -> 4)`; None when not."""
    share = lost_share(parse)
    if share is None or share[0] <= percent:
        return None
    lost, before, after = share
    return f"lost {lost:.0f}% of its entries ({before:,} -> {after:,})"


def fails_now(row: WebPage, last_parse: datetime) -> str | None:
    """Why a sitemap whose latest recorded parse was at `last_parse` fails now; None when it does not.

    `row` needs `ALERT_FIELDS`.
    """
    # A failed fetch comes after the parse of the fetch before it; times are kept to the second, so in the
    # same second as that parse it is still after it.
    if row.status in _UNREAD and row.fetch_time is not None and row.fetch_time >= last_parse:
        code = f" (HTTP {row.http_code})" if row.http_code is not None else ""
        return f"fetch {row.status.value}{code}: {row.error or 'no answer'}"
    if (row.parse_time is not None and row.parse_time > last_parse
            and ProblemKind.NOT_A_SITEMAP in read_problem_lines(row.problem_kinds or ())):
        problems = row.sitemap_problems or ()
        return problems[0] if problems else "not read as a sitemap"
    return None
