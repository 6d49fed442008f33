"""The batch marks on a `webpage` row (family `k`): which batch each phase has done.

As Nutch's `Mark`: generate stamps the rows of a batch with its id, and each
later phase marks a row with the id once its work on the row is written, so
a rerun of any phase skips what is done and a killed phase is simply run
again. This module owns the two questions asked of the marks, so no job
compares mark strings by hand:

- `Mark.X.done(row, batch)`: has phase X done this row for this batch?
- `held_by(row)`: the unfinished batch a row belongs to (generate must not
  select it again), or None.

A `Mark` is its `WebPage` field name (a `StrEnum`), so it goes wherever a
field name goes: the fields a job reads, `batchrecords.batch_rows`. No I/O here.
"""

from __future__ import annotations

import enum

from sitemapcrawl.model.cells import equals_filter, was_read
from sitemapcrawl.model.webpage import WebPage


class Mark(enum.StrEnum):
    """One phase's mark: the `WebPage` field that holds the batch id it has done."""

    GENERATE = "generate_mark"
    """`k:gen`: generate put the row in the batch."""
    FETCH = "fetch_mark"
    """`k:fch`: fetch recorded the row's outcome."""
    PARSE = "parse_mark"
    """`k:prs`: parse wrote the row's entries or outlinks."""
    DISCOVER = "discover_mark"
    """`k:dsc`: the batch wrote an inlink on the row (parse, updatedb), to be merged."""
    MERGE = "merge_mark"
    """`k:mrg`: updatedb merged the row's inlinks, in a merge a rerun must not repeat (it added link score,
    or planned a fetched row's next fetch from the time it ran). Any other merge is idempotent (maxima,
    counts of the inlinks, a new row's first plan, which a rerun leaves alone) and writes no mark: an
    inventory's million listed rows carry one cell fewer."""
    UPDATE = "update_mark"
    """`k:upd`: updatedb scheduled the row (or `batches --release` freed it): the batch lets go of it."""

    def of(self, row: WebPage) -> str | None:
        """The batch id this mark holds on `row` (None: never set); FieldNotReadError when not read."""
        value: str | None = was_read(getattr(row, self.value))
        return value

    def done(self, row: WebPage, batch_id: str) -> bool:
        """Has this phase done `row` for `batch_id`? (FieldNotReadError when the mark was not read.)"""
        return was_read(getattr(row, self.value)) == batch_id

    def filter(self, batch_id: str) -> str:
        """An HBase filter string: the rows this mark says belong to `batch_id` (rows without it left out)."""
        return equals_filter(WebPage, self.value, batch_id)


#: What `held_by` reads of a row.
HELD_FIELDS = (Mark.GENERATE.value, Mark.UPDATE.value, Mark.FETCH.value, "next_fetch", "fetch_time")


def held_by(row: WebPage) -> str | None:
    """The unfinished batch a row belongs to, or None when generate may select it.

    A row is held from generate's mark until updatedb's mark says the same
    batch (or the batch is released). One exception, so that the crawl moves
    on before updatedb has merged the batch: a row the fetch of that batch
    rescheduled itself (fetch mark = generate mark and next fetch after the
    fetch time: retries and deferrals) is free again once due. `row` must
    hold `HELD_FIELDS`.
    """
    batch = Mark.GENERATE.of(row)
    if not batch or Mark.UPDATE.done(row, batch):
        return None
    rescheduled = (Mark.FETCH.done(row, batch) and row.next_fetch is not None and row.fetch_time is not None
                   and row.next_fetch > row.fetch_time)
    return None if rescheduled else batch
