"""Row counts per origin and sitemap summaries in the `host` table, kept by updatedb for `serve`.

`BatchCounting` (every updatedb) takes the batch's touched rows from
updatedb's merge and schedule passes and feeds them to the quality step and
to `CountStep`, which judges each row again against what it last added
(`m:hc`; on a row as its first listing left it, what `s:fl` stands for:
`scoring.firstlisting`), writes each origin's deltas as one cell
`n:c.<batch>.<bucket>` (overwritten by a rerun), folds earlier batches into
`n:c`, keeps the audit samples `n:a.<list>` and writes the summary
`n:s.<url>` of each sitemap the batch fetched or rescored. Every row is
judged by itself here; `scoring.alike` wraps `BatchCounting` to judge rows
merged alike once per kind. `recount` rebuilds it all from one full scan
(the repair, `updatedb --rescore`, and the tests' oracle). See docs/quality.md.

Cost of `CountStep`: no read or put of its own for the touched rows; per
origin touched one cell put and two host row gets; one multi-get of the
sitemaps to summarise. Memory per origin: its deltas and at most
2 x `rowcounts.SAMPLE_CAP` URLs per audit list. `recount`: a scan of
`webpage` and of `host`.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from sitemapcrawl.errors import CellDecodeError
from sitemapcrawl.model.audit import audit_lists, reason
from sitemapcrawl.model.cells import column_names, decode, encode, field_encoder
from sitemapcrawl.model.splits import WHOLE, Split, bucket_of
from sitemapcrawl.model.webpage import BATCH_TABLE, HOST_TABLE, WEBPAGE_TABLE, BatchRow, HostRow, WebPage
from sitemapcrawl.scoring import evidence, firstlisting, hreflang_step, rowcounts
from sitemapcrawl.scoring.evidence import Base, Contribution, Groups, Tally
from sitemapcrawl.scoring.quality_step import QualityCounts, QualityStep
from sitemapcrawl.storage.store import Store
from sitemapcrawl.storage.tables import Unreadable, pages
from sitemapcrawl.web.rowkeys import origin_of_key
from sitemapcrawl.web.rules import UrlRules

log = logging.getLogger(__name__)

_FIELDS = [*rowcounts.AUDIT_FIELDS, "counted"]
_HC, _encode_hc = field_encoder(WebPage, "counted")
_BASE_FIELDS = ["counts", "count_cells"]
#: An origin's counters as the counting keeps them: its base, the cells not yet folded into it, its audit samples.
COUNTER_FIELDS = [*_BASE_FIELDS, "audit_samples"]
Changes = dict[bytes, rowcounts.SampleChanges]
"""Origin -> its audit-list changes (bounded: what can change its samples)."""


@dataclass
class CountCounts:
    """What a counting step did."""

    rows: int = 0
    changed: int = 0
    """Rows whose contribution changed (`m:hc` written)."""
    origins: int = 0
    folded: int = 0
    sitemaps: int = 0
    """Sitemap summaries written."""

    def summary(self) -> str:
        """One line for the end of the step."""
        return (f"row counts: {self.rows} rows judged, {self.changed} changed, {self.origins} origins, "
                f"{self.folded} cells folded, {self.sitemaps} sitemap summaries")


def counted(origin: str, tally: Tally) -> dict[str, tuple[str, Tally]]:
    """What a row gives its origin now, as `evidence.judge` takes it (the one group `rows`)."""
    return {origin: (rowcounts.GROUP, tally)}


def write_summaries(store: Store, keys: Iterable[bytes], unreadable: Unreadable,
                    whole: Mapping[bytes, WebPage] | None = None) -> int:
    """Write the summary of every sitemap among `keys` on its origin's host row; return how many.

    `whole`: rows the caller holds in full (a new row as it put it), summarised
    without a read. Cost: one multi-get of the others, one write.
    """
    whole = whole or {}
    wanted = sorted(set(keys))
    if not wanted:
        return 0
    fields = list(rowcounts.SUMMARY_FIELDS)
    unread = [key for key in wanted if key not in whole]
    found = store.rows(WEBPAGE_TABLE, unread, columns=column_names(WebPage, fields)) if unread else {}
    rows = [*((key, whole[key]) for key in wanted if key in whole), *pages(found.items(), "counts", unreadable, fields)]
    puts = [(origin_of_key(key), encode(HostRow("", sitemap_summaries={row.url: rowcounts.summary(row)})))
            for key, row in rows if row.is_sitemap]
    return store.write(HOST_TABLE, puts).rows


class CountStep:
    """The row counts of the batch's touched rows (see the module docstring): `take` chunks, then `finish`."""

    FIELDS = _FIELDS

    def __init__(self, store: Store, batch_id: str, unreadable: Unreadable) -> None:
        self.store, self.batch_id, self.unreadable = store, batch_id, unreadable
        self.counts = CountCounts()
        self.deltas: dict[bytes, Groups] = {}
        self.changes: Changes = {}
        self.summarise: set[bytes] = set()
        self.ledger: evidence.Ledger[bytes] = evidence.Ledger(batch_id, _encode_hc, self._add_deltas, step="counts",
                                                              column=_HC.decode())

    def take(self, rows: list[tuple[bytes, WebPage]]) -> list[tuple[bytes, dict[bytes, bytes]]]:
        """Judge one chunk of touched rows again; the `m:hc` puts of those that changed, for the caller
        to write with its own puts of the rows."""
        puts: list[tuple[bytes, dict[bytes, bytes]]] = []
        names: dict[bytes, str] = {}  # origin key -> its name (a chunk's rows share a few origins)
        self.counts.rows += len(rows)
        for key, row in rows:
            origin = origin_of_key(key)
            name = names.get(origin)
            if name is None:
                name = names[origin] = origin.decode("utf-8")
            _lines, cell = self.judge(key, row, origin, name, rowcounts.row_tally(row))
            if cell is not None:
                puts.append((key, {_HC: cell}))
        return puts

    def judge(self, key: bytes, row: WebPage, origin: bytes, name: str, tally: Tally,
              kind: Hashable | None = None) -> tuple[list[Contribution], bytes | None]:
        """Judge one row of origin `origin` (named `name`) again, its tally `tally`; its lines, and its `m:hc`
        cell when it changed (None: unchanged). `kind`: its ledger kind when judged for the first time
        (default: its tally's key; rows of one kind give the same lines)."""
        if not row.counted:  # judged for the first time (every new row): once per origin and tally
            lines, cell = self.count_first(key, origin, name, tally, tally.key() if kind is None else kind,
                                           bool(row.is_sitemap))
            self.note_lists(origin, row.url, lists_noted(row, lines))
            return lines, cell
        if row.is_sitemap:
            self.summarise.add(key)
        lines, changed = self.ledger.again(origin, row.url, row.counted, counted(name, tally))
        self.note_lists(origin, row.url, lists_noted(row, lines))
        if changed is not None:
            self.counts.changed += 1
        return lines, changed

    def count_first(self, key: bytes, origin: bytes, name: str, tally: Tally, kind: Hashable,
                    is_sitemap: bool) -> tuple[list[Contribution], bytes]:
        """`judge` of row `key`, judged for the first time, but its audit lists (`note_lists`): its lines and
        `m:hc` cell. `kind`: its ledger kind (equal for rows of equal `tally` and origin). A lookup when the
        kind was met before (`scoring.alike` counts rows alike so)."""
        self.counts.changed += 1
        if is_sitemap:
            self.summarise.add(key)
        return self.ledger.lines(origin, kind, counted, name, tally)

    def note_lists(self, origin: bytes, url: str, noted: tuple[tuple[str, bool, str], ...]) -> None:
        """Note `url` on (True, and why) or off (False) these audit lists of `origin` (`lists_noted`): for
        the origin's samples (read only for an origin with such a row)."""
        if noted:
            changes = self.changes_of(origin)
            for name, on, why in noted:
                changes.note(name, url, on, why)

    def _add_deltas(self, origin: bytes, _name: str, groups: Groups) -> None:
        """Add one row's (or one kind of rows') deltas to its origin's."""
        deltas = self.deltas.get(origin)
        if deltas is None:
            deltas = self.deltas[origin] = {}
        evidence.add_groups(deltas, groups)

    def read_samples(self, keys: Iterable[bytes]) -> None:
        """Read the stored audit samples of the origins of these row keys not seen yet (one multi-get), so
        `changes_of` has them: a chunk of rows over many hosts costs one round trip, not one per host."""
        unseen = list(dict.fromkeys(origin for origin in map(origin_of_key, keys) if origin not in self.changes))
        if unseen:
            found = self.store.rows(HOST_TABLE, unseen, columns=column_names(HostRow, ["audit_samples"]))
            for origin in unseen:
                self.changes[origin] = self._samples(origin, found.get(origin) or {})

    def changes_of(self, origin: bytes) -> rowcounts.SampleChanges:
        """The origin's sample changes, its stored samples read on first sight (`read_samples` reads a chunk's
        at once; else one get per origin)."""
        changes = self.changes.get(origin)
        if changes is None:
            cells = self.store.row(HOST_TABLE, origin, column_names(HostRow, ["audit_samples"])) or {}
            changes = self.changes[origin] = self._samples(origin, cells)
        return changes

    @staticmethod
    def _samples(origin: bytes, cells: Mapping[bytes, bytes]) -> rowcounts.SampleChanges:
        try:
            row = decode(HostRow, origin.decode("utf-8"), cells, ["audit_samples"])
            stored = rowcounts.read_samples(row.audit_samples or {})
        except (ValueError, CellDecodeError) as exc:
            log.warning("counts: %r: unreadable audit samples taken as none: %s", origin[:200], exc)
            stored = {}
        return rowcounts.SampleChanges(stored)

    def finish(self, sitemaps: Iterable[bytes] = (), *, fold: bool = True,
               whole: Mapping[bytes, WebPage] | None = None) -> CountCounts:
        """Write the count cells, fold (unless not `fold`: the job counting is no updatedb), update the
        samples, summarise the sitemaps (and `sitemaps`; those in `whole` from the rows given there)."""
        self.ledger.flush()
        store, batch_id, counts, deltas = self.store, self.batch_id, self.counts, self.deltas
        cells = [(origin, encode(HostRow("", count_cells={
            evidence.cell_name(batch_id, bucket_of(origin)): "\n".join(evidence.groups_text(groups))})))
            for origin, groups in sorted(deltas.items())]
        store.write(HOST_TABLE, cells)
        counts.origins = len(cells)
        counts.folded = _finish_origins(store, sorted(set(deltas) | set(self.changes)), batch_id, self.changes,
                                        fold=fold)
        counts.sitemaps = write_summaries(store, self.summarise | set(sitemaps), self.unreadable, whole)
        log.info("counts: %s", counts.summary())
        return counts


class BatchCounting:
    """updatedb's counting: the quality evidence (when `quality`) and the row counts of a batch's touched
    rows, each row judged by itself, as updatedb's passes write it (see the module docstring).

    `take` every chunk of touched rows (`held` when read, and read with at
    least `FIELDS`, as they are once the caller's puts are written) and write
    the puts it returns with the caller's own; then `finish` (the quality
    step first: the summaries carry its verdicts). Safe to rerun and to run
    once per split, as long as every touched row of the split is taken, also
    the rows a rerun finds done. Raises UsageError for bad quality settings,
    and the store's errors.
    """

    FIELDS = list(dict.fromkeys([*QualityStep.FIELDS, *CountStep.FIELDS, *firstlisting.FIELDS,
                                 *hreflang_step.FIELDS]))

    def __init__(self, store: Store, rules: UrlRules, batch_id: str, now: datetime, *, quality: bool,
                 split: Split = WHOLE, unreadable: Unreadable | None = None) -> None:
        unreadable = unreadable if unreadable is not None else Unreadable()
        self.quality_step = QualityStep(store, rules, batch_id, now, unreadable, split) if quality else None
        self.count_step = CountStep(store, batch_id, unreadable)
        self.hreflang = hreflang_step.HreflangStep(store, unreadable)
        self.first_listing = firstlisting.FirstListing(batch_id, quality=quality)

    def held(self, rows: list[tuple[bytes, WebPage]]) -> list[tuple[bytes, WebPage]]:
        """`rows` as read, with the ledger lines their `s:fl` stands for (`scoring.firstlisting`): call it on
        every row before it is merged, and give each to `take`."""
        return self.first_listing.held(rows)

    def take(self, rows: list[tuple[bytes, WebPage]]) -> list[tuple[bytes, dict[bytes, bytes]]]:
        """Judge one chunk of touched rows, each by itself (its hreflang return links first: a fact it is
        counted by); the cells (`s:qc`, `m:hc`, `s:fl`, `s:wp`) to put on them, one put per row."""
        if not rows:
            return []
        self.count_step.read_samples(key for key, _ in rows)
        rows, judged = self.hreflang.judge(rows)
        puts = self.quality_step.take(rows) if self.quality_step is not None else []
        return self.first_listing.settle(rows, judged + puts + self.count_step.take(rows))

    def finish(self) -> tuple[QualityCounts | None, CountCounts]:
        """Write the evidence and count cells, rescore the touched sitemaps, write the summaries."""
        quality_counts = self.quality_step.finish() if self.quality_step is not None else None
        scored = self.quality_step.scored if self.quality_step is not None else ()
        return quality_counts, self.count_step.finish(scored)


_AUDIT_WORDS = tuple(rowcounts.AUDIT_WORDS.items())


def lists_noted(row: WebPage, lines: list[Contribution]) -> tuple[tuple[str, bool, str], ...]:
    """The audit lists `row` (of these lines) is on now (True, and why), or was on before this batch (False)."""
    noted: list[tuple[str, bool, str]] = []
    for line in lines:
        now = line.tally.counts if line.tally else {}
        was = line.before.counts if line.before else {}
        noted.extend((name, word in now, reason(row, name) if word in now else "")
                     for name, word in _AUDIT_WORDS if word in now or word in was)
    return tuple(noted)


def _finish_origins(store: Store, origins: list[bytes], batch_id: str, changes: Changes, *, fold: bool) -> int:
    """Fold the count cells of batches before `batch_id` into each origin's base (when `fold`) and update
    its audit samples (as `changes` read them: `CountStep.changes_of`); return the cells folded."""
    if not origins:
        return 0
    found = store.rows(HOST_TABLE, origins, columns=column_names(HostRow, _BASE_FIELDS)) if fold else {}
    for origin in origins:
        found.setdefault(origin, {})  # a new origin: no base, no samples yet
    puts: list[tuple[bytes, dict[bytes, bytes]]] = []
    deletes: list[tuple[bytes, list[bytes]]] = []
    folded = 0
    for origin, cells in found.items():
        names: list[str] = []
        try:
            if fold:
                row = decode(HostRow, origin.decode("utf-8"), cells, _BASE_FIELDS)
                new_base, names = evidence.fold(Base.read(row.counts, rowcounts.GROUP), dict(row.count_cells or {}),
                                                batch_id)
        except (ValueError, CellDecodeError) as exc:
            log.warning("counts: %r: unreadable counts, left for `updatedb --rescore`: %s", origin[:200], exc)
            continue
        noted = changes.get(origin)
        changed = rowcounts.apply_samples(noted.stored, noted.changes) if noted is not None else {}
        if changed:
            puts.append((origin, encode(HostRow("", audit_samples={
                n: rowcounts.sample_text(listed) for n, listed in changed.items()}))))
        if names:
            folded += len(names)
            puts.append((origin, encode(HostRow("", counts=new_base.lines()))))
            deletes.append((origin, list(encode(HostRow("", count_cells={n: "" for n in names})))))
    store.write(HOST_TABLE, puts)
    store.delete_many(HOST_TABLE, deletes)  # after the base that holds them is written
    return folded


#: The `host` row that says the counters were built (`~` sorts it after every origin, like politeness rows).
BUILT_KEY = b"~counters"


def counters_built(store: Store) -> bool:
    """Were the counters of this table built (or started on a table with nothing to count)? One get."""
    cells = store.row(HOST_TABLE, BUILT_KEY, column_names(HostRow, ["counters_built"]))
    return bool(cells)


def crawled_before(store: Store, batch_id: str, update_done: str) -> bool:
    """Did updatedb finish another batch than `batch_id` (registry name `update_done`) before the
    counters were built?

    Then the table was crawled by a version without counters: its first
    updatedb must count everything (`recount`, `scoring.quality_step.score_sitemaps`),
    or the increments would start from zero. Cost: a scan of one column of
    the `batch` table (one small row per batch).
    """
    column = list(encode(BatchRow(batch_id, done={update_done: ""})))
    return any(key.decode("utf-8", "replace") != batch_id for key, _ in store.scan(BATCH_TABLE, columns=column))


def mark_built(store: Store, now: datetime) -> None:
    """Record that the counters were built (after a full count)."""
    store.write(HOST_TABLE, [(BUILT_KEY, encode(HostRow("", counters_built=now)))])


def recount(store: Store, batch_id: str = "") -> CountCounts:
    """Count every row of the table from scratch: every origin's base, every row's `m:hc`, every summary.

    The repair (`updatedb --rescore`). Every count cell is deleted; every
    row's `m:hc` is as if `batch_id` had judged it. Raises the store's errors.
    """
    counts = CountCounts()
    unreadable = Unreadable()
    totals: dict[bytes, Tally] = {}
    sitemap_keys: list[bytes] = []
    samples: dict[bytes, rowcounts.Samples] = {}
    puts: list[tuple[bytes, dict[bytes, bytes]]] = []
    scan = store.scan(WEBPAGE_TABLE, columns=column_names(WebPage, _FIELDS))
    for key, row in pages(scan, "counts", unreadable, _FIELDS):
        counts.rows += 1
        tally = rowcounts.row_tally(row)
        totals.setdefault(origin_of_key(key), Tally()).add(tally)
        for name in audit_lists(row):
            listed = samples.setdefault(origin_of_key(key), {}).setdefault(name, {})
            if len(listed) < rowcounts.SAMPLE_CAP:
                listed[row.url] = " ".join(reason(row, name).split())
        if row.is_sitemap:
            sitemap_keys.append(key)
        text = (Contribution(origin_of_key(key).decode("utf-8"), batch_id, rowcounts.GROUP, tally, rowcounts.GROUP,
                             tally).line(),)
        if text != tuple(row.counted or ()):
            counts.changed += 1
            puts.append((key, encode(WebPage(row.url, counted=text))))
        if len(puts) >= store.batch_size:  # written as the scan goes: memory stays one batch, not the table
            store.write(WEBPAGE_TABLE, puts)
            puts = []
    store.write(WEBPAGE_TABLE, puts)
    old_cells: list[tuple[bytes, list[bytes]]] = []
    for host_key, cells in store.scan(HOST_TABLE, columns=column_names(HostRow, COUNTER_FIELDS)):
        if host_key.startswith(b"~"):
            continue
        try:
            host = decode(HostRow, "", cells, COUNTER_FIELDS)
        except CellDecodeError as exc:
            log.warning("counts: host row %r: %s", host_key[:200], exc)
            continue
        names = list(host.count_cells or {})
        for name in host.audit_samples or {}:
            samples.setdefault(host_key, {}).setdefault(name, {})  # emptied: written empty
        if names:
            old_cells.append((host_key, list(encode(HostRow("", count_cells={n: "" for n in names})))))
        if host.counts and host_key not in totals:
            totals[host_key] = Tally()
    bases = [(origin, encode(HostRow("", counts=Base("", {rowcounts.GROUP: tally}, rowcounts.GROUP).lines())))
             for origin, tally in sorted(totals.items())]
    bases += [(origin, encode(HostRow("", audit_samples={n: rowcounts.sample_text(u) for n, u in lists.items()})))
              for origin, lists in sorted(samples.items())]
    store.write(HOST_TABLE, bases)
    store.delete_many(HOST_TABLE, old_cells)
    counts.origins = len(bases)
    counts.sitemaps = write_summaries(store, sitemap_keys, unreadable)
    log.info("counts: %s", counts.summary())
    return counts
