"""`updatedb --batch ID`: discovered URLs become rows, hints merge, fetched rows get a schedule.

Three passes over the batch's records, each resumable by its mark: spread
(outlinks and redirects become inlink cells on their targets), merge (each
touched row's inlink cells merged into its hints, depth, radius and score,
new rows created; `k:mrg` where a rerun must not repeat it), schedule (the next fetch time from
`sitemapcrawl.model.schedule`; `k:upd` frees the rows). Then the quality and
row-count steps (`sitemapcrawl.scoring`) count what the passes hand them,
and a wholly parsed batch's records are deleted. A split merges links that
every split spread, so its run waits for the others between the two; or it
runs as two steps (`UpdateStep`: spread, then merge once every split's
spread is done), which an engine's tasks run as two phases, none waiting
for another. In full: docs/commands.md (updatedb), docs/quality.md.

Cost: proportional to the batch and the rows it touched, not the table: each
member and touched row read once, one put per link target, merged and fetched
row (batched; read ahead and written behind, `storage.overlap`, `WRITE_SPAN`
chunks at a time). Memory: a dozen chunks, a record per touched sitemap, origin and listed row.
"""

from __future__ import annotations

import functools
import logging
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sitemapcrawl.batch import registry
from sitemapcrawl.batch.calls import BatchSplit, StageUpdate, Work
from sitemapcrawl.clock import Clock, utc_now
from sitemapcrawl.errors import InvalidUrlError, SplitWaitError
from sitemapcrawl.model.cells import column_names, encode, fields_held, fields_set, overlaid, with_fields
from sitemapcrawl.model.entries import EXTENSION_FIELDS, merged_extensions
from sitemapcrawl.model.lastmod import lastmod_verdict, verdict_after_fetch, verdict_cell
from sitemapcrawl.model.linkvalues import (
    Inlink,
    InlinkKind,
    OutlinkKind,
    format_inlink,
    hop,
    parse_inlink,
    parse_outlink,
)
from sitemapcrawl.model.marks import Mark
from sitemapcrawl.model.newrows import new_page
from sitemapcrawl.model.schedule import SchedulePolicy, eagerest, schedule
from sitemapcrawl.model.splits import WHOLE, Split
from sitemapcrawl.model.webpage import BATCHROW_TABLE, WEBPAGE_TABLE, FetchStatus, SitemapSource, WebPage
from sitemapcrawl.modes import CrawlMode, UpdateStep
from sitemapcrawl.scoring.alike import AlikeCounting, AlikeRows
from sitemapcrawl.scoring.count_step import (
    BatchCounting,
    CountCounts,
    counters_built,
    crawled_before,
    mark_built,
    recount,
)
from sitemapcrawl.scoring.quality_step import QualityCounts, score_sitemaps
from sitemapcrawl.storage.batchrecords import batch_rows, drop_records, listed_in_batch, write_touching
from sitemapcrawl.storage.dueindex import DUE_FIELDS, write_pages
from sitemapcrawl.storage.overlap import WriteBehind, read_ahead
from sitemapcrawl.storage.store import Store
from sitemapcrawl.storage.tables import Unreadable
from sitemapcrawl.web import rowkeys, urls
from sitemapcrawl.web.rules import UrlRules

log = logging.getLogger(__name__)

WRITE_SPAN = 4
"""Read chunks whose merged rows the merge pass writes in one `write_pages` span: their due entries
go in one put (new rows due at one time share index rows), so a write-behind thread makes five
round trips per four chunks instead of eight. Two such threads write two spans at once (the
writes, not the merging, bound the pass); it holds up to three spans (two writing, one filling)."""

_SPREAD_FIELDS = ["status", "redirect_to", "outlinks", "depth", "radius", "score", "update_mark"]
_SCHEDULE_FIELDS = [
    "status", "fetch_time", "prev_fetch_time", "fetch_interval", "retries", "retry_at", "content_changed",
    "changefreq", "lastmod", "update_mark", "next_fetch",
]
MERGE_FIELDS = [
    *_SCHEDULE_FIELDS, "inlinks", "in_sitemap", "is_sitemap", "sitemap_source", "priority", "score",
    "depth", "radius", "merge_mark", "fetch_mark", "link_inlinks", "sitemaps_listing", "weighted_priority",
    "new_in_sitemap", *EXTENSION_FIELDS, "lastmod_verdict",
]
"""What the merge pass reads of a touched row: what `merge_row` needs and the marks."""


@dataclass
class UpdateCounts:
    """What an updatedb did, by pass."""

    batch_id: str = ""
    spread_rows: int = 0
    links: int = 0
    redirects: int = 0
    past_depth: int = 0
    """Link targets below zero depth/radius: no row written."""
    filtered: int = 0
    merged: int = 0
    new_rows: int = 0
    already_merged: int = 0
    scheduled: int = 0
    already_updated: int = 0
    not_rescheduled: int = 0
    """Fetched rows left without a next fetch time (gone, changefreq never)."""
    unparsed: int = 0
    """Fetched rows parse had not done (their outlinks or entries are not spread yet)."""
    by_status: Counter[str] = field(default_factory=Counter)
    quality: QualityCounts | None = None
    """The sitemap quality step (None: turned off)."""
    row_counts: CountCounts | None = None
    """The row counts and sitemap summaries kept for `serve` (`scoring.count_step`)."""
    unreadable: Unreadable = field(default_factory=Unreadable)
    """Rows that did not decode (logged, left alone)."""
    records_dropped: int = 0
    """Batch records (`batchrow`) deleted: the batch is finished (in this split)."""

    def summary(self) -> str:
        """One line for the end of the command."""
        statuses = ", ".join(f"{n} {status}" for status, n in sorted(self.by_status.items()))
        return (
            f"batch {self.batch_id}: links spread {self.links} from {self.spread_rows} rows "
            f"(redirects {self.redirects}, past depth/radius {self.past_depth}, filtered {self.filtered}); "
            f"merged {self.merged} rows (new {self.new_rows}); scheduled {self.scheduled}"
            + (f" ({statuses})" if statuses else "")
            + f", not rescheduled {self.not_rescheduled}"
            + (f"; {self.unparsed} fetched rows not parsed yet" if self.unparsed else "")
            + (f"; {self.quality.summary()}" if self.quality is not None else "")
            + (f"; {self.unreadable.rows} unreadable rows skipped" if self.unreadable.rows else "")
            + (f"; batch records removed {self.records_dropped}" if self.records_dropped else "")
        )


# ----------------------------------------------------------------- pass 1 --

def _grant(source: WebPage, target: str, rules: UrlRules) -> tuple[int, int]:
    settings = rules.settings
    depth = source.depth if source.depth is not None else settings.seed_depth
    radius = source.radius if source.radius is not None else settings.seed_radius
    same = urls.registered_domain_key(target) == urls.registered_domain_key(source.url)
    return hop(depth, radius, same)


def spread_cells(row: WebPage, batch_id: str, rules: UrlRules, mode: CrawlMode,
                 counts: UpdateCounts) -> Iterator[tuple[bytes, dict[bytes, bytes]]]:
    """The inlink puts one fetched row gives its outlinks' and redirect's targets. No I/O."""
    outlinks = {url: parse_outlink(text) for url, text in (row.outlinks or {}).items()}
    share = (row.score if row.score is not None else 1.0) / max(1, len(outlinks))
    targets: list[tuple[str, Inlink]] = []
    for url, outlink in outlinks.items():
        if outlink is None:
            continue
        try:
            depth, radius = _grant(row, url, rules)
        except InvalidUrlError:
            continue
        if depth < 0 or radius < 0:
            counts.past_depth += 1
            continue
        candidate = (mode is CrawlMode.MIXED and outlink.kind is OutlinkKind.SITEMAP
                     and rules.blacklist.match(url) is None)
        targets.append((url, Inlink(InlinkKind.LINK, depth, radius, batch_id, score=share,
                                    sitemap_candidate=candidate, anchor=outlink.anchor)))
        counts.links += 1
    if row.status is FetchStatus.REDIRECT and row.redirect_to:
        try:
            target = urls.canonicalize(row.redirect_to, rules.canonical)
        except InvalidUrlError:
            target = ""
        if target and target != row.url:
            if rules.url_filter.reason(target) is not None:
                counts.filtered += 1
            else:
                depth = row.depth if row.depth is not None else rules.settings.seed_depth
                radius = row.radius if row.radius is not None else rules.settings.seed_radius
                targets.append((target, Inlink(InlinkKind.REDIRECT, depth, radius, batch_id)))
                counts.redirects += 1
    for url, link in targets:
        try:
            key = rowkeys.row_key(url).encode("utf-8")
        except InvalidUrlError:
            continue
        yield key, encode(WebPage(url, inlinks={row.url: format_inlink(link)}, discover_mark=batch_id))


def _uncounted(pages: int) -> None:
    """Pages left out of the spread pass need no count (parse counted them)."""


def _spread(store: Store, batch_id: str, rules: UrlRules, mode: CrawlMode, counts: UpdateCounts,
            chunk: int, split: Split, on_progress: Callable[[int], None]) -> None:
    done = 0
    # The next chunk is read while one is spread: spread writes inlinks and discover marks, which it never reads.
    # In sitemap-only mode a page that did not redirect has nothing to spread (nor was it parsed): its member
    # record says so, and it is not read.
    for rows in read_ahead(batch_rows(store, Mark.FETCH, batch_id, _SPREAD_FIELDS + [Mark.PARSE], chunk,
                                      "updatedb", counts.unreadable, split, on_no_work=_uncounted
                                      if mode is CrawlMode.SITEMAP_ONLY else None)):
        puts: list[tuple[bytes, dict[bytes, bytes]]] = []
        for _key, row in rows:
            done += 1
            if Mark.UPDATE.done(row, batch_id):
                continue
            counts.spread_rows += 1
            if not Mark.PARSE.done(row, batch_id):
                counts.unparsed += 1
            puts.extend(spread_cells(row, batch_id, rules, mode, counts))
        write_touching(store, batch_id, puts, chunk)
        on_progress(done)


# ----------------------------------------------------------------- pass 2 --

def merge_row(row: WebPage, batch_id: str, mode: CrawlMode, policy: SchedulePolicy, now: datetime) -> WebPage:
    """The cells that merge a row's inlinks into it (see pass 2 above). No I/O.

    One pass over the inlinks (this runs once per row a batch touched: a
    million times for an inventory of a million URLs).
    """
    depth = row.depth if row.depth is not None else 0
    radius = row.radius if row.radius is not None else 0
    listed = linked = 0
    priority: float | None = None
    lastmod: datetime | None = None
    claimed: datetime | None = None  # the latest lastmod its sitemaps give, a future one too
    changefreq = None
    gained = 0.0
    indexed = candidate = uniform = False
    extended: list[Inlink] = []  # sitemap inlinks with extensions (news, images, videos, hreflang)
    for text in (row.inlinks or {}).values():
        link = parse_inlink(text)
        if link is None:
            continue
        kind = link.kind
        if link.depth > depth:
            depth = link.depth
        if link.radius > radius:
            radius = link.radius
        if link.sitemap_candidate:
            candidate = True
        if kind is InlinkKind.LINK:
            linked += 1
            if link.batch == batch_id:
                gained += link.score or 0.0
            continue
        if kind is InlinkKind.REDIRECT:
            continue
        # A sitemap or an index: its lastmod counts, unless in the future.
        if link.lastmod is not None and link.lastmod <= now and (lastmod is None or link.lastmod > lastmod):
            lastmod = link.lastmod
        if kind is InlinkKind.INDEX:
            indexed = True
            continue
        listed += 1
        if link.lastmod is not None and (claimed is None or link.lastmod > claimed):
            claimed = link.lastmod
        if link.priority is not None and (priority is None or link.priority > priority):
            priority = link.priority
        changefreq = eagerest(changefreq, link.changefreq)
        if link.uniform:
            uniform = True
        if link.images or link.videos or link.news_date is not None or link.alternates:
            extended.append(link)
    values: dict[str, Any] = {"depth": depth, "radius": radius, "score": (row.score or 0.0) + gained}
    if gained:
        # A rerun must not add the score twice: the mark says this batch's was added. A merge that adds
        # none gives the same cells when repeated and goes unmarked (see `Mark.MERGE`).
        values["merge_mark"] = batch_id
    if listed:
        values["in_sitemap"] = True
    elif row.in_sitemap:
        # Every sitemap that listed it stopped (parse removed their cells): no longer in sitemaps.
        values["in_sitemap"] = False
    # Two counts written only where they say more than absence does (`model.audit.listing_count`):
    # a sitemap-listed row's first merge writes neither (a million fewer cells per million URLs).
    if listed > 1 or (row.sitemaps_listing is not None and row.sitemaps_listing != listed):
        values["sitemaps_listing"] = listed
    if linked != (row.link_inlinks or 0):
        values["link_inlinks"] = linked
    if priority is not None:
        values["priority"] = priority
    if lastmod is not None:
        values["lastmod"] = lastmod
    if changefreq is not None:
        values["changefreq"] = changefreq
    values.update(merged_extensions(extended, row))
    # The audit's verdict of the lastmod its sitemaps claim (a future one too: the merge does not keep it).
    verdict = lastmod_verdict(claimed, uniform, row.fetch_time, row.prev_fetch_time, row.content_changed, now)
    values.update(verdict_cell(verdict, row.lastmod_verdict))
    source = None
    if indexed:
        source = SitemapSource.INDEX
    elif mode is CrawlMode.MIXED and candidate:
        source = SitemapSource.LINK
    if source is not None and row.is_sitemap is not False:
        values["is_sitemap"] = True
        if row.sitemap_source is None:
            values["sitemap_source"] = source
    hinted = WebPage(row.url, status=row.status, fetch_time=row.fetch_time, prev_fetch_time=row.prev_fetch_time,
                     fetch_interval=row.fetch_interval, retries=row.retries, retry_at=row.retry_at,
                     content_changed=row.content_changed,
                     changefreq=values.get("changefreq", row.changefreq),
                     lastmod=values.get("lastmod", row.lastmod))
    if row.status is None:
        # No `f:fi`: for a row never fetched, `schedule` derives the interval from the changefreq (or the
        # default) every time it plans, as it did here; one cell fewer per listed URL.
        planned = schedule(hinted, policy, now, just_fetched=False)
        return new_page(row.url, planned.next_fetch or now, None, score=values.pop("score"),
                        depth=values.pop("depth"), radius=values.pop("radius"), also=WebPage(row.url, **values))
    if row.fetch_time is not None and not Mark.FETCH.done(row, batch_id) and (changefreq or lastmod):
        planned = schedule(hinted, policy, now, just_fetched=False)
        if planned.next_fetch is not None:
            values["next_fetch"] = planned.next_fetch
        values["fetch_interval"] = planned.interval
        values["merge_mark"] = batch_id  # planned from `now`: a rerun would plan again, later
    return WebPage(row.url, **values)


def _merge(store: Store, batch_id: str, mode: CrawlMode, policy: SchedulePolicy, counts: UpdateCounts,
           chunk: int, now: datetime, split: Split, counting: AlikeCounting | None,
           on_progress: Callable[[int], None]) -> None:
    done = 0
    fields = MERGE_FIELDS if counting is None else list(dict.fromkeys([*MERGE_FIELDS, *counting.FIELDS]))
    span = chunk * WRITE_SPAN
    puts: list[tuple[bytes, dict[bytes, bytes]]] = []
    before: dict[bytes, WebPage] = {}
    alike = FirstListings(batch_id, mode, policy, now)
    # While a chunk is merged, HBase stores the ones before and reads the one after. Spans hold
    # disjoint rows, each carrying its merge mark: they may land in any order.
    with WriteBehind(workers=2) as later:
        for rows in read_ahead(batch_rows(store, Mark.DISCOVER, batch_id, fields, chunk, "updatedb",
                                          counts.unreadable, split)):
            if counting is not None:
                rows = counting.held(rows)
            puts.extend(_merge_chunk(rows, batch_id, mode, policy, counts, now, counting, alike))
            before.update(rows)  # the rows as read: their old index entries
            if len(puts) >= span:
                later.submit(write_pages, store, puts, before, span, now)
                puts, before = [], {}
            done += len(rows)
            on_progress(done)
        if puts:
            later.submit(write_pages, store, puts, before, span, now)


class FirstListings:
    """`merge_row` of rows that hold one inlink and nothing else, worked out once per inlink text.

    Why: an inventory's new rows are a million of these, and their merge is
    a function of the inlink's text alone (its hints, depth, radius and
    batch; the URL only names the row), of which a sitemap has a few thousand
    (priorities times changefreqs times lastmods). Other rows are merged one
    by one. Memory: the last `HELD` texts (`functools.lru_cache`).
    """

    HELD = 8192

    def __init__(self, batch_id: str, mode: CrawlMode, policy: SchedulePolicy, now: datetime) -> None:
        self.batch_id, self.mode, self.policy, self.now = batch_id, mode, policy, now
        self._merged = functools.lru_cache(maxsize=self.HELD)(self._merge_text)

    def merge(self, row: WebPage) -> tuple[WebPage | None, dict[bytes, bytes], str | None]:
        """(row as merged, cells of the merge, None), or for a row merged as one of its kind (rows of one
        inlink text leave the merge with the same fields but URL and inlink source: the counting judges them
        alike) (None, cells, that text), the row as merged left to `merged`. The cells are the caller's to
        change."""
        text = _only_inlink(row)
        alike = self._merged(text) if text is not None else None
        if alike is None:
            update = merge_row(row, self.batch_id, self.mode, self.policy, self.now)
            return overlaid(row, update), encode(update), None
        return None, dict(alike[0]), text

    def merged(self, row: WebPage, text: str) -> WebPage:
        """A row as read, holding inlink `text` alone, as `merge` leaves it."""
        alike = self._merged(text)
        assert alike is not None, "merge gave this text's rows one by one"
        return with_fields(row, alike[1])

    def _merge_text(self, text: str) -> tuple[dict[bytes, bytes], dict[str, Any]] | None:
        """The cells and fields (`fields_set`) of the merge of a row holding `text` as its one inlink; None when
        the text gives hreflang alternates (those rows are judged row by row, `scoring.hreflang_step`). Cached,
        so each text is parsed once."""
        link = parse_inlink(text)
        if link is not None and link.alternates:  # an `xhtml:link` of a sitemap entry
            return None
        update = merge_row(WebPage("", inlinks={"": text}), self.batch_id, self.mode, self.policy, self.now)
        return encode(update), fields_set(update)


def _only_inlink(row: WebPage) -> str | None:
    """The text of the row's one inlink when the row holds nothing else (as read: every other field None)."""
    inlinks = row.inlinks
    if inlinks is None or len(inlinks) != 1:
        return None
    return next(iter(inlinks.values())) if fields_held(row) == 2 else None  # the URL and the inlinks


def _merge_chunk(rows: list[tuple[bytes, WebPage]], batch_id: str, mode: CrawlMode, policy: SchedulePolicy,
                 counts: UpdateCounts, now: datetime, counting: AlikeCounting | None,
                 alike: FirstListings) -> list[tuple[bytes, dict[bytes, bytes]]]:
    """The puts that merge one chunk of touched rows, with the counting's cells of each row in its put."""
    puts: dict[bytes, dict[bytes, bytes]] = {}
    merged: list[tuple[bytes, WebPage]] = []  # the rows as this pass leaves them (alike ones as read): counting
    kinds: dict[bytes, str] = {}  # rows merged alike, given as read: row key -> their inlink text
    for key, row in rows:
        if Mark.MERGE.done(row, batch_id):
            counts.already_merged += 1
            merged.append((key, row))
            continue
        counts.merged += 1
        counts.new_rows += 1 if row.status is None else 0
        after, puts[key], kind = alike.merge(row)
        if kind is not None:
            kinds[key] = kind
        merged.append((key, row if after is None else after))
    _add_cells(puts, counting.take(merged, AlikeRows(kinds, alike.merged)) if counting is not None else [])
    return list(puts.items())


def _add_cells(puts: dict[bytes, dict[bytes, bytes]], more: list[tuple[bytes, dict[bytes, bytes]]]) -> None:
    """Add `more` cells to the puts of their rows (one mutation per row: none is written without the other)."""
    for key, cells in more:
        puts.setdefault(key, {}).update(cells)


# ----------------------------------------------------------------- pass 3 --

def touched(row: WebPage, batch_id: str) -> bool:
    """Did the merge pass take this row: marked `k:dsc` by the batch, or listed by a sitemap it parsed (whose
    entries carry the batch in their inlink, not a `k:dsc`)? `row` needs `discover_mark` and `inlinks`."""
    return Mark.DISCOVER.done(row, batch_id) or listed_in_batch(row, batch_id)


def _schedule_batch(store: Store, batch_id: str, policy: SchedulePolicy, counts: UpdateCounts, chunk: int,
                    now: datetime, split: Split, counting: AlikeCounting | None,
                    on_progress: Callable[[int], None]) -> None:
    done = 0
    next_fetch_column = column_names(WebPage, ["next_fetch"])
    fields = [*_SCHEDULE_FIELDS, *DUE_FIELDS, *(counting.FIELDS if counting is not None else ()), "discover_mark",
              "inlinks", "lastmod_verdict"]
    fields = list(dict.fromkeys(fields))
    # The next chunk is read while one is scheduled: each row is scheduled once, from cells no other row's
    # scheduling writes (spread and merge, which write across rows, are over).
    for rows in read_ahead(batch_rows(store, Mark.FETCH, batch_id, fields, chunk, "updatedb", counts.unreadable,
                                      split)):
        puts: dict[bytes, dict[bytes, bytes]] = {}
        unscheduled: list[tuple[bytes, list[bytes]]] = []
        # Fetched rows the merge pass did not count (not touched: no `k:dsc` and no entry inlink of the batch),
        # with their lastmod judged again by what the fetch saw (`model.lastmod`); what this pass writes
        # besides changes no count.
        fetched = [_judged_lastmod(key, row, now, puts) for key, row in rows if not touched(row, batch_id)]
        _add_cells(puts, counting.take(counting.held(fetched)) if counting is not None else [])
        for key, row in rows:
            done += 1
            if Mark.UPDATE.done(row, batch_id):
                counts.already_updated += 1
                continue
            planned = schedule(row, policy, now, just_fetched=True)
            counts.scheduled += 1
            counts.by_status[row.status.value if row.status else "none"] += 1
            if planned.next_fetch is None:
                counts.not_rescheduled += 1
                unscheduled.append((key, next_fetch_column))
            puts.setdefault(key, {}).update(encode(WebPage(row.url, next_fetch=planned.next_fetch,
                                                           fetch_interval=planned.interval, update_mark=batch_id)))
            log.debug("updatedb: %s next %s (%s)", row.url, planned.next_fetch, planned.reason)
        store.delete_many(WEBPAGE_TABLE, unscheduled)  # the puts do not hold f:nft for these rows
        write_pages(store, puts.items(), dict(rows), now=now)  # their due index entries (unscheduled rows' go stale)
        on_progress(done)


def _judged_lastmod(key: bytes, row: WebPage, now: datetime,
                    puts: dict[bytes, dict[bytes, bytes]]) -> tuple[bytes, WebPage]:
    """A fetched row with its lastmod verdict after the fetch (`model.lastmod.verdict_after_fetch`), the cell
    put in `puts` when it changed."""
    cells = verdict_after_fetch(row.lastmod, row.lastmod_verdict, row.fetch_time, row.prev_fetch_time,
                                row.content_changed, now)
    if not cells:
        return key, row
    verdict = cells["lastmod_verdict"]
    puts.setdefault(key, {}).update(encode(WebPage(row.url, lastmod_verdict=verdict)))
    return key, with_fields(row, {"lastmod_verdict": verdict})


def updatedb(
    store: Store,
    rules: UrlRules,
    batch_id: str,
    *,
    mode: CrawlMode | None = None,
    on_progress: Callable[[int], None] = lambda rows_done: None,
    clock: Clock = utc_now,
    wait: bool = False,
    split: Split = WHOLE,
    rescore: bool = False,
    step: UpdateStep = UpdateStep.ALL,
) -> UpdateCounts:
    """Merge a parsed batch into the table (see the module docstring); return the counts.

    `mode` defaults to the settings' `crawl_mode`. `on_progress` hears rows
    done in the current pass; `clock`, read once, is the time schedules plan from. `split`: only the rows of that split
    (`sitemapcrawl.model.splits`; a link's target is merged by the split that holds it). Raises only the store's errors
    (StoreUnavailableError, TableMissingError), UsageError for a bad mode and
    LeaseHeldError when another worker updates the batch (with `wait`, its
    lease is waited for). The batch is finished in the registry when it was
    wholly parsed before this began. A split marks `spread.K/N` after pass 1
    and waits for every split's before merging (SplitWaitError when one is
    not running: see `registry.barrier`); updatedb's counting (quality evidence,
    row counts) runs in every split, for its own rows. `rescore`: score every
    sitemap from scratch (`scoring.quality_step.score_sitemaps`) instead of the batch's
    touched ones, once (in the split that finishes last). `step`: SPREAD runs pass 1 alone and marks
    `spread.K/N` (a rerun of a split already spread does nothing); MERGE runs the rest, and first
    raises SplitWaitError, one line naming them, when a split of the batch has not spread its links.
    """
    mode = mode or rules.settings.crawl_mode
    store.require_tables(WEBPAGE_TABLE, BATCHROW_TABLE)
    now = clock()
    policy = SchedulePolicy.from_settings(rules.settings)
    counts = UpdateCounts(batch_id=batch_id)
    chunk = max(1, rules.settings.hbase_batch_size)
    before = registry.require_batch(store, batch_id)  # a typo is answered now, before any lease or wait
    finishes = registry.PARSE in before.done
    if step is UpdateStep.SPREAD:
        return _spread_step(store, rules, batch_id, mode, counts, chunk, split, before, wait, on_progress, now)
    if step is UpdateStep.MERGE:
        _check_spread(before, batch_id, split)

    # A table crawled before the counters existed gets them built from a full count, once.
    build = not counters_built(store)
    rescore = rescore or (build and crawled_before(store, batch_id, registry.UPDATE))
    quality = rules.settings.sitemap_quality and mode is not CrawlMode.LINKS_ONLY

    def batch_level() -> None:
        """Once per batch (by the split that finishes last when split): the full rescore and recount."""
        if rescore:
            if quality:
                counts.quality = score_sitemaps(store, rules, now, batch_id=batch_id, on_progress=on_progress)
            counts.row_counts = recount(store, batch_id)
        if rescore or build:
            mark_built(store, now)

    with registry.working_on(store, batch_id, registry.UPDATE, rules.settings, wait=wait, split=split,
                            on_last=None if split.whole else batch_level):
        if step is UpdateStep.ALL:
            _spread(store, batch_id, rules, mode, counts, chunk, split, on_progress)
            if not split.whole:  # links into this split's rows come from every split: all spread first
                registry.barrier(store, batch_id, registry.SPREAD, registry.UPDATE, split, rules.settings, wait=wait)
        # Every split counts its own rows (each host bucket's cells are its own); a full rescore counts all.
        counting = None if rescore else AlikeCounting(BatchCounting(
            store, rules, batch_id, now, quality=quality, split=split, unreadable=counts.unreadable))
        _merge(store, batch_id, mode, policy, counts, chunk, now, split, counting, on_progress)
        _schedule_batch(store, batch_id, policy, counts, chunk, now, split, counting, on_progress)
        if counting is not None:
            counts.quality, counts.row_counts = counting.finish()
        if split.whole:
            batch_level()
        if finishes:
            # Wholly parsed before we began: nothing will read this batch's records (of this split) again.
            counts.records_dropped = drop_records(store, batch_id, split, chunk)
    log.info("updatedb: %s", counts.summary())
    return counts


def _spread_step(store: Store, rules: UrlRules, batch_id: str, mode: CrawlMode, counts: UpdateCounts, chunk: int,
                 split: Split, before: registry.BatchState, wait: bool, on_progress: Callable[[int], None],
                 now: datetime) -> UpdateCounts:
    """updatedb's first step alone: spread this split's links under its lease, then mark `spread.K/N`."""
    split_name = registry.phase_split_name(registry.SPREAD, split)
    if split_name in before.done:
        log.info("updatedb: batch %s split %s spread its links already", batch_id, split.text())
        return counts
    with registry.holding(store, batch_id, registry.UPDATE, rules.settings, wait=wait, split=split):
        _spread(store, batch_id, rules, mode, counts, chunk, split, on_progress)
    registry.record_done(store, batch_id, [split_name], now)
    log.info("updatedb: %s (spread step)", counts.summary())
    return counts


def _check_spread(state: registry.BatchState, batch_id: str, split: Split) -> None:
    """SplitWaitError naming the splits of the batch that have not spread their links (merge needs them all)."""
    missing = registry.missing_splits(state, registry.SPREAD, split.count)
    if missing:
        names = ", ".join(s.text() for s in missing[:8]) + (" ..." if len(missing) > 8 else "")
        raise SplitWaitError(f"batch {batch_id}: split(s) {names} have not spread their links: run `updatedb "
                             f"--step spread --split {missing[0].text()}` (each of them) before the merge step")


def updatedb_phase(work: Work, options: BatchSplit, progress: StageUpdate) -> UpdateCounts:
    """`updatedb` as a phase call (`batch.calls`): on `work`, its step, progress as stage `updatedb`."""
    return updatedb(work.store, work.rules, options.batch_id, mode=options.mode, split=options.split, step=options.step,
                    wait=options.wait, clock=work.clock, on_progress=lambda done: progress("updatedb", done, None, 0))
