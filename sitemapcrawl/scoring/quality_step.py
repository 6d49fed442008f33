"""The sitemap quality step of updatedb: score the sitemaps a batch touched, filter, weight their URLs.

Run at the end of `updatedb` (setting `sitemap_quality`); the formula is in
`scoring.quality`, the counters in `scoring.evidence`. `QualityStep` (fed by
`scoring.count_step.BatchCounting`, rows merged alike by `scoring.alike`)
judges each touched row again, writes each batch's deltas as
`s:ev.<batch>.<bucket>` on the sitemap, folds and scores the touched
sitemaps, and rewrites `s:wp` where a weight changed, so a round costs what
its batch holds. `score_sitemaps` is the full rescore
(`updatedb --rescore`): the repair after changing pins or thresholds, and
the tests' oracle. How it counts: docs/quality.md, Evidence counters.

Cost of `QualityStep`: no read of its own for the touched rows; a multi-get
of the touched sitemaps and one of the others their rows name; a snapshot get
per sitemap parsed in the batch, one more plus a multi-get of its rows per
sitemap whose weight changed; batched puts. `score_sitemaps`: three scans.
"""

from __future__ import annotations

import functools
import logging
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from sitemapcrawl.errors import CellDecodeError, InvalidUrlError, UsageError
from sitemapcrawl.model.cells import column_names, encode, equals_filter, field_encoder, map_families_of
from sitemapcrawl.model.linkvalues import Inlink, InlinkKind, parse_inlink
from sitemapcrawl.model.rank import sitemap_priority
from sitemapcrawl.model.splits import WHOLE, Split, bucket_of
from sitemapcrawl.model.webpage import WEBPAGE_TABLE, WebPage
from sitemapcrawl.scoring import evidence
from sitemapcrawl.scoring.evidence import Base, Contribution, Groups, Tally
from sitemapcrawl.scoring.quality import (
    Assessment,
    Pins,
    QualityPolicy,
    assess,
    is_quality_reason,
    signal_values,
    sitemap_facts,
    weight_of,
    weighted_priority,
)
from sitemapcrawl.storage.batchrecords import key_of_url, listed_sitemaps
from sitemapcrawl.storage.dueindex import write_pages
from sitemapcrawl.storage.history import record_statuses, snapshot_lastmods, snapshot_urls
from sitemapcrawl.storage.overlap import WriteBehind, read_ahead
from sitemapcrawl.storage.store import Store
from sitemapcrawl.storage.tables import Unreadable, pages
from sitemapcrawl.web import urls
from sitemapcrawl.web.rules import UrlRules

log = logging.getLogger(__name__)

_SITEMAP_FIELDS = [
    "is_sitemap", "status", "truncated", "sitemap_type", "sitemap_entries", "dropped_scope", "dropped_limit",
    "sitemap_problems", "problem_kinds", "parse_time", "lastmod", "blacklisted", "history_key", "quality",
    "quality_state", "quality_evidence", "quality_evidence_cells",
]
_LISTED_FIELDS = [
    "in_sitemap", "is_sitemap", "inlinks", "status", "fetch_time", "prev_fetch_time", "content_changed",
    "priority", "weighted_priority", "quality_contributions",
]
_WEIGHT_FIELDS = ["is_sitemap", "quality", "quality_state"]
_QC, _encode_qc = field_encoder(WebPage, "quality_contributions")
_WP, _encode_wp = field_encoder(WebPage, "weighted_priority")
_LINKED = (InlinkKind.SITEMAP, InlinkKind.INDEX)


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
    full: bool = True
    """A full rescore (every sitemap), not the batch's touched ones."""
    evidence_cells: int = 0
    """Evidence cells (one batch, one host bucket) written on sitemap rows."""
    folded: int = 0
    """Evidence cells of earlier batches folded into the sitemaps' base."""
    reweighed_sitemaps: int = 0
    """Sitemaps whose rows were reweighed after scoring (their weight was not the one the rows were written with)."""

    def summary(self) -> str:
        """One line for the end of the step."""
        states = ", ".join(f"{n} {state}" for state, n in sorted(self.by_state.items()))
        scored = "sitemaps scored" if self.full else "touched sitemaps rescored"
        return (f"{scored} {self.sitemaps}" + (f" ({states})" if states else "")
                + f", newly blacklisted {self.newly_blacklisted}, listed rows {self.listed_rows}, "
                f"priorities reweighted {self.reweighted}"
                + ("" if self.full else f", evidence cells {self.evidence_cells}, folded {self.folded}, "
                   f"sitemaps reweighed after scoring {self.reweighed_sitemaps}"))


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


def _columns(fields: list[str]) -> list[bytes]:
    """Column names for `fields`; when a whole family is read, none of its single columns.

    Why: HBase narrows a family asked for whole to the single columns of it
    asked for after it, so `s` and `s:sm` together would read `s:sm` only.
    """
    names = column_names(WebPage, fields)
    families = {name for name in names if b":" not in name}
    return [name for name in names if b":" not in name or name.partition(b":")[0] not in families]


def _listed_filter() -> str:
    """Rows in a sitemap or that are sitemaps, with only their sitemap/index inlink cells."""
    inlinks = map_families_of(WebPage)["inlinks"].family
    cells = " OR ".join([f"FamilyFilter(!=, 'binary:{inlinks}')"] + [
        f"ValueFilter(=, 'binaryprefix:{kind.value} ')" for kind in _LINKED])
    rows = f"({equals_filter(WebPage, 'in_sitemap', True)} OR {equals_filter(WebPage, 'is_sitemap', True)})"
    return f"{rows} AND ({cells})"


def sitemap_links(row: WebPage) -> list[tuple[str, Inlink]]:
    """The row's sitemap and index inlinks: (source sitemap, inlink)."""
    return [(source, link) for source, text in (row.inlinks or {}).items()
            if (link := parse_inlink(text)) is not None and link.kind in _LINKED]


def _listed_rows(store: Store, unreadable: Unreadable) -> Iterator[tuple[bytes, WebPage, list[tuple[str, Inlink]]]]:
    scan = store.scan(WEBPAGE_TABLE, columns=_columns(_LISTED_FIELDS), filter=_listed_filter())
    for key, row in pages(scan, "quality", unreadable, _LISTED_FIELDS):
        yield key, row, sitemap_links(row)


def gives_now(row: WebPage, links: list[tuple[str, Inlink]], now: datetime) -> dict[str, tuple[str, Tally]]:
    """Sitemap -> (parse batch of its cell, what the row contributes to it now)."""
    return {source: (link.batch, evidence.contribution(link.lastmod, row.status, row.fetch_time,
                                                        row.prev_fetch_time, row.content_changed, now))
            for source, link in links}


def first_kind(row: WebPage, links: list[tuple[str, Inlink]]) -> Hashable:
    """What the evidence of a row judged for the first time depends on: its listings' sitemaps, parses and
    lastmods, and its fetch facts (rows equal in it give the same `gives_now`)."""
    return (tuple([(source, link.batch, link.lastmod) for source, link in links]), row.status, row.fetch_time,
            row.prev_fetch_time, row.content_changed)


def _verdict_row(url: str, verdict: Assessment, now: datetime) -> WebPage:
    return WebPage(url, quality=verdict.score, quality_state=verdict.state, quality_notes=verdict.notes,
                   quality_time=now, blacklisted=verdict.reason, **signal_values(verdict.signals))


class _Verdicts:
    """Verdict puts, blacklist clears and history statuses of scored sitemaps, and their weights."""

    def __init__(self, policy: QualityPolicy, pins: Pins, now: datetime, counts: QualityCounts) -> None:
        self.policy, self.pins, self.now, self.counts = policy, pins, now, counts
        self.weights: dict[str, float] = {}
        self.keys: list[bytes] = []
        """Row keys of the sitemaps scored (their summaries for `serve` follow)."""
        self.changed: list[tuple[bytes, str]] = []
        """Sitemaps whose weight changed: (row key, URL)."""
        self.puts: list[tuple[bytes, dict[bytes, bytes]]] = []
        self.cleared: list[tuple[bytes, list[bytes]]] = []
        self.statuses: dict[str, Counter[str]] = {}

    def add(self, key: bytes, row: WebPage, tally: Tally, extra: WebPage | None = None,
            assumed: Mapping[str, float] | None = None) -> None:
        """Score one sitemap. `assumed`: weights its rows' `s:wp` were already written with (by
        `QualityStep.take`, for sitemaps parsed in the batch); such a sitemap's rows are reweighed
        only when its weight differs, any other's when it changed or was never scored."""
        self.keys.append(key)
        facts = sitemap_facts(row)
        verdict = assess(facts, tally.stats(), self.policy, self.pins, self.now)
        self.weights[row.url] = verdict.weight
        if assumed is not None and row.url in assumed:
            changed = assumed[row.url] != verdict.weight
        else:
            changed = (weight_of(row.quality_state, row.quality, self.policy) != verdict.weight
                       or row.quality_state is None)
        if changed:
            self.changed.append((key, row.url))
        counts = self.counts
        counts.sitemaps += 1
        counts.by_state[verdict.state.value] += 1
        ours = facts.blacklisted is not None and is_quality_reason(facts.blacklisted)
        if verdict.reason is not None and facts.blacklisted is None:
            counts.newly_blacklisted += 1
            log.info("quality: blacklisted %s: %s", row.url, verdict.reason)
        if ours and verdict.reason is None:
            self.cleared.append((key, column_names(WebPage, ["blacklisted"])))
            counts.cleared += 1
        cells = encode(_verdict_row(row.url, verdict, self.now))
        if extra is not None:
            cells.update(encode(extra))
        self.puts.append((key, cells))
        if row.history_key and tally.statuses():
            self.statuses[row.history_key] = Counter(tally.statuses())
        log.debug("quality: %s %.3f %s", row.url, verdict.score, verdict.state.value)

    def write(self, store: Store) -> None:
        store.delete_many(WEBPAGE_TABLE, self.cleared)  # the verdict puts hold no s:bl for these rows
        store.write(WEBPAGE_TABLE, self.puts)
        record_statuses(store, self.statuses)


def _reweigh_row(key: bytes, row: WebPage, links: list[tuple[str, Inlink]], weights: dict[str, float],
                 puts: list[tuple[bytes, dict[bytes, bytes]]]) -> None:
    listings = tuple([(link.priority, weights.get(source, 1.0)) for source, link in links
                      if link.kind is InlinkKind.SITEMAP])
    cell = _weighted_put(listings, sitemap_priority(row)) if listings else None
    if cell is not None:
        puts.append((key, {_WP: cell}))


def _weighted_put(listings: tuple[tuple[float | None, float], ...], ranked_by: float) -> bytes | None:
    """The `s:wp` cell of a row of these listings (priority, sitemap weight) that ranks by `ranked_by` as it
    is (`rank.sitemap_priority`), or None. Only where it changes what generate ranks by: a URL whose
    sitemaps all weigh 1 (every URL of a first inventory) ranks by its `s:pr` as it is, so it needs no
    `s:wp` (a cell fewer per listed URL)."""
    value, cell = _weighted_cell(listings)
    return None if value == ranked_by else cell


@functools.lru_cache(maxsize=4096)
def _weighted_cell(listings: tuple[tuple[float | None, float], ...]) -> tuple[float, bytes]:
    """The weighted priority of these listings and its cell (remembered: row after row has the same few)."""
    value = weighted_priority(list(listings))
    return value, _encode_wp(value)


# ------------------------------------------------------------ full rescore --

def score_sitemaps(store: Store, rules: UrlRules, now: datetime, *, batch_id: str = "",
                   on_progress: Callable[[int], None] = lambda rows_done: None) -> QualityCounts:
    """Score every sitemap of the table from scratch and weight its URLs' priorities: the repair.

    Rebuilds every sitemap's evidence base (`s:ev`, its cells deleted) and
    every listed row's `s:qc` (as if `batch_id` had judged it: a rerun of any
    batch then adds only what changed since).
    Raises UsageError for bad thresholds or pins, and the store's errors.
    """
    policy = policy_from_settings(rules)
    pins = pins_from_settings(rules)
    counts = QualityCounts()
    unreadable = Unreadable()
    sitemaps: dict[str, tuple[bytes, WebPage]] = {}
    scan = store.scan(WEBPAGE_TABLE, columns=_columns(_SITEMAP_FIELDS),
                      filter=equals_filter(WebPage, "is_sitemap", True))
    for key, row in pages(scan, "quality", unreadable, _SITEMAP_FIELDS):
        sitemaps[row.url] = (key, row)
    groups: dict[str, Groups] = {url: {} for url in sitemaps}
    rows: list[tuple[bytes, WebPage, dict[str, tuple[str, Tally]]]] = []
    for key, row, links in _listed_rows(store, unreadable):
        counts.listed_rows += 1
        current = gives_now(row, links, now)
        for source, (parse, tally) in current.items():
            if source in groups:
                groups[source].setdefault(parse, Tally()).add(tally)
        rows.append((key, row, current))
        if counts.listed_rows % 1000 == 0:
            on_progress(counts.listed_rows)
    # Every row's s:qc as if `batch_id` had judged it, so a rerun of that batch adds nothing.
    puts: list[tuple[bytes, dict[bytes, bytes]]] = []
    for key, row, current in rows:
        lines = tuple(Contribution(source, batch_id, parse, tally, parse, tally).line()
                      for source, (parse, tally) in sorted(current.items()))
        if lines != tuple(row.quality_contributions or ()):
            puts.append((key, encode(WebPage(row.url, quality_contributions=lines or ("",)))))
    store.write(WEBPAGE_TABLE, puts)
    verdicts = _Verdicts(policy, pins, now, counts)
    stale_cells: list[tuple[bytes, list[bytes]]] = []
    for url, (key, row) in sitemaps.items():
        parse, tally = evidence.latest(groups[url])
        base = Base(groups={parse: tally} if parse else {})
        verdicts.add(key, row, tally, WebPage(url, quality_evidence=base.lines()))
        if row.quality_evidence_cells:
            stale_cells.append((key, list(encode(WebPage(url, quality_evidence_cells=row.quality_evidence_cells)))))
    verdicts.write(store)
    store.delete_many(WEBPAGE_TABLE, stale_cells)
    _reweigh_all(store, verdicts.weights, counts, max(1, rules.settings.hbase_batch_size), unreadable, now)
    log.info("quality: %s", counts.summary())
    return counts


def _reweigh_all(store: Store, weights: dict[str, float], counts: QualityCounts, chunk: int,
                 unreadable: Unreadable, now: datetime) -> None:
    """`s:wp` of every listed row, written with the rows' due entries (a rank field: they move with it)."""
    puts: list[tuple[bytes, dict[bytes, bytes]]] = []
    for key, row, links in _listed_rows(store, unreadable):
        _reweigh_row(key, row, links, weights, puts)
        if len(puts) >= chunk:
            counts.reweighted += write_pages(store, puts, now=now).rows
            puts = []
    counts.reweighted += write_pages(store, puts, now=now).rows


# ------------------------------------------------------- incremental update --

def _read_sitemaps(store: Store, keys: Iterable[bytes], fields: list[str],
                   unreadable: Unreadable) -> dict[bytes, WebPage]:
    """The sitemap rows among `keys` (one multi-get); rows that are no sitemap are left out."""
    wanted = sorted(set(keys))
    found = store.rows(WEBPAGE_TABLE, wanted, columns=_columns(fields)) if wanted else {}
    out = {}
    for key, row in pages(found.items(), "quality", unreadable, fields):
        if row.is_sitemap:
            out[key] = row
    return out


class QualityStep:
    """The incremental quality step over the batch's touched rows (see the module docstring).

    `take` each chunk of touched rows (with `FIELDS`), then `finish`. Safe to
    rerun, and to run once per split of the batch: each host bucket's cell
    is written whole by the one split that holds it. Raises UsageError for
    bad thresholds or pins (when made), and the store's errors.
    """

    FIELDS = _LISTED_FIELDS

    def __init__(self, store: Store, rules: UrlRules, batch_id: str, now: datetime, unreadable: Unreadable,
                 split: Split = WHOLE) -> None:
        self.store, self.batch_id, self.now, self.unreadable = store, batch_id, now, unreadable
        self.policy = policy_from_settings(rules)
        self.pins = pins_from_settings(rules)
        self.chunk = max(1, rules.settings.hbase_batch_size)
        self.counts = QualityCounts(full=False)
        self.deltas: dict[str, dict[int, Groups]] = {}
        """Sitemap -> host bucket -> parse -> the summed deltas of this split's rows."""
        self.touched_sitemaps: set[bytes] = set()
        self.split = split
        self.scored: list[bytes] = []
        """Row keys of the sitemaps `finish` scored."""
        self.weights: dict[str, float] | None = None
        """Sitemap URL -> the weight `take` writes its touched rows' `s:wp` with: assumed for the
        sitemaps parsed in the batch (`assumed`), as stored for the others (read as met)."""
        self.assumed: dict[str, float] = {}
        self.ledger: evidence.Ledger[int] = evidence.Ledger(
            batch_id, lambda text: _encode_qc(text or ("",)), self._add_deltas, step="quality", column=_QC.decode())

    def _assume_weights(self) -> dict[str, float]:
        """The weight of each sitemap parsed in the batch (listed records in this split), assuming none
        of its entries was fetched: its facts and its snapshot's lastmods (`evidence.unfetched_entries`).

        Right for a first parse of new URLs (an inventory): then `finish`
        scores it the same and its rows' `s:wp`, written with their merge,
        need no second pass. When it scores otherwise, `finish` reweighs
        its rows as for any sitemap whose weight changed. Cost: one
        multi-get of the sitemap rows, about two of snapshots per 64 sitemaps.
        """
        store, now = self.store, self.now
        keys = listed_sitemaps(store, self.batch_id, self.split)
        rows = _read_sitemaps(store, keys, _SITEMAP_FIELDS, self.unreadable)
        for key, lastmods in snapshot_lastmods(store, list(rows)):
            tally = evidence.unfetched_entries(lastmods, now)
            row = rows[key]
            self.assumed[row.url] = assess(sitemap_facts(row), tally.stats(), self.policy, self.pins, now).weight
        return dict(self.assumed)

    def resolve(self, sources: Iterable[str]) -> dict[str, float]:
        """The weights, with those of `sources` not known yet read (one multi-get; an unread one weighs 1)."""
        if self.weights is None:
            self.weights = self._assume_weights()
        weights = self.weights
        unknown = {source for source in sources if source not in weights}
        if unknown:
            keyed = [rk for source in unknown if (rk := key_of_url(source)) is not None]
            for row in _read_sitemaps(self.store, keyed, _WEIGHT_FIELDS, self.unreadable).values():
                weights[row.url] = weight_of(row.quality_state, row.quality, self.policy)
            weights.update({source: 1.0 for source in unknown if source not in weights})  # unread: unweighted
        return weights

    def _weigh(self, chunk: list[tuple[bytes, WebPage, list[tuple[str, Inlink]]]]) -> list[
            tuple[bytes, dict[bytes, bytes]]]:
        """The `s:wp` puts of the rows of a chunk whose weighted priority changed (weights as `weights`)."""
        weights = self.resolve({source for _key, _row, links in chunk for source, link in links
                                 if link.kind is InlinkKind.SITEMAP})
        puts: list[tuple[bytes, dict[bytes, bytes]]] = []
        for key, row, links in chunk:
            _reweigh_row(key, row, links, weights, puts)
        self.counts.reweighted += len(puts)
        return puts

    def take(self, rows: list[tuple[bytes, WebPage]]) -> list[tuple[bytes, dict[bytes, bytes]]]:
        """Judge one chunk of touched rows (as updatedb leaves them); the `s:qc` and `s:wp` puts of
        those that changed, for the caller to write with its own puts of the rows."""
        puts: list[tuple[bytes, dict[bytes, bytes]]] = []
        listed: list[tuple[bytes, WebPage, list[tuple[str, Inlink]]]] = []
        self.counts.listed_rows += len(rows)
        for key, row in rows:
            if row.is_sitemap:
                self.touched_sitemaps.add(key)
            links = sitemap_links(row)
            if not row.quality_contributions:  # judged for the first time (every new row)
                if links:
                    listed.append((key, row, links))
                    kind = first_kind(row, links)  # once per kind and host bucket: the same facts, the same evidence
                    lines, cell = self.ledger.lines(bucket_of(key), kind, gives_now, row, links, self.now)
                    if lines:
                        puts.append((key, {_QC: cell}))
                continue
            listed.append((key, row, links))
            _lines, changed = self.ledger.again(bucket_of(key), row.url, row.quality_contributions,
                                                gives_now(row, links, self.now))
            if changed is not None:
                puts.append((key, {_QC: changed}))
        return puts + self._weigh(listed)

    def count_first(self, key: bytes, bucket: int, kind: Hashable, current: Mapping[str, tuple[str, Tally]] | None,
                    is_sitemap: bool) -> dict[bytes, bytes]:
        """`take` of row `key`, judged for the first time, but its `s:wp` (`weigh_listed`): its `s:qc` cell.

        `current`: what it gives its sitemaps now (`gives_now`; None: no
        sitemap lists it), `kind` the ledger kind it is counted under in host
        bucket `bucket` (equal for rows whose `current` is equal). A lookup
        when the kind was met before (`scoring.alike` counts rows alike so).
        """
        self.counts.listed_rows += 1
        if is_sitemap:
            self.touched_sitemaps.add(key)
        if current is None:
            return {}
        # `dict` makes the kind's `current` again if the ledger forgot the kind.
        lines, cell = self.ledger.lines(bucket, kind, dict, current)
        return {_QC: cell} if lines else {}

    def weigh_listed(self, priority: float | None, ranked_by: float, source: str) -> dict[bytes, bytes]:
        """The `s:wp` cell `take` gives a row `source` alone lists, of this `s:pr`, ranked by `ranked_by`
        (`rank.sitemap_priority`) as it is: none if that stays."""
        cell = _weighted_put(((priority, (self.weights or {}).get(source, 1.0)),), ranked_by)
        if cell is None:
            return {}
        self.counts.reweighted += 1
        return {_WP: cell}

    def _add_deltas(self, bucket: int, source: str, groups: Groups) -> None:
        """Add one row's (or one kind of rows') deltas to a sitemap's sums of its host bucket."""
        by_bucket = self.deltas.get(source)
        if by_bucket is None:
            by_bucket = self.deltas[source] = {}
        held = by_bucket.get(bucket)
        if held is None:
            held = by_bucket[bucket] = {}
        evidence.add_groups(held, groups)

    def finish(self) -> QualityCounts:
        """Write the evidence cells, rescore the touched sitemaps, reweigh; the counts."""
        self.ledger.flush()
        store, batch_id, counts = self.store, self.batch_id, self.counts
        keyed = {rk: url for url in self.deltas if (rk := key_of_url(url)) is not None}
        sitemap_rows = _read_sitemaps(store, [*keyed, *self.touched_sitemaps], ["is_sitemap"], self.unreadable)
        cells: list[tuple[bytes, dict[bytes, bytes]]] = []
        for key in sitemap_rows:
            url = keyed.get(key)
            for bucket, groups in self.deltas.get(url, {}).items() if url else ():
                name = evidence.cell_name(batch_id, bucket)
                cells.append((key, encode(WebPage(url, quality_evidence_cells={  # type: ignore[arg-type]
                    name: "\n".join(evidence.groups_text(groups))}))))
        counts.evidence_cells = store.write(WEBPAGE_TABLE, cells).rows
        verdicts = _score_touched(store, sorted(sitemap_rows), batch_id, self.policy, self.pins, self.now, counts,
                                  self.unreadable, self.assumed)
        counts.reweighed_sitemaps = len(verdicts.changed)
        _reweigh_changed(store, verdicts, counts, self.chunk, self.unreadable, self.now)
        self.scored = verdicts.keys
        log.info("quality: %s", counts.summary())
        return counts


def _score_touched(store: Store, keys: list[bytes], batch_id: str, policy: QualityPolicy, pins: Pins,
                   now: datetime, counts: QualityCounts, unreadable: Unreadable,
                   assumed: Mapping[str, float]) -> _Verdicts:
    """Fold cells of earlier batches into each sitemap's base, score it from base + cells, write.

    `assumed`: the weights the touched rows' `s:wp` were written with for the
    sitemaps parsed in the batch; one whose weight differs is to be
    reweighed, as is any other whose weight changed (see `_Verdicts.add`).
    """
    verdicts = _Verdicts(policy, pins, now, counts)
    folded: list[tuple[bytes, list[bytes]]] = []
    for key, row in _read_sitemaps(store, keys, _SITEMAP_FIELDS, unreadable).items():
        try:
            base = Base.read(row.quality_evidence)
            cells = dict(row.quality_evidence_cells or {})
            new_base, names = evidence.fold(base, cells, batch_id)
            groups = evidence.evidence(new_base, {n: t for n, t in cells.items() if n not in names})
        except ValueError as exc:
            log.warning("quality: %s: unreadable evidence, left for `updatedb --rescore`: %s", row.url, exc)
            unreadable.add("quality", key, CellDecodeError(str(exc)))
            continue
        _parse, tally = evidence.latest(groups)
        extra = WebPage(row.url, quality_evidence=new_base.lines()) if names or not row.quality_evidence else None
        verdicts.add(key, row, tally, extra, assumed)
        if names:
            counts.folded += len(names)
            folded.append((key, list(encode(WebPage(row.url, quality_evidence_cells={n: "" for n in names})))))
    verdicts.write(store)
    store.delete_many(WEBPAGE_TABLE, folded)  # after the base that holds them is written
    return verdicts


def _reweigh_changed(store: Store, verdicts: _Verdicts, counts: QualityCounts, chunk: int,
                     unreadable: Unreadable, now: datetime) -> None:
    """`s:wp` of every row of a sitemap whose weight changed (the touched rows got theirs from `take`).

    Streams: the rows of each changed sitemap (its snapshot, read in key
    order: neighbouring keys come as one range scan) are read and written in
    chunks, each chunk's puts written behind while the next is read; memory
    is a few chunks and one weight per sitemap seen. A row met twice gets the
    same value (only a changed `s:wp` is put).
    """
    weights = dict(verdicts.weights)
    fields = ["inlinks", "priority", "weighted_priority"]

    def write(puts: list[tuple[bytes, dict[bytes, bytes]]]) -> None:  # with the rows' due entries: s:wp ranks
        counts.reweighted += write_pages(store, puts, now=now).rows

    def reweigh(rows: Iterable[tuple[bytes, WebPage]], later: WriteBehind) -> None:
        listed = [(key, row, sitemap_links(row)) for key, row in rows]
        unknown = {source for _key, _row, links in listed for source, _link in links if source not in weights}
        keyed = [rk for source in unknown if (rk := key_of_url(source)) is not None]
        for row in _read_sitemaps(store, keyed, _WEIGHT_FIELDS, unreadable).values():
            weights[row.url] = weight_of(row.quality_state, row.quality, verdicts.policy)
        weights.update({source: 1.0 for source in unknown if source not in weights})  # unread: as unweighted
        puts: list[tuple[bytes, dict[bytes, bytes]]] = []
        for key, row, links in listed:
            _reweigh_row(key, row, links, weights, puts)
        later.submit(write, puts)

    def snapshot_rows() -> Iterator[list[tuple[bytes, WebPage]]]:
        for key, _url in verdicts.changed:
            keys = sorted(rk for url in snapshot_urls(store, key) if (rk := key_of_url(url)) is not None)
            for start in range(0, len(keys), chunk):
                found = store.rows(WEBPAGE_TABLE, keys[start:start + chunk], columns=column_names(WebPage, fields))
                yield list(pages(found.items(), "quality", unreadable, fields))

    with WriteBehind() as later:
        for rows in read_ahead(snapshot_rows()):
            reweigh(rows, later)
