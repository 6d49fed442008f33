"""The sitemap quality step of updatedb: score every sitemap, filter, weight its URLs' priority.

Run at the end of `updatedb` (setting `sitemap_quality`), from what the
table already holds (the formula is in `sitemapcrawl.quality`):

1. Read every sitemap row (`s:sm` = 1): its fetch status, type, counts,
   problems, own lastmod and blacklist reason. Memory: one small value per
   sitemap.
2. Scan the rows sitemaps list (`s:in` = 1 or `s:sm` = 1), with only their
   `sitemap` and `index` inlink cells (the server drops link cells), their
   fetch facts and their lastmod claims; each cell counts for its source
   sitemap. Only cells of the source's latest parse count (the greatest
   batch id among its cells: generated batch ids start with the UTC time,
   so they sort by time), so URLs a sitemap no longer lists do not count
   against it.
3. Score each sitemap and write the score, its six signals, the notes, the
   state and the time on the sitemap row (and the statuses of its listed URLs
   on its latest `history` parse row, for the report's chart); a blacklist reason of ours is
   written (`s:bl`) or cleared when the sitemap recovers or is pinned
   trusted. A reason from the blacklist file is never touched.
4. Scan the listed rows again and write `s:wp`, the sitemap priority weighted
   by the quality of the sitemaps listing the URL, where it changed. generate
   ranks by it; the link score (`m:sc`) is never touched.

Cost: one filtered scan of the sitemap rows and two of the listed rows
(small columns; link inlinks stay on the server); one put per sitemap and
one per listed row whose weighted priority changed, batched.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime

from sitemapcrawl import urls
from sitemapcrawl.errors import CellDecodeError, InvalidUrlError, UsageError
from sitemapcrawl.jobs.history import record_statuses
from sitemapcrawl.jobs.rules import UrlRules
from sitemapcrawl.linkvalues import Inlink, InlinkKind, parse_inlink
from sitemapcrawl.quality import (
    Assessment,
    ListedStats,
    Pins,
    QualityPolicy,
    SitemapFacts,
    assess,
    is_quality_reason,
    observe,
    weighted_priority,
)
from sitemapcrawl.store import Store
from sitemapcrawl.webpage import (
    WEBPAGE_TABLE,
    WebPage,
    column_names,
    decode,
    encode,
    equals_filter,
    map_families_of,
)

log = logging.getLogger(__name__)

_SITEMAP_FIELDS = [
    "is_sitemap", "status", "truncated", "sitemap_type", "sitemap_entries", "dropped_scope", "dropped_limit",
    "sitemap_problems", "parse_time", "lastmod", "blacklisted", "history_key",
]
_LISTED_FIELDS = [
    "in_sitemap", "is_sitemap", "inlinks", "status", "fetch_time", "prev_fetch_time", "content_changed",
    "weighted_priority",
]


@dataclass
class QualityCounts:
    """What a quality step did."""

    sitemaps: int = 0
    by_state: Counter[str] = field(default_factory=Counter)
    listed_rows: int = 0
    reweighted: int = 0
    """Listed rows whose weighted priority was (re)written."""
    newly_blacklisted: int = 0
    cleared: int = 0
    """Quality blacklist reasons removed (the sitemap recovered or was pinned trusted)."""

    def summary(self) -> str:
        """One line for the end of the step."""
        states = ", ".join(f"{n} {state}" for state, n in sorted(self.by_state.items()))
        return (f"sitemaps scored {self.sitemaps}" + (f" ({states})" if states else "")
                + f", newly blacklisted {self.newly_blacklisted}, listed rows {self.listed_rows}, "
                f"priorities reweighted {self.reweighted}")


def pins_from_settings(rules: UrlRules) -> Pins:
    """The trusted and blocked sitemap URLs of the settings, canonical; UsageError names a bad one."""
    def canonical(name: str, values: tuple[str, ...]) -> frozenset[str]:
        out = set()
        for value in values:
            try:
                out.add(urls.canonicalize(value, rules.canonical))
            except InvalidUrlError as exc:
                raise UsageError(f"setting {name}: {exc}") from None
        return frozenset(out)

    settings = rules.settings
    return Pins(canonical("sitemap_trusted", settings.sitemap_trusted),
                canonical("sitemap_blocked", settings.sitemap_blocked))


def policy_from_settings(rules: UrlRules) -> QualityPolicy:
    """The thresholds of the settings; UsageError when they are out of order or range."""
    s = rules.settings
    if not 0.0 <= s.sitemap_blacklist_below <= s.sitemap_demote_below <= 1.0:
        raise UsageError("settings: need 0 <= sitemap_blacklist_below <= sitemap_demote_below <= 1, not "
                         f"{s.sitemap_blacklist_below} and {s.sitemap_demote_below}")
    if not 0.0 <= s.sitemap_demote_factor <= 1.0 or s.sitemap_stale_days < 1:
        raise UsageError("settings: sitemap_demote_factor must be in [0, 1] and sitemap_stale_days at least 1")
    return QualityPolicy(s.sitemap_demote_below, s.sitemap_blacklist_below, s.sitemap_demote_factor,
                         s.sitemap_stale_days)


def _decoded(scan: Iterator[tuple[bytes, dict[bytes, bytes]]]) -> Iterator[tuple[bytes, WebPage]]:
    for key, cells in scan:
        try:
            yield key, decode(WebPage, urls.url_from_row_key(key.decode("utf-8")), cells)
        except (InvalidUrlError, CellDecodeError, UnicodeDecodeError) as exc:
            log.warning("quality: skipping row %r: %s", key[:200], exc)


def _facts(row: WebPage) -> SitemapFacts:
    return SitemapFacts(
        row.url, status=row.status, truncated=bool(row.truncated), kind=row.sitemap_type,
        parsed=row.parse_time is not None, entries=row.sitemap_entries or 0, dropped_scope=row.dropped_scope or 0,
        dropped_limit=row.dropped_limit or 0, problems=row.sitemap_problems or (), lastmod=row.lastmod,
        blacklisted=row.blacklisted)


def _listed_filter() -> str:
    """Rows in a sitemap or that are sitemaps, with only their sitemap/index inlink cells."""
    inlinks = map_families_of(WebPage)["inlinks"].family
    cells = " OR ".join([f"FamilyFilter(!=, 'binary:{inlinks}')"] + [
        f"ValueFilter(=, 'binaryprefix:{kind.value} ')" for kind in (InlinkKind.SITEMAP, InlinkKind.INDEX)])
    rows = f"({equals_filter(WebPage, 'in_sitemap', True)} OR {equals_filter(WebPage, 'is_sitemap', True)})"
    return f"{rows} AND ({cells})"


def _listed_rows(store: Store) -> Iterator[tuple[bytes, WebPage, list[tuple[str, Inlink]]]]:
    scan = store.scan(WEBPAGE_TABLE, columns=column_names(WebPage, _LISTED_FIELDS), filter=_listed_filter())
    for key, row in _decoded(scan):
        links = [(source, link) for source, text in (row.inlinks or {}).items()
                 if (link := parse_inlink(text)) is not None and link.kind in (InlinkKind.SITEMAP, InlinkKind.INDEX)]
        yield key, row, links


class _Tally:
    """Per sitemap: the batch of its latest parse seen so far and the stats of its cells."""

    __slots__ = ("batch", "stats", "statuses")

    def __init__(self) -> None:
        self.batch = ""
        self.stats = ListedStats()
        self.statuses: Counter[str] = Counter()
        """Fetch statuses of the URLs of the latest parse (the history chart's)."""


def _count_listed(store: Store, tallies: dict[str, _Tally], now: datetime, counts: QualityCounts,
                  on_progress: Callable[[int], None]) -> None:
    for _key, row, links in _listed_rows(store):
        counts.listed_rows += 1
        for source, link in links:
            tally = tallies.get(source)
            if tally is None or link.batch < tally.batch:
                continue
            if link.batch > tally.batch:
                tally.batch, tally.stats, tally.statuses = link.batch, ListedStats(), Counter()
            tally.statuses[row.status.value if row.status else "none"] += 1
            observe(tally.stats, link.lastmod, row.status, row.fetch_time, row.prev_fetch_time,
                    row.content_changed, now)
        if counts.listed_rows % 1000 == 0:
            on_progress(counts.listed_rows)


def _verdict_row(url: str, verdict: Assessment, now: datetime) -> WebPage:
    signals = verdict.signals
    return WebPage(url, quality=verdict.score, quality_state=verdict.state, quality_valid=signals.valid,
                   quality_fetch=signals.fetch, quality_lastmod=signals.lastmod,
                   quality_duplicates=signals.duplicates, quality_errors=signals.errors,
                   quality_freshness=signals.freshness, quality_notes=verdict.notes, quality_time=now,
                   blacklisted=verdict.reason)


def _reweigh(store: Store, weights: dict[str, float], counts: QualityCounts, chunk: int) -> None:
    puts: list[tuple[bytes, dict[bytes, bytes]]] = []
    for key, row, links in _listed_rows(store):
        listings = [(link.priority, weights.get(source, 1.0)) for source, link in links
                    if link.kind is InlinkKind.SITEMAP]
        if not listings:
            continue
        value = weighted_priority(listings)
        if value != row.weighted_priority:
            puts.append((key, encode(WebPage(row.url, weighted_priority=value))))
        if len(puts) >= chunk:
            counts.reweighted += store.write(WEBPAGE_TABLE, puts).rows
            puts = []
    counts.reweighted += store.write(WEBPAGE_TABLE, puts).rows


def score_sitemaps(store: Store, rules: UrlRules, now: datetime, *,
                   on_progress: Callable[[int], None] = lambda rows_done: None) -> QualityCounts:
    """Score every sitemap of the table and weight its URLs' priorities (see the module docstring).

    Raises UsageError for bad thresholds or pins, and the store's errors.
    """
    policy = policy_from_settings(rules)
    pins = pins_from_settings(rules)
    counts = QualityCounts()
    sitemaps: dict[str, tuple[bytes, SitemapFacts]] = {}
    history_keys: dict[str, str] = {}
    scan = store.scan(WEBPAGE_TABLE, columns=column_names(WebPage, _SITEMAP_FIELDS),
                      filter=equals_filter(WebPage, "is_sitemap", True))
    for key, row in _decoded(scan):
        sitemaps[row.url] = (key, _facts(row))
        if row.history_key:
            history_keys[row.url] = row.history_key
    tallies = {url: _Tally() for url in sitemaps}
    _count_listed(store, tallies, now, counts, on_progress)
    weights: dict[str, float] = {}
    puts: list[tuple[bytes, dict[bytes, bytes]]] = []
    blacklist_column = column_names(WebPage, ["blacklisted"])
    cleared: list[tuple[bytes, list[bytes]]] = []
    for url, (key, facts) in sitemaps.items():
        verdict = assess(facts, tallies[url].stats, policy, pins, now)
        weights[url] = verdict.weight
        counts.sitemaps += 1
        counts.by_state[verdict.state.value] += 1
        ours = facts.blacklisted is not None and is_quality_reason(facts.blacklisted)
        if verdict.reason is not None and facts.blacklisted is None:
            counts.newly_blacklisted += 1
            log.info("quality: blacklisted %s: %s", url, verdict.reason)
        if ours and verdict.reason is None:
            cleared.append((key, blacklist_column))
            counts.cleared += 1
        puts.append((key, encode(_verdict_row(url, verdict, now))))
        log.debug("quality: %s %.3f %s", url, verdict.score, verdict.state.value)
    store.delete_many(WEBPAGE_TABLE, cleared)  # the verdict puts hold no s:bl for these rows
    store.write(WEBPAGE_TABLE, puts)
    record_statuses(store, {history_keys[url]: tally.statuses for url, tally in tallies.items()
                            if tally.statuses and url in history_keys})
    _reweigh(store, weights, counts, max(1, rules.settings.hbase_batch_size))
    log.info("quality: %s", counts.summary())
    return counts
