"""Rows a job writes that no counting holds yet (inject's seeds, detect's sitemaps), counted as written.

updatedb counts the rows a batch touches; a seed never fetched in
sitemap-only mode, or a sitemap detect found and no batch fetched, is
touched by none, so the row counts `serve` and the crawl's summary read
would miss it while `report`, which scans the table, counts it.
`count_written` counts such rows as `count_step.CountStep` counts any row:
their `m:hc` lines, one cell `n:c.<run>.<bucket>` per origin, the audit
samples and the summaries of the sitemaps among them. The cells are
written before the rows' `m:hc`, under a run id made from the rows' keys
(`_run_id`): a run stopped between the two is overwritten, not added to, by
its rerun. A row with `m:hc` or `s:fl` is counted already:
updatedb moves it between counts when it judges it.

Cost per call: a multi-get of the rows there before that no counting
holds (when there are: what they are counted and summarised by), a
multi-get of the audit samples of the origins of rows on an audit list
(when there are), a write of the cells, a write of the sitemap summaries
(when there are sitemaps), a write of the `m:hc` cells.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from sitemapcrawl.model.audit import audit_lists
from sitemapcrawl.model.cells import overlaid
from sitemapcrawl.model.webpage import WEBPAGE_TABLE, WebPage
from sitemapcrawl.scoring import evidence, rowcounts
from sitemapcrawl.scoring.count_step import CountCounts, CountStep
from sitemapcrawl.storage.store import Store
from sitemapcrawl.storage.tables import Unreadable, read_pages

#: What a job reads of the rows it is about to write, for `count_written`: whether a counting holds them. The
#: few that no counting holds are read again whole (`_STALE_FIELDS`), not every row a chunk meets.
FIELDS = ["counted", "first_listing"]
#: What a row there before that no counting holds is read with once written: what it is counted by and, a
#: sitemap, summarised by.
_STALE_FIELDS = list(dict.fromkeys([*CountStep.FIELDS, *rowcounts.SUMMARY_FIELDS]))

Written = tuple[bytes, WebPage | None, WebPage]
"""A row a job wrote: its key, the row as read before (with at least `FIELDS`; None: a new row), the update put
on it."""


def count_written(store: Store, written: Iterable[Written], job: str, unreadable: Unreadable) -> CountCounts:
    """Count the rows among `written` that no counting holds yet (see the module docstring), as written.

    Call it once the rows are written. `job` names the run id's kind
    (`inject`, `detect`). Raises the store's errors.
    """
    rows: dict[bytes, WebPage] = {}  # each row whole: a new one holds what was put, a stale one is read so
    stale: set[bytes] = set()  # rows there before that no counting holds: read as written
    for key, before, update in written:
        if key in stale:
            continue
        held = rows.get(key)
        if held is not None:  # written twice (detect: two hosts list one sitemap)
            rows[key] = overlaid(held, update)
        elif before is None:
            rows[key] = update
        elif before.counted is None and before.first_listing is None:
            stale.add(key)
    if stale:
        rows.update(read_pages(store, sorted(stale), _STALE_FIELDS, job, unreadable))
    if not rows:
        return CountCounts()
    ordered = sorted(rows.items())
    step = CountStep(store, _run_id((key for key, _row in ordered), job), unreadable)
    step.read_samples(key for key, row in ordered if audit_lists(row))  # a new row is on few lists
    marks = step.take(ordered)
    # The cells first: a run stopped before its marks is rerun alike.
    counts = step.finish(fold=False, whole=rows)
    store.write(WEBPAGE_TABLE, marks)
    return counts


def _run_id(keys: Iterable[bytes], job: str) -> str:
    """The id the counting of the rows of `keys` writes its cells and `m:hc` lines under: `~<job><digest>`.

    The digest is of the rows' keys, so a rerun that meets the same rows
    uncounted (its run stopped after the cells, before the marks) makes the
    same id and overwrites the cells with what it counts now: no read, and no
    tally made twice a row. Such an id is no batch's: a base never compares
    it with its `through` (`evidence.RUN_PREFIX`).
    """
    digest = hashlib.blake2b(digest_size=8)
    for key in keys:
        digest.update(key + b"\n")
    return f"{evidence.RUN_PREFIX}{job}{digest.hexdigest()}"
