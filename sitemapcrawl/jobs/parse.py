"""`parse --batch ID`: fetched sitemaps become entries on their targets; HTML pages get outlinks.

The batch's fetched rows not yet parsed (`k:prs`), found through its member
records. A sitemap is read by the sitemap engine from its stored body, scoped
by the hosts that vouch for it; each entry becomes one blind, idempotent
`il:` cell on its target (recorded as listed first; its `b=` is the batch's
mark, and a batch without records, read by scanning, gets `k:dsc` too),
which updatedb merges; `storage.history` records what the parse changed. An
HTML page gets its outlinks (`ol:`), unless fetch read nofollow (what a
page says about itself is fetch's: `web.pagesays`). Why
blind puts, and the rules in full: docs/commands.md, parse.

Cost: proportional to the batch, not the table: one range scan of member
records and one multi-get of their rows per chunk; one get per stored body,
`PARSE_THREADS` rows at a time; two batched writes per `hbase_batch_size`
entries. Memory: `PARSE_THREADS` documents' streams and one write batch.
"""

from __future__ import annotations

import functools
import logging
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from datetime import datetime
from typing import Any

from sitemapcrawl.batch import registry
from sitemapcrawl.batch.calls import BatchSplit, StageUpdate, Work
from sitemapcrawl.clock import Clock, utc_now
from sitemapcrawl.errors import InvalidUrlError, SitemapError
from sitemapcrawl.model.cells import encode, map_column
from sitemapcrawl.model.changes import Hints, hints_of
from sitemapcrawl.model.entries import NewsCount, UniformLastmods, extension_fields
from sitemapcrawl.model.linkvalues import (
    Inlink,
    InlinkKind,
    Outlink,
    OutlinkKind,
    format_inlink,
    format_outlink,
    hop,
)
from sitemapcrawl.model.marks import Mark
from sitemapcrawl.model.splits import WHOLE, Split
from sitemapcrawl.model.webpage import BATCHROW_TABLE, HISTORY_TABLE, WEBPAGE_TABLE, FetchStatus, SitemapSource, WebPage
from sitemapcrawl.modes import CrawlMode
from sitemapcrawl.sitemaps.document import parse_sitemap
from sitemapcrawl.sitemaps.limits import SitemapLimits
from sitemapcrawl.sitemaps.model import (
    ChangeFreq,
    PageEntry,
    ProblemKind,
    SitemapRef,
    add_problem_counts,
    problem_lines,
)
from sitemapcrawl.sitemaps.scope import (
    ScopeContext,
    format_vouchers,
    inherited_vouchers,
)
from sitemapcrawl.storage.batchrecords import batch_rows, has_records, write_listed
from sitemapcrawl.storage.dueindex import write_pages
from sitemapcrawl.storage.history import record_parse
from sitemapcrawl.storage.overlap import side_by_side
from sitemapcrawl.storage.store import Store
from sitemapcrawl.storage.tables import Unreadable, read_page, read_pages
from sitemapcrawl.storage.vouchers import vouchers_through_redirects
from sitemapcrawl.web import rowkeys, urls
from sitemapcrawl.web.htmllinks import extract_links
from sitemapcrawl.web.pagesays import is_html
from sitemapcrawl.web.rules import UrlRules

log = logging.getLogger(__name__)

#: Why a page is not parsed in sitemap-only mode (the mode follows no links).
_SITEMAP_ONLY_PAGE = "page (sitemap-only mode)"
_READ_FIELDS = [
    "status", "is_sitemap", "sitemap_source", "content_type", "blacklisted", "cross_submitters",
    "vouched_by", "depth", "radius", "parse_mark", "fetch_mark", "nofollow",
]


@dataclass(frozen=True)
class SitemapOutcome:
    """What parsing one sitemap row gave (for the CLI's per-sitemap line)."""

    url: str
    kind: str | None
    """urlset, index, text, rss or atom; None when it was not read as a sitemap."""
    entries: int
    problems: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    """Leniency warnings: rules the document breaks that were forgiven."""


@dataclass
class ParseCounts:
    """What a parse did, summed over the batch."""

    batch_id: str = ""
    rows: int = 0
    already_parsed: int = 0
    sitemaps: int = 0
    sitemap_errors: int = 0
    blacklisted: int = 0
    entries: int = 0
    children: int = 0
    dropped_scope: int = 0
    dropped_scope_host: int = 0
    """Of `dropped_scope`, entries on a host that does not vouch (the rest: outside the folder)."""
    dropped_filter: int = 0
    dropped_limit: int = 0
    dropped_depth: int = 0
    """Entries that would have been past depth/radius: no row written."""
    invalid: int = 0
    lenient: int = 0
    """Sitemaps read with leniency warnings (`s:wn`)."""
    baselines: int = 0
    """Sitemaps parsed for the first time (their history starts here)."""
    changes: Counter[str] = field(default_factory=Counter)
    """Changes found in re-parsed sitemaps, by kind (added, removed, lastmod...)."""
    pages: int = 0
    outlinks: int = 0
    not_parsed: Counter[str] = field(default_factory=Counter)
    """Rows marked parsed without work, by why (not fetched, not HTML, no body...)."""
    unreadable: Unreadable = field(default_factory=Unreadable)
    """Rows of the batch that did not decode (logged, left alone)."""

    def summary(self) -> str:
        """One line for the end of the command."""
        skipped = ", ".join(f"{n} {why}" for why, n in sorted(self.not_parsed.items()))
        return (
            f"batch {self.batch_id}: rows {self.rows} (already parsed {self.already_parsed}), "
            f"sitemaps {self.sitemaps} (errors {self.sitemap_errors}, blacklisted {self.blacklisted}), "
            f"entries {self.entries}, child sitemaps {self.children}, dropped: scope {self.dropped_scope} "
            f"(folder {self.dropped_scope - self.dropped_scope_host}, host {self.dropped_scope_host}), "
            f"filter {self.dropped_filter}, limit {self.dropped_limit}, depth/radius {self.dropped_depth}, "
            f"invalid {self.invalid}, sitemaps with warnings {self.lenient}; changes: "
            + (", ".join(f"{n} {kind}" for kind, n in sorted(self.changes.items())) or "none")
            + f" (first parses {self.baselines}); pages {self.pages}, outlinks {self.outlinks}"
            + (f"; not parsed: {skipped}" if skipped else "")
            + (f"; {self.unreadable.rows} unreadable rows skipped" if self.unreadable.rows else "")
        )

    def add(self, other: ParseCounts) -> None:
        """Add `other`'s counts (of some rows of the same batch) to these."""
        for each in fields(self):
            mine, theirs = getattr(self, each.name), getattr(other, each.name)
            if isinstance(mine, int):
                setattr(self, each.name, mine + theirs)
            elif isinstance(mine, Counter):
                mine.update(theirs)
        self.unreadable.rows += other.unreadable.rows


class EntryInlinks:
    """The inlink cell value and history hints of a sitemap's entries, made once per kind of entry.

    Why: a sitemap's entries share a few thousand hint sets (lastmods times
    changefreqs times priorities) for up to 50,000 entries; an entry's cell
    is a function of its depth, radius and hints alone (the batch and the
    vouchers an index passes on are the parse's). Memory: the last `HELD`
    kinds (`functools.lru_cache`).
    """

    HELD = 8192

    def __init__(self, batch_id: str, passed_on: tuple[tuple[str, int], ...]) -> None:
        self.batch_id, self.passed_on = batch_id, passed_on
        self._made = functools.lru_cache(maxsize=self.HELD)(self._make)

    def of(self, entry: PageEntry | SitemapRef, depth: int, radius: int,
           extras: Mapping[str, Any] | None = None) -> tuple[bytes, Hints]:
        """The entry's inlink cell value (an `index` inlink for a child sitemap) and its `Hints`; `extras`: more
        `Inlink` fields (the entry's extensions, `model.entries`; `uniform`), made for this entry alone."""
        if isinstance(entry, SitemapRef):
            return self._made(depth, radius, entry.lastmod, None, None, index=True)
        if extras:
            link = Inlink(InlinkKind.SITEMAP, depth, radius, self.batch_id, priority=entry.priority,
                          changefreq=entry.changefreq, lastmod=entry.lastmod, **extras)
            return (format_inlink(link).encode("utf-8"),
                    hints_of(entry.lastmod, entry.changefreq, entry.priority))
        return self._made(depth, radius, entry.lastmod, entry.changefreq, entry.priority)

    def _make(self, depth: int, radius: int, lastmod: datetime | None, changefreq: ChangeFreq | None,
              priority: float | None, index: bool = False) -> tuple[bytes, Hints]:
        if index:
            link = Inlink(InlinkKind.INDEX, depth, radius, self.batch_id, lastmod=lastmod, vouched_by=self.passed_on)
        else:
            link = Inlink(InlinkKind.SITEMAP, depth, radius, self.batch_id, priority=priority,
                          changefreq=changefreq, lastmod=lastmod)
        return format_inlink(link).encode("utf-8"), hints_of(lastmod, changefreq, priority)


class _SitemapParse:
    """Parse one stored sitemap and stream its entries to their target rows."""

    def __init__(self, row: WebPage, batch_id: str, rules: UrlRules, counts: ParseCounts, now: datetime,
                 vouchers: dict[str, int] | None = None, mark_entries: bool = False) -> None:
        settings = rules.settings
        self.row, self.now = row, now
        self.news = NewsCount()
        self.lastmods = UniformLastmods()
        # What each child of an index inherits (nothing past max_index_depth).
        passed_on = tuple(sorted(inherited_vouchers(vouchers or {}, settings.max_index_depth).items()))
        # The entry's inlink says `b=<batch>`: updatedb finds it through the listed records without a `k:dsc`
        # (one cell fewer per entry); a batch without records is found by scanning for `k:dsc`.
        discover_mark = batch_id if mark_entries else None
        # Every entry's put is its inlink cell from this sitemap (the one column) and the same marks: encoded
        # once here, not as a row per entry (a million entries in an inventory).
        self.inlink_column = map_column(WebPage, "inlinks", row.url)
        self.entry_marks = encode(WebPage("", discover_mark=discover_mark))
        self.rules = rules
        self.counts = counts
        self.depth = row.depth if row.depth is not None else settings.seed_depth
        self.radius = row.radius if row.radius is not None else settings.seed_radius
        self.written = self.filtered = self.invalid = self.past_depth = self.blacklisted = 0
        self.source_domain: str | None = None
        self.origin: str | None = None
        """`scheme://host:port/` of the sitemap's URL ("" when it has no path), once worked out."""
        self.listed: dict[str, Hints] = {}
        """Target URL -> hints of every entry written: what `record_parse` compares."""
        self.inlinks = EntryInlinks(batch_id, passed_on)

    def _target(self, loc: str) -> tuple[str, int, int] | None:
        """Canonical target URL and its grant, or None (counted) when it is not kept."""
        try:
            target = urls.canonicalize(loc, self.rules.canonical)
            same = self._same_site(target)
        except InvalidUrlError:
            self.invalid += 1
            return None
        if self.rules.url_filter.reason(target) is not None:
            self.filtered += 1
            return None
        depth, radius = hop(self.depth, self.radius, same)
        if depth < 0 or radius < 0:
            self.past_depth += 1
            return None
        return target, depth, radius

    def _same_site(self, target: str) -> bool:
        """Is a canonical target on the sitemap's registered domain? InvalidUrlError when either has none.

        A target on the sitemap's own scheme, host and port (most entries) is, without working out its
        domain; the others are compared by registered domain.
        """
        if self.origin is None:
            scheme_end = self.row.url.find("://")
            slash = self.row.url.find("/", scheme_end + 3) if scheme_end > 0 else -1
            self.origin = self.row.url[:slash + 1] if slash > 0 else ""
        if self.origin and target.startswith(self.origin):
            return True
        return urls.registered_domain_key(target) == self._source_domain()

    def _source_domain(self) -> str:
        """The sitemap's registered domain (InvalidUrlError when it has none): worked out once, not per entry."""
        if self.source_domain is None:
            self.source_domain = urls.registered_domain_key(self.row.url)
        return self.source_domain

    def cells(self, document: Iterator[PageEntry | SitemapRef]) -> Iterator[tuple[bytes, dict[bytes, bytes]]]:
        """One put per kept entry: the inlink cell and the discover marker."""
        for entry in document:
            found = self._target(entry.loc)
            if found is None:
                continue
            target, depth, radius = found
            if isinstance(entry, SitemapRef):
                why = self.rules.blacklist.match(target)
                if why is not None:
                    self.blacklisted += 1
                    continue
            try:
                key = rowkeys.row_key(target).encode("utf-8")
            except InvalidUrlError:
                self.invalid += 1
                continue
            self.written += 1
            if isinstance(entry, SitemapRef):
                inlink, self.listed[target] = self.inlinks.of(entry, depth, radius)
                yield key, {self.inlink_column: inlink, **self.entry_marks}
                continue
            extras = extension_fields(entry, self.now, self._canonical, self.news)
            for held in self.lastmods.add(entry.lastmod, (key, target, entry, depth, radius, extras)):
                yield self._entry_put(*held, uniform=False)
        # Entries that all carried one lastmod are written now, saying so when there are enough of them
        # (`lu=1`, for updatedb's lastmod verdict of each URL, `model.lastmod`).
        for held in self.lastmods.held or ():
            yield self._entry_put(*held, uniform=self.lastmods.uniform)

    def _entry_put(self, key: bytes, target: str, entry: PageEntry, depth: int, radius: int,
                   extras: dict[str, Any] | None, *, uniform: bool) -> tuple[bytes, dict[bytes, bytes]]:
        """A page entry's put: its inlink cell (`uniform`: the sitemap's lastmods were all one) and the marks."""
        inlink, self.listed[target] = self.inlinks.of(entry, depth, radius,
                                                      {**(extras or {}), "uniform": True} if uniform else extras)
        return key, {self.inlink_column: inlink, **self.entry_marks}

    def _canonical(self, url: str) -> str | None:
        try:
            return urls.canonicalize(url, self.rules.canonical)
        except InvalidUrlError:
            return None

    def problems(self) -> list[tuple[ProblemKind, int, str]]:
        """Our own problems, added to the engine's: (kind, count, sentence)."""
        notes = []
        if self.filtered:
            notes.append((ProblemKind.FILTERED, self.filtered, f"{self.filtered:,} entries dropped by the URL filter"))
        if self.invalid:
            notes.append((ProblemKind.UNCANONICAL_URL, self.invalid,
                          f"{self.invalid:,} entries with a URL that cannot be canonicalised"))
        if self.past_depth:
            notes.append((ProblemKind.PAST_DEPTH, self.past_depth,
                          f"{self.past_depth:,} entries past depth/radius not kept"))
        if self.blacklisted:
            notes.append((ProblemKind.CHILD_BLACKLISTED, self.blacklisted,
                          f"{self.blacklisted:,} child sitemaps blacklisted"))
        return notes + self.news.problems()


def parse_sitemap_row(store: Store, key: bytes, row: WebPage, body: bytes, batch_id: str,
                      rules: UrlRules, counts: ParseCounts, now: datetime,
                      mark_entries: bool) -> SitemapOutcome:
    """Parse one stored sitemap body, write its entries and its own row; return the outcome.

    `row` carries the sitemap's `s:vb`, `s:cs` and `il:` cells (who vouches
    for it). A body that is not a sitemap is recorded as a problem (and a
    link-found candidate becomes a page again). Never raises for bad content.
    `mark_entries`: give entries the `k:dsc` mark (the batch has no records:
    `parse_batch` asks the registry once per batch).
    """
    settings = rules.settings
    vouchers = vouchers_through_redirects(store, row, settings, counts.unreadable)
    scope = ScopeContext.from_settings(settings, row.cross_submitters or (), vouched_by=vouchers)
    vouched = format_vouchers(vouchers) if vouchers else None
    try:
        document = parse_sitemap(body, row.url, limits=SitemapLimits.from_settings(settings), scope=scope)
    except SitemapError as exc:
        counts.sitemap_errors += 1
        problem = f"not read as a sitemap: {exc}"
        demote = row.sitemap_source is SitemapSource.LINK
        write_pages(store, [(key, encode(WebPage(  # a demoted candidate's due index entry moves with it
            row.url, sitemap_problems=(problem,), problem_kinds=problem_lines([(ProblemKind.NOT_A_SITEMAP, 1)]),
            sitemap_warnings=(), parse_time=now, sitemap_entries=0,
            is_sitemap=False if demote else None, vouched_by=vouched, parse_mark=batch_id)))], now=now)
        return SitemapOutcome(row.url, None, 0, (problem,))
    work = _SitemapParse(row, batch_id, rules, counts, now, vouchers, mark_entries=mark_entries)
    write_listed(store, batch_id, row.url, work.cells(iter(document)), max(1, settings.hbase_batch_size))
    report = document.report
    own = work.problems()
    problems = report.problems + tuple(message for _, _, message in own)
    kinds = add_problem_counts(report.problem_counts, [(kind, n) for kind, n, _ in own])
    if document.kind.value == "index":
        counts.children += work.written
    else:
        counts.entries += work.written
    counts.sitemaps += 1
    counts.dropped_scope += report.dropped_scope
    counts.dropped_scope_host += report.dropped_host
    counts.lenient += 1 if report.warnings else 0
    counts.dropped_filter += work.filtered
    counts.dropped_limit += report.over_limit
    counts.dropped_depth += work.past_depth
    counts.invalid += report.invalid + work.invalid
    history_key = record_history(store, key, row.url, work.listed, batch_id, now, settings.history_keep, counts)
    store.write(WEBPAGE_TABLE, [(key, encode(WebPage(  # one put of the sitemap's own row, its history's key in it
        row.url, sitemap_type=document.kind.value, sitemap_entries=work.written,
        dropped_scope=report.dropped_scope, dropped_filter=work.filtered, dropped_limit=report.over_limit,
        sitemap_problems=problems, problem_kinds=problem_lines(kinds), sitemap_warnings=report.warnings,
        vouched_by=vouched, history_key=history_key,
        parse_time=now, parse_mark=batch_id)))])
    log.debug("parse: %s: %s, %d entries written", row.url, document.kind.value, work.written)
    return SitemapOutcome(row.url, document.kind.value, work.written, problems, report.warnings)


def record_history(store: Store, key: bytes, url: str, listed: dict[str, Hints], batch_id: str, now: datetime,
                   keep: int, counts: ParseCounts) -> str:
    """Compare this parse with the sitemap's previous one and record the changes (`storage.history`); return
    the key of the parse's history row, for the sitemap's row (`s:hk`)."""
    found = record_parse(store, key, url, listed, batch_id, now, keep)
    if found.baseline:
        counts.baselines += 1
    else:
        counts.changes.update({kind.value: n for kind, n in found.counts.items() if n})
    return found.key


def parse_page_row(row: WebPage, body: bytes, batch_id: str, rules: UrlRules, counts: ParseCounts) -> WebPage:
    """One HTML page's outlinks: the cells to put on its own row (none when fetch read nofollow, `m:nof`).

    What the page says about itself (robots, canonical, hreflang) is fetch's
    to record. A page parsed before loses the outlinks this parse no longer
    finds: the caller deletes them (`_delete_stale_outlinks`) before it puts these.
    """
    found = extract_links(body, row.url, rules=rules.canonical, url_filter=rules.url_filter,
                          max_outlinks=rules.settings.max_outlinks_per_page, follow=not row.nofollow)
    outlinks = {
        link.url: format_outlink(Outlink(OutlinkKind.SITEMAP if link.sitemap_candidate else OutlinkKind.LINK,
                                         link.anchor))
        for link in found.outlinks
    }
    counts.pages += 1
    counts.outlinks += len(outlinks)
    return WebPage(row.url, outlinks=outlinks, parse_mark=batch_id)


def _delete_stale_outlinks(store: Store, pages: list[tuple[bytes, WebPage]], unreadable: Unreadable) -> None:
    """Delete the stored outlink cells of re-parsed pages that their new outlinks lack.

    Only the stale ones: a delete and a put of the same column in the same
    millisecond would leave the delete winning. Cost: one multi-get and one
    batched delete per chunk of pages.
    """
    if not pages:
        return
    stored = read_pages(store, [key for key, _ in pages], ["outlinks"], "parse", unreadable)
    deletes: list[tuple[bytes, list[bytes] | None]] = []
    for key, page in pages:
        before = stored.get(key)
        if before is None:
            continue
        current = page.outlinks or {}
        stale = {target: "" for target in before.outlinks or {} if target not in current}
        if stale:
            deletes.append((key, list(encode(WebPage(page.url, outlinks=stale)))))
    store.delete_many(WEBPAGE_TABLE, deletes)


def _body(store: Store, key: bytes, unreadable: Unreadable) -> bytes | None:
    """A page's stored body (one get); None when there is none or it does not decode (counted)."""
    stored = read_page(store, key, ["content"], "parse", unreadable)
    return stored.content if stored is not None else None


def _sitemap_body(store: Store, key: bytes, row: WebPage, unreadable: Unreadable) -> tuple[bytes | None, WebPage]:
    """A sitemap's stored body, and its row with its inlinks (the indexes' vouchers): one get."""
    stored = read_page(store, key, ["content", "inlinks"], "parse", unreadable)
    if stored is None:
        return None, row
    return stored.content, replace(row, inlinks=stored.inlinks)


def _pages_left(counts: ParseCounts) -> Callable[[int], None]:
    """What counts the pages a sitemap-only parse leaves unread (`batch_rows(on_no_work=...)`)."""
    def left(pages: int) -> None:
        counts.not_parsed[_SITEMAP_ONLY_PAGE] += pages
    return left


#: Rows of a chunk parsed side by side: a row's parse is mostly round trips to HBase (a page's body; a small
#: sitemap's body, history, entries and row), which overlap; the CPU of the parse itself does not.
PARSE_THREADS = 4

ParseOne = Callable[[bytes, WebPage, ParseCounts], tuple[WebPage | None, SitemapOutcome | None]]


def _side_by_side(todo: list[tuple[bytes, WebPage]], parse: ParseOne, counts: ParseCounts) -> Iterator[
        tuple[bytes, WebPage, tuple[WebPage | None, SitemapOutcome | None]]]:
    """(key, row, what `parse` gave) for each row of `todo`, in order, `PARSE_THREADS` rows at a time
    (`overlap.side_by_side`), each into counts of its own added to `counts` in row order.

    A page's parse reads its body and writes nothing (its cells are the caller's to put). Each sitemap's
    parse writes its own row and history, and on its entries `il:` cells of its own and their records. What
    one may read of another's writes (an index and its child both due again: the child's vouchers) was
    written in the round that found the child: their order does not matter, as before.
    """
    def apart(item: tuple[bytes, WebPage]) -> tuple[tuple[WebPage | None, SitemapOutcome | None], ParseCounts]:
        own = ParseCounts(batch_id=counts.batch_id)
        return parse(*item, own), own

    for (key, row), (result, own) in zip(todo, side_by_side(todo, apart, PARSE_THREADS), strict=True):
        counts.add(own)
        yield key, row, result


def _parse_row(store: Store, key: bytes, row: WebPage, counts: ParseCounts, *, batch_id: str, rules: UrlRules,
               mode: CrawlMode, now: datetime, mark_entries: bool) -> tuple[WebPage | None, SitemapOutcome | None]:
    """Do one row's work; returns (cells still to put on the row, or None; the sitemap outcome).

    Rows with nothing to parse get just the parse mark, counted by why.
    """
    why, outcome = _skip_or_sitemap(store, key, row, batch_id, rules, mode, counts, now, mark_entries)
    if why is not None:
        counts.not_parsed[why] += 1
        return WebPage(row.url, parse_mark=batch_id), outcome
    if outcome is not None and (outcome.kind is not None or row.sitemap_source is not SitemapSource.LINK):
        return None, outcome
    body = _body(store, key, counts.unreadable)
    if body is None:
        counts.not_parsed["no body stored"] += 1
        return WebPage(row.url, parse_mark=batch_id), outcome
    return parse_page_row(row, body, batch_id, rules, counts), outcome


def _skip_or_sitemap(store: Store, key: bytes, row: WebPage, batch_id: str, rules: UrlRules,
                     mode: CrawlMode, counts: ParseCounts, now: datetime,
                     mark_entries: bool) -> tuple[str | None, SitemapOutcome | None]:
    """Parse a sitemap row, or say why a row has nothing to parse (None: an HTML page to parse)."""
    if row.is_sitemap:
        why = row.blacklisted or rules.blacklist.match(row.url)
        if why is not None:
            counts.blacklisted += 1
            store.write(WEBPAGE_TABLE, [(key, encode(WebPage(row.url, blacklisted=why, parse_mark=batch_id)))])
            return None, SitemapOutcome(row.url, None, 0, (f"blacklisted: {why}",))
        if row.status is not FetchStatus.FETCHED:
            return f"sitemap {row.status.value if row.status else 'not fetched'}", None
        body, row = _sitemap_body(store, key, row, counts.unreadable)
        if body is None:
            return "no body stored", None
        outcome = parse_sitemap_row(store, key, row, body, batch_id, rules, counts, now, mark_entries)
        if outcome.kind is not None or row.sitemap_source is not SitemapSource.LINK:
            return None, outcome
        # A link-found candidate that is no sitemap is a page after all.
    if mode is CrawlMode.SITEMAP_ONLY:
        return _SITEMAP_ONLY_PAGE, None
    if row.status is not FetchStatus.FETCHED:
        return f"page {row.status.value if row.status else 'not fetched'}", None
    if not is_html(row.content_type):
        return "not HTML", None
    return None, None


def parse_batch(
    store: Store,
    rules: UrlRules,
    batch_id: str,
    *,
    mode: CrawlMode | None = None,
    on_progress: Callable[[int], None] = lambda rows_done: None,
    on_sitemap: Callable[[SitemapOutcome], None] = lambda outcome: None,
    clock: Clock = utc_now,
    wait: bool = False,
    split: Split = WHOLE,
) -> ParseCounts:
    """Parse the fetched rows of a batch (see the module docstring); return the counts.

    `mode` defaults to the settings' `crawl_mode`. `on_sitemap` hears of each
    sitemap row parsed (or refused); `clock`, read once, stamps the parses.
    `split`: only the rows of that split
    (`sitemapcrawl.model.splits`). Per-row trouble is data on the row; only
    the store's errors (StoreUnavailableError, TableMissingError), a bad
    mode (UsageError) and another worker parsing the batch (LeaseHeldError;
    with `wait`, its lease is waited for) raise.
    """
    mode = mode or rules.settings.crawl_mode
    store.require_tables(WEBPAGE_TABLE, HISTORY_TABLE, BATCHROW_TABLE)
    now = clock()
    counts = ParseCounts(batch_id=batch_id)
    chunk = max(1, rules.settings.hbase_batch_size)
    with registry.working_on(store, batch_id, registry.PARSE, rules.settings, wait=wait, split=split):
        mark_entries = not has_records(store, batch_id)  # the same for every sitemap of the batch
        # In sitemap-only mode a page has nothing to parse: its member record says so, and it is not read.
        for rows in batch_rows(store, Mark.FETCH, batch_id, _READ_FIELDS, chunk, "parse", counts.unreadable, split,
                               on_no_work=_pages_left(counts) if mode is CrawlMode.SITEMAP_ONLY else None):
            puts = []
            reparsed: list[tuple[bytes, WebPage]] = []
            todo = []
            for key, row in rows:
                counts.rows += 1
                if Mark.PARSE.done(row, batch_id):
                    counts.already_parsed += 1
                else:
                    todo.append((key, row))
            parse = functools.partial(_parse_row, store, batch_id=batch_id, rules=rules, mode=mode, now=now,
                                      mark_entries=mark_entries)
            for key, row, (cells, outcome) in _side_by_side(todo, parse, counts):
                if outcome is not None:
                    on_sitemap(outcome)
                if cells is not None:
                    puts.append((key, encode(cells)))
                    if Mark.PARSE.of(row) is not None and cells.outlinks is not None:
                        reparsed.append((key, cells))
            _delete_stale_outlinks(store, reparsed, counts.unreadable)
            store.write(WEBPAGE_TABLE, puts)
            on_progress(counts.rows)
    log.info("parse: %s", counts.summary())
    return counts


def parse_phase(work: Work, options: BatchSplit, progress: StageUpdate) -> ParseCounts:
    """`parse_batch` as a phase call (`batch.calls`): on `work`, progress as stage `parse`."""
    return parse_batch(work.store, work.rules, options.batch_id, mode=options.mode, split=options.split,
                       wait=options.wait, clock=work.clock, on_progress=lambda done: progress("parse", done, None, 0))
