"""Rows merged alike judged once per kind: a cache around updatedb's exact counting.

An inventory's million new rows are a few thousand kinds: each holds one
inlink and nothing else, and updatedb merged it from that alone
(`jobs.updatedb.FirstListings`). `AlikeCounting` wraps a
`count_step.BatchCounting`: it judges the first row of each kind (its
counted fields, its inlink's sitemap and its origin) as `BatchCounting`
would, and counts every later row of that kind as that one was, with the
same cells, without making it as merged. Where the texts do not repeat
(every entry its own lastmod) it hands the rows to `BatchCounting` to be
judged each by itself. The counts come out as judging every row alone
(tests/unit/test_counting_alike.py holds it to that).

Memory: at most `HELD` kinds of each memo, then all forgotten (a kind met
again is judged again: never a wrong count).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import NamedTuple

from sitemapcrawl.model.cells import field_encoder
from sitemapcrawl.model.linkvalues import InlinkKind, parse_inlink
from sitemapcrawl.model.rank import sitemap_priority
from sitemapcrawl.model.splits import bucket_of
from sitemapcrawl.model.webpage import WebPage
from sitemapcrawl.scoring import count_step, evidence, quality_step, rowcounts
from sitemapcrawl.scoring.count_step import BatchCounting, CountCounts, CountStep
from sitemapcrawl.scoring.evidence import Tally
from sitemapcrawl.scoring.quality_step import QualityCounts, QualityStep
from sitemapcrawl.web.rowkeys import origin_of_key

Puts = list[tuple[bytes, dict[bytes, bytes]]]
_HC = field_encoder(WebPage, "counted")[0]


class AlikeRows(NamedTuple):
    """Rows of a chunk given to `AlikeCounting.take` as read, each merged from its one inlink alone."""

    texts: Mapping[bytes, str]
    """Row key -> the text of its one inlink."""
    merged: Callable[[WebPage, str], WebPage]
    """A row as read, with its inlink text -> the row as the merge left it."""


class CountFirst(NamedTuple):
    """How the count step judged the first row of a kind: what it counts again for each row alike to it."""

    origin: bytes
    name: str
    tally: Tally
    kind: int
    """The number of its ledger kind (its tally's key)."""
    is_sitemap: bool
    notes: tuple[tuple[str, bool, str], ...]
    """The audit lists its lines put it on (True, and why) or take it off (False)."""


class QualityFirst(NamedTuple):
    """How the quality step judged the first row of a kind: its host bucket, the number of its ledger kind
    there, what it gives its sitemaps now (None: none lists it), whether a sitemap lists it, is a sitemap."""

    bucket: int
    kind: int
    current: Mapping[str, tuple[str, Tally]] | None
    listed: bool
    is_sitemap: bool


class _TextKind(NamedTuple):
    """What is kept of the rows merged from one inlink text: the number of their counted kind, their
    priority (`s:pr`) and what they rank by as they are (`rank.sitemap_priority`)."""

    number: int
    priority: float | None
    ranked_by: float


class _Judged(NamedTuple):
    """How the first row of a kind was judged: its cells, and what each step counts for a row alike to it."""

    cells: dict[bytes, bytes]
    quality: QualityFirst | None
    counted: CountFirst


class _CountAlike:
    """The count step's side: a row judged as the first of its kind, or counted as that one was."""

    def __init__(self, step: CountStep) -> None:
        self.step = step
        self._kinds = evidence.KindNumbers()  # numbered: each row alike looks its kind up
        self._judged: evidence.Forgetful[tuple[bytes, int, tuple[tuple[str, bool, str], ...]], CountFirst] = (
            evidence.Forgetful())

    def first(self, key: bytes, row: WebPage) -> tuple[dict[bytes, bytes], CountFirst]:
        """`CountStep.take` of one row judged for the first time: its cells, and how it was judged."""
        step = self.step
        origin = origin_of_key(key)
        name, tally = origin.decode("utf-8"), rowcounts.row_tally(row)
        step.counts.rows += 1
        kind = self._kinds.of(tally.key())
        lines, cell = step.judge(key, row, origin, name, tally, kind)
        # Shared by the rows of a kind, origin and audit notes (memory, not time). The notes are of the key:
        # why a row is on a list reads more than its tally does (a news entry's date).
        shape = (origin, kind, count_step.lists_noted(row, lines))
        judged = self._judged.get(shape)
        if judged is None:
            judged = self._judged.keep(shape, CountFirst(origin, name, tally, kind, bool(row.is_sitemap), shape[2]))
        return ({_HC: cell} if cell is not None else {}), judged

    def again(self, key: bytes, url: str, judged: CountFirst) -> None:
        """Count row `key` (of `url`) as `first` counted `judged`'s row: a row judged for the first time whose
        fields but the URL are those of that row, of the same origin, holding no canonical URL (a tally
        reads the URL only to compare it with one). Its cell is the one `first` gave that row."""
        step = self.step
        step.counts.rows += 1
        step.count_first(key, judged.origin, judged.name, judged.tally, judged.kind, judged.is_sitemap)
        step.note_lists(judged.origin, url, judged.notes)


class _QualityAlike:
    """The quality step's side: a row judged as the first of its kind, or counted as that one was."""

    def __init__(self, step: QualityStep) -> None:
        self.step = step
        self._kinds = evidence.KindNumbers()
        self._judged: evidence.Forgetful[tuple[int, int, bool, bool], QualityFirst] = evidence.Forgetful()

    def first(self, key: bytes, row: WebPage) -> tuple[dict[bytes, bytes], QualityFirst]:
        """`QualityStep.take` of a row judged for the first time but its `s:wp` (`weighted`)."""
        step = self.step
        links = quality_step.sitemap_links(row)
        if links:  # as `take` weighs it
            step.resolve({source for source, link in links if link.kind is InlinkKind.SITEMAP})
        shape = (bucket_of(key), self._kinds.of(quality_step.first_kind(row, links)),
                 any(link.kind is InlinkKind.SITEMAP for _source, link in links), bool(row.is_sitemap))
        judged = self._judged.get(shape)  # shared by the rows of a kind and bucket: memory, not time
        if judged is None:
            bucket, kind, listed, is_sitemap = shape
            current = quality_step.gives_now(row, links, step.now) if links else None
            judged = self._judged.keep(shape, QualityFirst(bucket, kind, current, listed, is_sitemap))
        return self.again(key, judged), judged

    def again(self, key: bytes, judged: QualityFirst) -> dict[bytes, bytes]:
        """`first` of row `key` but its `s:wp`, counted as `judged`'s row was: a lookup."""
        return self.step.count_first(key, judged.bucket, judged.kind, judged.current, judged.is_sitemap)

    def weighted(self, priority: float | None, ranked_by: float, source: str,
                 judged: QualityFirst) -> dict[bytes, bytes]:
        """The `s:wp` cell of a row judged as `judged`, listed by `source` alone (none if unlisted)."""
        return self.step.weigh_listed(priority, ranked_by, source) if judged.listed else {}


class AlikeCounting:
    """`BatchCounting` with rows merged alike judged once per kind (see the module docstring).

    Used as `BatchCounting` is: `held`, `take` (with the chunk's `AlikeRows`
    from the merge pass), `finish`.
    """

    REPEATS_SEEN = 5000
    """Alike rows `take` counts before it judges whether their texts repeat (`_repeating`)."""
    HELD = evidence.KIND_NUMBERS_HELD
    """Kinds of alike rows whose judging `take` keeps: in an inventory, lastmods times changefreqs per sitemap
    (about 600 in 50,000 entries of the shape `benchmarks/inventory_writes.py` writes) times its sitemaps
    (interleaved: rows come in key order)."""

    def __init__(self, counting: BatchCounting, *, held: int | None = None) -> None:
        held = self.HELD if held is None else held
        self.counting = counting
        self.FIELDS = counting.FIELDS
        self._count = _CountAlike(counting.count_step)
        self._quality = _QualityAlike(counting.quality_step) if counting.quality_step is not None else None
        self._kinds: evidence.Forgetful[str, _TextKind] = evidence.Forgetful(held)
        """Inlink text -> the counted kind of the rows merged from it alone (`_counted_kind`), numbered."""
        self._counted_kinds = evidence.KindNumbers(held)
        self._judged: evidence.Forgetful[tuple[int, str, bytes], _Judged] = evidence.Forgetful(held)
        """(counted kind, sitemap, origin) -> how its first row was judged."""
        self._puts: evidence.Forgetful[tuple[tuple[bytes, bytes], ...], dict[bytes, bytes]] = evidence.Forgetful(
            held)
        """The puts of kinds judged, each once (many kinds give the same `s:fl`)."""
        self._texts_seen: evidence.Forgetful[str, bool] = evidence.Forgetful(held)
        self._texts_counted = self._texts_repeated = 0
        """Alike rows counted by `_repeating`, and those of them whose text it had seen."""

    def held(self, rows: list[tuple[bytes, WebPage]]) -> list[tuple[bytes, WebPage]]:
        """`BatchCounting.held`."""
        return self.counting.held(rows)

    def take(self, rows: list[tuple[bytes, WebPage]], alike: AlikeRows | None = None) -> Puts:
        """`BatchCounting.take` of one chunk, `alike` the rows among `rows` given as read, holding one inlink
        and nothing else, which updatedb merged from that alone.

        Such a row, whose counted fields (`FIELDS` but its priority) and
        inlink's sitemap and origin are those of one judged before, is
        counted as that one was and gets its cells, without judging it
        again, nor making it as merged. Where the texts do not repeat, the
        rows are merged and judged each by itself (`_repeating`).
        """
        counting = self.counting
        texts = alike.texts if alike is not None else {}
        if alike is not None and texts and not self._repeating(texts.values()):
            rows = [(key, alike.merged(row, texts[key]) if key in texts else row) for key, row in rows]
            texts = {}
        if alike is None or not texts:
            return counting.take(rows)
        counting.count_step.read_samples(key for key, _ in rows)
        puts = counting.take([(key, row) for key, row in rows if key not in texts])
        for key, row in rows:
            text = texts.get(key)
            if text is not None:
                cells = self._take_alike(key, row, text, alike.merged)
                if cells:
                    puts.append((key, cells))
        return puts

    def _repeating(self, texts: Iterable[str]) -> bool:
        """Do the inlink texts of alike rows repeat enough for judging them by kind to pay? Counts this chunk's.

        A kind judged for the first time costs about 1.5 times a row judged
        by itself, a kind met again a quarter of it (in-process timings of
        30,000 rows; benchmarks/results/2026-12-03-inventory-counting-alike.md).
        Yes while fewer than `REPEATS_SEEN` rows were seen or a quarter of
        them repeat a text seen before (the counts halve past that, so a
        batch whose sitemaps change shape is followed). Cost: a set lookup
        per row.
        """
        seen = self._texts_seen
        for text in texts:
            self._texts_counted += 1
            if text in seen:
                self._texts_repeated += 1
            else:
                seen.keep(text, True)
        counted, repeated = self._texts_counted, self._texts_repeated
        if counted >= 4 * self.REPEATS_SEEN:
            self._texts_counted, self._texts_repeated = counted // 2, repeated // 2
        return counted < self.REPEATS_SEEN or 4 * repeated >= counted

    def _take_alike(self, key: bytes, row: WebPage, text: str,
                    merged: Callable[[WebPage, str], WebPage]) -> dict[bytes, bytes]:
        """The cells of a row as read, merged from its one inlink `text` (see `take`): judged by each step
        when its kind, sitemap and origin are new here, else counted as the first such row was."""
        source = next(iter(row.inlinks or {}), "")
        after = None  # the row as merged: made only for a text or kind met for the first time
        kind = self._kinds.get(text)
        if kind is None:
            after = merged(row, text)
            kind = self._kinds.keep(text, _TextKind(self._counted_kinds.of(_counted_kind(after, text)),
                                                    after.priority, sitemap_priority(after)))
        judged_key = (kind.number, source, origin_of_key(key))
        judged = self._judged.get(judged_key)
        quality = self._quality
        if judged is None:
            after = after or merged(row, text)
            cells, first = quality.first(key, after) if quality is not None else ({}, None)
            counted_cells, counted = self._count.first(key, after)
            settled = self.counting.first_listing.settle([(key, after)], [(key, {**cells, **counted_cells})])
            put = settled[0][1] if settled else {}
            cells_key = tuple(sorted(put.items()))
            put = self._puts.get(cells_key) or self._puts.keep(cells_key, put)  # one dict for equal puts
            judged = self._judged.keep(judged_key, _Judged(put, first, counted))
        else:
            if quality is not None and judged.quality is not None:
                quality.again(key, judged.quality)
            self._count.again(key, row.url, judged.counted)
        if quality is None or judged.quality is None:
            return judged.cells
        weighted = quality.weighted(kind.priority, kind.ranked_by, source, judged.quality)
        return {**judged.cells, **weighted} if weighted else judged.cells

    def finish(self) -> tuple[QualityCounts | None, CountCounts]:
        """`BatchCounting.finish`."""
        return self.counting.finish()


_COUNTED_FIELDS = [name for name in BatchCounting.FIELDS if name not in ("inlinks", "priority")]


def _counted_kind(row: WebPage, text: str) -> Hashable:
    """What the counting of a row merged from its one inlink `text` reads but the URL, the inlink's sitemap
    and the priority: its counted fields and the inlink's kind, parse and lastmod. (Such a row holds no
    canonical URL, so no tally reads the URL; `QualityStep.weigh_listed` reads the priority row by row.)"""
    link = parse_inlink(text)
    return (tuple([getattr(row, name) for name in _COUNTED_FIELDS]),
            None if link is None else (link.kind, link.batch, link.lastmod))
