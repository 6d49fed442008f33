"""Rows a job writes that no counting holds yet (inject's seeds, detect's sitemaps), counted as written.

updatedb counts the rows a batch touches; a seed never fetched in
sitemap-only mode, or a sitemap detect found and no batch fetched, is
touched by none, so the row counts `serve` and the crawl's summary read
would miss it while `report`, which scans the table, counts it.
`count_written` counts such rows as `count_step.CountStep` counts any row:
their `m:hc` lines, one cell `n:c.<run>.<bucket>` per origin, the audit
samples and the summaries of the sitemaps among them. The cells are
written before the rows' `m:hc`, under a run id that a rerun of the same
rows finds again (`_run_id`): a run stopped between the two is overwritten,
not added to, by its rerun. A row with `m:hc` or `s:fl` is counted already:
updatedb moves it between counts when it judges it.

Cost per call: a multi-get of the origins' count cells and one of their
audit samples; a write of the cells, one multi-get and write of the
sitemap summaries, a write of the `m:hc` cells.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from datetime import datetime

from sitemapcrawl.errors import CellDecodeError
from sitemapcrawl.model.cells import column_names, decode, overlaid
from sitemapcrawl.model.webpage import HOST_TABLE, WEBPAGE_TABLE, HostRow, WebPage
from sitemapcrawl.scoring import evidence, rowcounts
from sitemapcrawl.scoring.count_step import CountCounts, CountStep
from sitemapcrawl.scoring.evidence import Base
from sitemapcrawl.storage.store import Store
from sitemapcrawl.storage.tables import Unreadable
from sitemapcrawl.web.rowkeys import origin_of_key

#: What a job reads of the rows it is about to write, for `count_written` (a row's counted fields and ledgers).
FIELDS = list(dict.fromkeys([*CountStep.FIELDS, "first_listing"]))
_CELL_FIELDS = ["counts", "count_cells"]

Written = tuple[bytes, WebPage | None, WebPage]
"""A row a job wrote: its key, the row as read before (with `FIELDS`; None: a new row), the update put on it."""


def count_written(store: Store, written: Iterable[Written], job: str, now: datetime,
                  unreadable: Unreadable) -> CountCounts:
    """Count the rows among `written` that no counting holds yet (see the module docstring), as written.

    Call it once the rows are written. `job` names the run id's kind
    (`inject`, `detect`); `now` dates a new run id. Raises the store's errors.
    """
    rows: dict[bytes, WebPage] = {}
    for key, before, update in written:
        held = rows.get(key)
        if held is not None:  # written twice (detect: two hosts list one sitemap)
            rows[key] = overlaid(held, update)
        elif before is None:
            rows[key] = update
        elif before.counted is None and before.first_listing is None:
            rows[key] = overlaid(before, update)
    if not rows:
        return CountCounts()
    ordered = sorted(rows.items())
    step = CountStep(store, _run_id(store, ordered, job, now), unreadable)
    step.read_samples(rows)
    marks = step.take(ordered)
    counts = step.finish(fold=False)  # the cells first: a run stopped before its marks is found again
    store.write(WEBPAGE_TABLE, marks)
    return counts


def _run_id(store: Store, rows: list[tuple[bytes, WebPage]], job: str, now: datetime) -> str:
    """The id the counting of `rows` writes its cells and `m:hc` lines under: `<time>-<job><digest>`.

    The digest is of the rows' keys and tallies, so a rerun that meets the
    same rows uncounted (its run stopped after the cells, before the marks)
    makes the same digest and takes the id it finds on their origins' host
    rows (a cell not folded yet, or one folded): it writes the same cells
    again. Otherwise the time is `now`, as a batch id's is: a new id sorts
    after the batches a base has forgotten (`evidence.Base.holds`). Cost:
    one multi-get of the origins' count cells.
    """
    digest = hashlib.blake2b(digest_size=6)
    for key, row in rows:
        digest.update(key + b"\t" + rowcounts.row_tally(row).text().encode("utf-8") + b"\n")
    tail = f"-{job}{digest.hexdigest()}"
    origins = sorted({origin_of_key(key) for key, _row in rows})
    for origin, cells in store.rows(HOST_TABLE, origins, columns=column_names(HostRow, _CELL_FIELDS)).items():
        try:
            host = decode(HostRow, origin.decode("utf-8"), cells, _CELL_FIELDS)
            ids = [*map(evidence.cell_batch, host.count_cells or {}), *Base.read(host.counts, rowcounts.GROUP).folded]
        except (ValueError, CellDecodeError):
            continue  # unreadable counts: `updatedb --rescore` repairs them
        for found in ids:
            if found.endswith(tail):
                return found
    return f"{now:%Y%m%d%H%M%S}{tail}"
