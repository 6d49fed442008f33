"""A row as its first listing left it stores one short cell (`s:fl`) for its two ledger cells.

Why: an inventory's rows are listed once and not yet fetched, and what each
gives its origin's row counts (`m:hc`) and its sitemap's quality evidence
(`s:qc`) follows from the batch that first judged it, the sitemap that
listed it, its lastmod and its changefreq. `s:fl` (BATCH TAB SITEMAP) holds
in about 60 bytes what the two cells hold in 280 (what HBase saves:
benchmarks/results/2026-12-03-inventory-first-listing.md).

The rule: a ledger cell, when present, is what the row holds; when it is
absent and `s:fl` is set, the row holds the lines `lines_of` derives from
`s:fl`, `s:lm` and `s:cf`. updatedb alone writes those cells, in the same put
as any ledger cell its judging changes. `FirstListing.held` fills the ledger
fields of rows as read; `settle` writes `s:fl` instead of the ledger cells of
a row judged for the first time when the row as written derives exactly
them. A rerun of the batch that wrote `s:fl` counts the row again as the
first run did.

Cost per row: two lines joined and compared; the tallies once per batch,
lastmod and changefreq (`functools.lru_cache`).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import NamedTuple

from sitemapcrawl.model.cells import field_encoder, with_fields
from sitemapcrawl.model.webpage import FetchStatus, WebPage
from sitemapcrawl.scoring import evidence, rowcounts
from sitemapcrawl.scoring.evidence import Contribution
from sitemapcrawl.sitemaps.model import ChangeFreq
from sitemapcrawl.web.rowkeys import origin_of_key

log = logging.getLogger(__name__)

_HC, _encode_hc = field_encoder(WebPage, "counted")
_QC, _encode_qc = field_encoder(WebPage, "quality_contributions")
_FL, _encode_fl = field_encoder(WebPage, "first_listing")
#: Derived lines never judge a lastmod "future": a lastmod past the judging time stays past.
_NEVER = datetime(9000, 1, 1, tzinfo=UTC)
#: Fields `held` and `settle` read, beside the ledgers.
FIELDS = ["first_listing", "counted", "quality_contributions", "lastmod", "changefreq", "inlinks"]
Cells = dict[bytes, bytes]


class _Held(NamedTuple):
    """What `held` filled on a row: the listing its `s:fl` names, and which ledgers it derived."""

    batch_id: str
    sitemap: str
    counted: bool
    given: bool


def first_listing(batch_id: str, sitemap: str) -> str:
    """The `s:fl` text: the batch that first judged the row and the sitemap that listed it ('' for none)."""
    return f"{batch_id}\t{sitemap}"


def read_first_listing(text: str) -> tuple[str, str]:
    """(batch, sitemap) of an `s:fl` text; ValueError when it is not BATCH TAB SITEMAP."""
    batch, tab, sitemap = text.partition("\t")
    if not tab or not batch or "\t" in sitemap:
        raise ValueError(f"not BATCH TAB SITEMAP: {text[:120]!r}")
    return batch, sitemap


@functools.lru_cache(maxsize=4096)
def _tails(batch_id: str, lastmod: datetime | None, changefreq: ChangeFreq | None) -> tuple[str, str]:
    """The `m:hc` and `s:qc` lines of `lines_of` without their first field (the origin, the sitemap), which
    a line starts with: formatted once per lastmod and changefreq (an inventory has a few hundred)."""
    row = WebPage("", status=FetchStatus.UNFETCHED, in_sitemap=True, lastmod=lastmod, changefreq=changefreq)
    given = evidence.contribution(lastmod, FetchStatus.UNFETCHED, None, None, None, _NEVER)
    return (Contribution("", batch_id, rowcounts.GROUP, rowcounts.row_tally(row), None, None).line(),
            Contribution("", batch_id, batch_id, given, None, None).line())


def lines_of(origin: str, batch_id: str, sitemap: str, lastmod: datetime | None,
             changefreq: ChangeFreq | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The `m:hc` and `s:qc` lines `s:fl` (`batch_id`, `sitemap`) stands for on a row of `origin` with this
    lastmod and changefreq: a listed, unfetched row judged for the first time by `batch_id` (the lines
    `count_step` and `quality_step` write for such a row). No I/O."""
    counted, given = _tails(batch_id, lastmod, changefreq)
    return (origin + counted,), ((sitemap + given,) if sitemap else ())


class FirstListing:
    """updatedb's side of the rule (module docstring) for one batch: `held` rows as read, `settle` the puts.

    `quality`: whether the batch judges the quality evidence (`s:qc`); without
    it, `s:fl` names no sitemap and stands for `m:hc` alone.
    """

    def __init__(self, batch_id: str, *, quality: bool) -> None:
        self.batch_id, self.quality = batch_id, quality
        self._derived: dict[bytes, _Held] = {}
        """Rows `held` filled, until `settle` meets them."""

    def held(self, rows: Iterable[tuple[bytes, WebPage]]) -> list[tuple[bytes, WebPage]]:
        """`rows` (as read, with `FIELDS`) with the ledger lines their `s:fl` stands for where a ledger cell is
        absent; remembers those rows for `settle`."""
        out = []
        for key, row in rows:
            if row.first_listing is not None and (row.counted is None or row.quality_contributions is None):
                row = self._fill(key, row)
            out.append((key, row))
        return out

    def _fill(self, key: bytes, row: WebPage) -> WebPage:
        try:
            batch_id, sitemap = read_first_listing(row.first_listing or "")
        except ValueError as exc:
            log.warning("counts: %s: unreadable s:fl taken as none: %s", row.url, exc)
            return row
        counted, given = lines_of(_origin(key), batch_id, sitemap, row.lastmod, row.changefreq)
        fill_counted, fill_given = row.counted is None, row.quality_contributions is None and bool(given)
        self._derived[key] = _Held(batch_id, sitemap, fill_counted, fill_given)
        return with_fields(row, {"counted": counted if fill_counted else row.counted,
                                 "quality_contributions": given if fill_given else row.quality_contributions})

    def settle(self, rows: list[tuple[bytes, WebPage]], puts: list[tuple[bytes, Cells]]) -> list[tuple[bytes, Cells]]:
        """The counting's `puts` for `rows` (as written), one put per row: the ledger cells of a row judged for
        the first time replaced by `s:fl` when it derives them; a derived ledger the batch left unchanged
        written out when the row as written no longer derives it."""
        by_key: dict[bytes, Cells] = {}
        for key, cells in puts:
            by_key.setdefault(key, {}).update(cells)
        for key, row in rows:
            derived = self._derived.pop(key, None)
            if derived is not None:
                self._keep(key, row, derived, by_key)
            elif row.counted is None and row.first_listing is None and (
                    not self.quality or row.quality_contributions is None):
                self._compact(key, row, by_key)
        return list(by_key.items())

    def _keep(self, key: bytes, row: WebPage, derived: _Held, by_key: dict[bytes, Cells]) -> None:
        """Write the derived ledgers of `row` the batch did not rewrite, if the row as written derives others."""
        cells = by_key.get(key, {})
        counted, given = lines_of(_origin(key), derived.batch_id, derived.sitemap, row.lastmod, row.changefreq)
        if derived.counted and _HC not in cells and counted != row.counted:
            by_key.setdefault(key, {})[_HC] = _encode_hc(row.counted or ())
        if derived.given and _QC not in cells and given != row.quality_contributions:
            by_key.setdefault(key, {})[_QC] = _encode_qc(row.quality_contributions or ())

    def _compact(self, key: bytes, row: WebPage, by_key: dict[bytes, Cells]) -> None:
        """Replace a first-judged row's ledger cells by `s:fl` when the row as written derives them."""
        cells = by_key.get(key)
        if cells is None or _HC not in cells:
            return
        sitemap = ""
        if self.quality:
            if row.inlinks is None or len(row.inlinks) != 1 or _QC not in cells:
                return
            sitemap = next(iter(row.inlinks))
        counted, given = lines_of(_origin(key), self.batch_id, sitemap, row.lastmod, row.changefreq)
        if cells[_HC] != _encode_hc(counted) or (self.quality and cells[_QC] != _encode_qc(given)):
            return
        del cells[_HC]
        cells.pop(_QC, None)
        cells[_FL] = _encode_fl(first_listing(self.batch_id, sitemap))


def _origin(key: bytes) -> str:
    """The origin of a `webpage` row key as text: the first field of its `m:hc` line."""
    return origin_of_key(key).decode("utf-8")
