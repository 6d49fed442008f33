"""What one URL's sitemap lastmod is worth: the tests of the quality score and the audit's verdict.

Search engines trust a sitemap's lastmod only when it is "consistently and
verifiably accurate". These tests say when it is not, from facts on the row
alone (its lastmod, the fetch times, when the body last changed), so the
quality evidence (`scoring.evidence.contribution`, per sitemap) and the
audit's `lastmod-suspect` list (per URL, `s:lv`) judge alike. Pure.

A verdict, most telling first: `uniform` (its sitemap gives every URL one
timestamp, so the dates say nothing), `future` (after the moment it was
judged), `moved-same-content` (newer than the last change of the body we
saw, while the body stayed the same), `stayed-content-changed` (the body
changed between our last two fetches, the lastmod is older than the first
of them); else `ok`. Each test allows `LASTMOD_SLACK`: sitemaps often give a
day, not a time. updatedb's merge judges a URL from what its sitemaps claim
(the latest lastmod, future ones too), and again after each fetch
(`verdict_after_fetch`); `s:lv` holds only a suspect verdict. The rules:
docs/quality.md.
"""

from __future__ import annotations

import enum
from datetime import datetime, timedelta

__all__ = ["LASTMOD_SLACK", "UNIFORM_MIN", "LastmodVerdict", "lastmod_test", "lastmod_verdict", "verdict_after_fetch",
           "verdict_cell"]

#: Tolerance of the lastmod tests: sitemaps often give a day, not a time.
LASTMOD_SLACK = timedelta(days=1)
#: At least this many entries with one same lastmod make the dates meaningless.
UNIFORM_MIN = 5


class LastmodVerdict(enum.StrEnum):
    """What a URL's lastmod is worth (column `s:lv` holds the suspect ones; none there means `ok`)."""

    OK = "ok"
    UNIFORM = "uniform"
    """Every URL of its sitemap carries one timestamp (`UNIFORM_MIN` or more)."""
    FUTURE = "future"
    """In the future when judged (beyond `LASTMOD_SLACK`)."""
    MOVED = "moved-same-content"
    """Newer than the last change of the body we saw, while the body stayed the same."""
    STAYED = "stayed-content-changed"
    """The body changed between our last two fetches; the lastmod is older than the first of them."""


def lastmod_test(lastmod: datetime, fetch_time: datetime | None, prev_fetch_time: datetime | None,
                 content_changed: datetime | None, now: datetime) -> LastmodVerdict:
    """The tests a lastmod fails by itself (`FUTURE`, `MOVED`, `STAYED`), or `OK`. No I/O.

    `content_changed` is the fetch time at which the body was last seen to
    differ (the first fetch counts): a change between the previous fetch and
    the last one is known when it equals `fetch_time` and a previous fetch
    exists; the body stayed the same from `content_changed` to `fetch_time`.
    """
    if lastmod > now + LASTMOD_SLACK:
        return LastmodVerdict.FUTURE
    if fetch_time is None or content_changed is None:
        return LastmodVerdict.OK
    if content_changed == fetch_time and prev_fetch_time is not None and lastmod + LASTMOD_SLACK <= prev_fetch_time:
        return LastmodVerdict.STAYED
    if content_changed < fetch_time and content_changed + LASTMOD_SLACK < lastmod <= fetch_time:
        return LastmodVerdict.MOVED
    return LastmodVerdict.OK


def lastmod_verdict(lastmod: datetime | None, uniform: bool, fetch_time: datetime | None,
                    prev_fetch_time: datetime | None, content_changed: datetime | None,
                    now: datetime) -> LastmodVerdict | None:
    """A URL's verdict (see the module docstring); None when no sitemap gives it a lastmod. No I/O."""
    if lastmod is None:
        return None
    if uniform:
        return LastmodVerdict.UNIFORM
    return lastmod_test(lastmod, fetch_time, prev_fetch_time, content_changed, now)


#: The verdicts only updatedb's merge gives (from the sitemaps' cells: their lastmods and `lu=1`).
_FROM_SITEMAPS = frozenset({LastmodVerdict.UNIFORM.value, LastmodVerdict.FUTURE.value})


def verdict_cell(verdict: LastmodVerdict | None, stored: str | None) -> dict[str, str]:
    """The `lastmod_verdict` field to write for `verdict` over `stored` (`s:lv`): a suspect verdict's word, empty
    to clear one no longer true, nothing when unchanged (an honest lastmod costs no cell)."""
    wanted = verdict.value if verdict is not None and verdict is not LastmodVerdict.OK else ""
    return {"lastmod_verdict": wanted} if wanted != (stored or "") else {}


def verdict_after_fetch(lastmod: datetime | None, stored: str | None, fetch_time: datetime | None,
                        prev_fetch_time: datetime | None, content_changed: datetime | None,
                        now: datetime) -> dict[str, str]:
    """`verdict_cell` of a row just fetched and not merged: the fetch-based tests again, with its merged lastmod;
    `uniform` and `future` are the merge's to give or take back (it reads what the sitemaps claim)."""
    if stored in _FROM_SITEMAPS:
        return {}
    return verdict_cell(lastmod_verdict(lastmod, False, fetch_time, prev_fetch_time, content_changed, now), stored)
