"""The row model: tables and columns, the value codec, and the pure decisions on rows.

No I/O here. `webpage` declares every table, family and column (the only
place in the code with column names), `cells` lays rows out as cells and
`codec` writes and reads their values; `newrows`, `linkvalues`, `marks`,
`splits`, `taskindex`, `rank`, `due`, `schedule`, `changes`, `entries`,
`lastmod`, `audit` and `alerts` are pure functions over rows: new rows,
link cells, batch marks, key ranges (and a batch scheduler's task index as
one), the generate rank, the due order, the next fetch time, sitemap change
lines, a sitemap entry's extensions, the lastmod verdict, audit lists and
the alerts of `changes --fail-on-*`. Storage,
web, scoring and the jobs build on it.
"""

__all__ = [
    "alerts", "audit", "cells", "changes", "codec", "due", "entries", "lastmod", "linkvalues", "marks", "newrows",
    "rank", "schedule", "splits", "taskindex", "webpage",
]
