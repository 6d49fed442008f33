"""`generate`: pick the rows due for fetching, best first, and stamp them with a batch id.

As Nutch's generator, but reading in rank order: the due rows (the ready
queue of the due index, `sitemapcrawl.model.due`, best first) that no
unfinished batch holds, within depth and radius, passing the URL filter,
the blacklist and the crawl mode, ranked by `sitemapcrawl.model.rank`,
capped per host and in total, split for fetch by politeness key, recorded as
members of the batch (`batchrow`) and registered (`sitemapcrawl.batch.registry`).
In full: docs/commands.md, generate.

Cost: moving the waiting entries that came due since the last generate, one
scan per host with due rows, then the entries and rows of what is chosen
(plus what the caps and filters skip), not of what is due (`--rescan`: one
full scan); per selected row one member record and one put of three cells.
"""

from __future__ import annotations

import heapq
import logging
import re
import secrets
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NamedTuple

from sitemapcrawl.batch import registry
from sitemapcrawl.batch.calls import StageUpdate, Work
from sitemapcrawl.clock import Clock, utc_now
from sitemapcrawl.config import MAX_FETCH_SPLITS
from sitemapcrawl.errors import InvalidUrlError, UsageError
from sitemapcrawl.model.cells import encode
from sitemapcrawl.model.due import LAYOUT, kinds_for
from sitemapcrawl.model.marks import held_by
from sitemapcrawl.model.rank import rank_order
from sitemapcrawl.model.splits import WHOLE, Split
from sitemapcrawl.model.webpage import BATCHROW_TABLE, DUE_TABLE, WEBPAGE_TABLE, DueRow, WebPage
from sitemapcrawl.modes import CountMode, CrawlMode, QueueBy
from sitemapcrawl.storage import batchrecords, dueindex, tables
from sitemapcrawl.storage.politeness import Resolver, queue_key
from sitemapcrawl.storage.readyqueue import HostQueue, ReadyQueues
from sitemapcrawl.storage.store import Store
from sitemapcrawl.web import urls
from sitemapcrawl.web.rules import UrlRules

log = logging.getLogger(__name__)

_READ_FIELDS = [
    "status", "next_fetch", "fetch_time", "score", "priority", "depth", "radius", "is_sitemap",
    "in_sitemap", "blacklisted", "generate_mark", "update_mark", "fetch_mark", "weighted_priority",
    "new_in_sitemap",
]
_HELD = "in an unfinished batch"
_BATCH_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


@dataclass(frozen=True)
class GenerateOptions:
    """The limits of one generate run (None: no limit)."""

    top_n: int | None = None
    max_per_host: int | None = None
    count_mode: CountMode = CountMode.HOST
    fetch_splits: int = 1
    mode: CrawlMode = CrawlMode.MIXED
    batch_id: str | None = None
    """Use this batch id instead of a new one: a new id, or the batch of a generate run again for the
    splits it did not finish (its rows already marked are chosen again, so the caps see them)."""
    documents_only: bool = False
    """Select sitemap documents alone (an inventory: listed pages get rows, never fetches)."""
    queue_by: QueueBy | None = None
    """What fetch splits follow: host or IP (None: the setting `queue_by`)."""
    split: Split = WHOLE
    """Only the due rows of this split (`sitemapcrawl.model.splits`); caps apply within the split."""
    rescan: bool = False
    """Find due rows by a full scan and rebuild the due index from it (a repair), not through the index."""

    def check(self) -> None:
        """Raise UsageError naming the first bad option."""
        if self.top_n is not None and self.top_n < 1:
            raise UsageError(f"--topN must be at least 1, not {self.top_n}")
        if self.max_per_host is not None and self.max_per_host < 1:
            raise UsageError(f"--max-per-host must be at least 1, not {self.max_per_host}")
        if not 1 <= self.fetch_splits <= MAX_FETCH_SPLITS:
            raise UsageError(f"--fetch-splits must be in 1..{MAX_FETCH_SPLITS}, not {self.fetch_splits}")
        if self.batch_id is not None and not _BATCH_ID.fullmatch(self.batch_id):
            raise UsageError(f"batch id {self.batch_id!r}: use letters, digits, '.', '_' and '-'")
        if not self.split.whole and self.batch_id is None:
            raise UsageError("--split needs --batch-id: every split of a generate adds to the same batch")

    def batch_for(self, now: datetime) -> str:
        """The batch a run adds to: the id given, or a new one (`new_batch_id`). A run of several splits
        asks once, before any split runs, and gives the id to each."""
        return self.batch_id or new_batch_id(now)


@dataclass
class GenerateCounts:
    """What a generate did: the batch, rows read and selected, and why others were not."""

    batch_id: str | None = None
    """None when nothing was selected (no batch was written)."""
    due: int = 0
    """Due rows read: those of the kinds the mode selects through the index, every one with a full scan."""
    selected: int = 0
    by_fetch_split: Counter[int] = field(default_factory=Counter)
    by_host: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    newly_blacklisted: int = 0
    held: Counter[str] = field(default_factory=Counter)
    """Due rows held by each unfinished batch (not selected again)."""
    rescanned: bool = False
    """The due rows came from a full scan that rebuilt the due index (`--rescan`, or an index never built)."""
    index: dueindex.DueRead = field(default_factory=dueindex.DueRead)
    """What the reads of the due index met: entries and rows read, entries moved and dropped."""

    def held_lines(self) -> list[str]:
        """A warning per unfinished batch that holds due rows, saying how to finish it."""
        return [f"{n} due rows are held by unfinished batch {batch}: `sitemapcrawl batches` shows it; "
                f"`sitemapcrawl crawl` or `sitemapcrawl batches --resume {batch}` finishes it"
                for batch, n in sorted(self.held.items())]

    def summary(self) -> str:
        """One line for the end of the command."""
        skipped = ", ".join(f"{n} {why}" for why, n in sorted(self.skipped.items()))
        return (f"batch {self.batch_id or '-'}: due {self.due}, selected {self.selected}, "
                f"hosts {len(self.by_host)}" + (f", skipped: {skipped}" if skipped else "")
                + ("; due index rebuilt by a full scan" if self.rescanned else
                   f"; read {self.index.entries} queue entries and {self.index.rows} rows")
                + (f"; {self.index.promoted} entries came due" if self.index.promoted else "")
                + (f"; {self.index.stale} stale due index entries dropped" if self.index.stale else ""))


def new_batch_id(now: datetime) -> str:
    """A fresh batch id: the UTC time and four random hex digits (`20250102030405-1a2b`)."""
    return now.astimezone(UTC).strftime("%Y%m%d%H%M%S") + "-" + secrets.token_hex(2)


def fetch_split_of(host_key: str, fetch_splits: int) -> int:
    """The fetch split of a politeness key (host or IP): crc32 of it mod `fetch_splits` (stable everywhere)."""
    return zlib.crc32(host_key.encode("utf-8")) % fetch_splits


def mode_allows(mode: CrawlMode, row: WebPage) -> bool:
    """Does the crawl mode fetch this row? (see the module docstring)."""
    if mode is CrawlMode.LINKS_ONLY:
        return not row.is_sitemap
    if mode is CrawlMode.SITEMAP_ONLY:
        return bool(row.is_sitemap or row.in_sitemap)
    return True


def past_constraint(row: WebPage) -> bool:
    """Is the row beyond its depth or radius (a negative number of hops left)?"""
    return (row.depth is not None and row.depth < 0) or (row.radius is not None and row.radius < 0)


class Candidate(NamedTuple):
    """A row that passed every test, waiting for the caps; `a < b` when `a` comes after `b`.

    Ordered as the ready queue is (`sitemapcrawl.model.rank`): by order, then the smaller row key
    first, so a full scan and the queue choose the same rows.
    """

    rank: int
    key: bytes
    url: str
    host: str
    count_key: str
    is_sitemap: bool = False

    def __lt__(self, other: Any) -> bool:
        return (self.rank, other.key) < (other.rank, self.key)

    def __gt__(self, other: Any) -> bool:
        return bool(other < self)


def _rescan(store: Store, now: datetime, counts: GenerateCounts,
            unreadable: tables.Unreadable) -> Iterator[tuple[bytes, WebPage]]:
    """Every due row, by a full scan that rebuilds the due index (then sweeps it and marks it built)."""
    for chunk in dueindex.rebuild_due(store, now, _READ_FIELDS, "generate", unreadable):
        yield from chunk
    counts.index.stale = dueindex.sweep_due(store)
    dueindex.mark_due_built(store, now)
    counts.rescanned = True


class _Judge:
    """Turns a due row into a Candidate, or counts why it is not one (the tests both reads share)."""

    def __init__(self, rules: UrlRules, options: GenerateOptions, counts: GenerateCounts,
                 on_progress: Callable[[int], None]) -> None:
        self.rules, self.options, self.counts, self.on_progress = rules, options, counts, on_progress
        self.blacklisted: list[tuple[bytes, WebPage]] = []

    def __call__(self, key: bytes, row: WebPage) -> Candidate | None:
        counts = self.counts
        counts.due += 1
        if counts.due % 1000 == 0:
            self.on_progress(counts.due)
        reason = _skip_reason(row, key, self.rules, self.options, self.blacklisted)
        if reason is not None:
            counts.skipped[reason] += 1
            if reason == _HELD:
                counts.held[held_by(row) or "?"] += 1
            return None
        try:
            host = urls.host_key(row.url, self.rules.canonical)
            count_key = host if self.options.count_mode is CountMode.HOST else urls.registered_domain_key(
                row.url, self.rules.canonical)
        except InvalidUrlError:
            counts.skipped["bad row"] += 1
            return None
        return Candidate(rank_order(row, key), key, row.url, host, count_key, bool(row.is_sitemap))


def _choose_ranked(store: Store, options: GenerateOptions, now: datetime, counts: GenerateCounts,
                   unreadable: tables.Unreadable, judge: _Judge, marker: DueRow) -> list[Candidate]:
    """The chosen rows read from the ready queue best first: greedy under the caps, stopping at topN.

    The queue is in the order a full scan would sort by, so taking the best
    row whose host has room, until topN, chooses what the full scan chooses;
    a host whose cap is full is dropped unread (its other rows rank lower).
    """
    kinds = kinds_for(options.mode, options.documents_only)
    dueindex.promote(store, kinds, now, counts.index)
    if marker.layout != LAYOUT:
        log.info("generate: converted the due index of this table to ranked queues (once): %d due entries moved",
                 counts.index.promoted)
        dueindex.mark_due_built(store, marker.built or now)
    cap, top = options.max_per_host, options.top_n
    want = min(cap or store.batch_size, top or store.batch_size) + 1
    queues = ReadyQueues(store, kinds, options.split, now, _READ_FIELDS, "generate", unreadable, counts.index, want)
    kept: Counter[str] = Counter()
    chosen: list[Candidate] = []
    seen: set[bytes] = set()

    def room(queue: HostQueue) -> int:
        if cap is None:
            return store.batch_size
        return cap - kept[queue.tag] if isinstance(queue.tag, str) else cap

    while top is None or len(chosen) < top:
        batch = queues.take(top - len(chosen) if top is not None else store.batch_size, room)
        if not batch:
            break
        for entry, row, queue in batch:
            if (top is not None and len(chosen) >= top) or entry.row_key in seen:
                continue
            seen.add(entry.row_key)
            candidate = judge(entry.row_key, row)
            if candidate is None:
                continue
            queue.tag = candidate.count_key
            if cap is not None and kept[candidate.count_key] >= cap:
                counts.skipped["over max per host"] += 1
                queues.drop(queue)
                continue
            kept[candidate.count_key] += 1
            chosen.append(candidate)
    return chosen


class Selector:
    """Keeps the best candidates under the caps (`max_per_host`, `top_n`), in bounded memory.

    `add` each due candidate; `chosen` gives the selection, best first. Memory:
    at most `max_per_host` candidates per count key (or `top_n` in all).
    """

    def __init__(self, options: GenerateOptions) -> None:
        self.options = options
        self.per_key: dict[str, list[Candidate]] = {}
        self.overall: list[Candidate] = []
        self.capped = 0

    def add(self, candidate: Candidate) -> None:
        cap, top = self.options.max_per_host, self.options.top_n
        if cap is not None:
            heap = self.per_key.setdefault(candidate.count_key, [])
            self._push(heap, candidate, cap, count_cap=True)
        elif top is not None:
            self._push(self.overall, candidate, top, count_cap=False)
        else:
            self.overall.append(candidate)

    def _push(self, heap: list[Candidate], candidate: Candidate, size: int, count_cap: bool) -> None:
        if len(heap) < size:
            heapq.heappush(heap, candidate)
            return
        if count_cap:
            self.capped += 1
        heapq.heappushpop(heap, candidate)

    def chosen(self) -> tuple[list[Candidate], int]:
        """The selected candidates (best first), each row once, and how many the topN cut.

        A row can come twice from the due index (two entries left by a rerun
        after a crash, see `dueindex.due_pages`); it is selected once.
        """
        pool: Iterable[Candidate] = self.overall
        if self.options.max_per_host is not None:
            pool = [c for heap in self.per_key.values() for c in heap]
        ranked = list({c.key: c for c in sorted(pool, reverse=True)}.values())
        top = self.options.top_n
        if top is None or len(ranked) <= top:
            return ranked, 0
        return ranked[:top], len(ranked) - top


def generate(
    store: Store,
    rules: UrlRules,
    options: GenerateOptions,
    *,
    on_progress: Callable[[int], None] = lambda scanned: None,
    clock: Clock = utc_now,
) -> GenerateCounts:
    """Select the due rows (see the module docstring), stamp them, return the counts.

    `on_progress` hears the number of due rows read so far; `clock`, read
    once, is the time rows must be due by (and names a new batch). Raises UsageError
    for bad options, TableMissingError or StoreUnavailableError from the store.
    """
    options.check()
    store.require_tables(WEBPAGE_TABLE, BATCHROW_TABLE, DUE_TABLE)
    now = clock()
    counts = GenerateCounts()
    unreadable = tables.Unreadable()
    judge = _Judge(rules, options, counts, on_progress)
    marker = None if options.rescan else dueindex.due_index_marker(store)
    if marker is None:
        if not options.rescan:
            log.info("generate: the due index of this table was never built; rebuilding it from a full scan (once)")
        selector = Selector(options)
        for key, row in _rescan(store, now, counts, unreadable):
            if options.split.whole or options.split.holds(key):
                candidate = judge(key, row)
                if candidate is not None:
                    selector.add(candidate)
        chosen, cutoff_by_topn = selector.chosen()
        if selector.capped:
            counts.skipped["over max per host"] = selector.capped
        if cutoff_by_topn:
            counts.skipped["over topN"] = cutoff_by_topn
    else:
        chosen = _choose_ranked(store, options, now, counts, unreadable, judge, marker)
    if unreadable.rows:
        counts.due += unreadable.rows
        counts.skipped["bad row"] += unreadable.rows
    for line in counts.held_lines():
        log.info("generate: %s", line)
    if judge.blacklisted:
        store.write(WEBPAGE_TABLE, ((key, encode(row)) for key, row in judge.blacklisted))
        counts.newly_blacklisted = len(judge.blacklisted)
    if not chosen:
        if options.batch_id is not None:  # a split of a batch, finished with nothing selected
            registry.end_generating(store, options.batch_id, options.split)
        log.info("generate: %s", counts.summary())
        return counts
    batch = options.batch_for(now)
    counts.batch_id = batch

    by = options.queue_by or rules.settings.queue_by
    resolve = Resolver()

    def split_members() -> Iterator[tuple[Candidate, int]]:
        for candidate in chosen:
            key = queue_key(candidate.host, by, resolve) if options.fetch_splits > 1 else candidate.host
            part = fetch_split_of(key, options.fetch_splits)
            counts.by_fetch_split[part] += 1
            counts.by_host[candidate.host] += 1
            yield candidate, part

    members = list(split_members())
    # Registered before its rows are marked: a generate killed half-way leaves
    # a batch that crawl finishes, never rows held by a batch nobody knows;
    # the split is generating until its rows are marked (`finish_generating`).
    # Recorded before marked too: later phases read the batch from its records.
    registry.record_generated(store, batch, now, len(chosen), options.fetch_splits, options.mode.value,
                             options.split)
    batchrecords.record_members(store, batch, ((candidate.key, part, candidate.is_sitemap)
                                               for candidate, part in members))
    counts.selected = store.write(WEBPAGE_TABLE, (
        (candidate.key, encode(WebPage(candidate.url, generate_mark=batch, batch_id=batch, fetch_split=part)))
        for candidate, part in members)).rows
    registry.finish_generating(store, batch, options.split, len(chosen), now)
    log.info("generate: %s", counts.summary())
    return counts


def _skip_reason(
    row: WebPage, key: bytes, rules: UrlRules, options: GenerateOptions, blacklisted: list[tuple[bytes, WebPage]]
) -> str | None:
    """Why a due row is not a candidate, or None. Appends newly blacklisted sitemaps."""
    if not row.url:
        return "bad row"
    holder = held_by(row)
    if holder is not None and holder != options.batch_id:  # a generate run again takes its own rows again
        return _HELD
    if not mode_allows(options.mode, row):
        return f"not in {options.mode.value} mode"
    if options.documents_only and not row.is_sitemap:
        return "not a sitemap document"
    if past_constraint(row):
        return "past depth/radius"
    if row.is_sitemap:
        if row.blacklisted:
            return "blacklisted sitemap"
        try:
            why = rules.blacklist.match(row.url)
        except InvalidUrlError:
            return "bad row"
        if why is not None:
            blacklisted.append((key, WebPage(row.url, blacklisted=why)))
            return "blacklisted sitemap"
    if rules.url_filter.reason(row.url) is not None:
        return "filtered"
    return None


def generate_phase(work: Work, options: GenerateOptions, progress: StageUpdate) -> GenerateCounts:
    """`generate` as a phase call (`batch.calls`): on `work`, progress as stage `generate`."""
    return generate(work.store, work.rules, options, on_progress=lambda done: progress("generate", done, None, 0),
                    clock=work.clock)
