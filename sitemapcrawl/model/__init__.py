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

#: What other packages may use of this one, module by module (tests/unit/test_layout.py refuses any other
#: name): a module or a name not here is this package's own.
FACE: dict[str, tuple[str, ...]] = {
    "alerts": ("ALERT_FIELDS", "fails_now", "shrank"),
    "audit": (
        "AUDIT_NAMES", "NEED_LINKS", "PROBLEM_FIELDS", "REASON_FIELDS", "TITLES", "alternates", "audit_lists",
        "declared", "discovered_via", "is_orphan", "is_unlisted", "missing_returns", "reason",
    ),
    "cells": (
        "RowT", "column_names", "columns_of", "compare_filter_of", "decode", "encode", "equals_filter", "field_encoder",
        "fields_held", "fields_set", "map_column", "map_families_of", "overlaid", "readable_cells", "was_read",
        "with_fields",
    ),
    "changes": (
        "Change", "ChangeKind", "Hints", "change_lines", "chunks", "count_changes", "diff", "hints_of", "history_key",
        "pack", "read_changes", "read_snapshot", "sitemap_key_of", "snapshot_lines",
    ),
    "codec": ("format_time", "parse_time"),
    "due": (
        "BUILT_KEY", "DueKind", "Entry", "LAYOUT", "ReadyEntry", "due_range", "host_queue", "kind_of", "kinds_for",
        "parse_entry", "parse_ready", "ready_range",
    ),
    "entries": (
        "EXTENSION_FIELDS", "MAX_ALTERNATES", "NewsCount", "UniformLastmods", "extension_fields", "merged_extensions",
    ),
    "lastmod": (
        "LASTMOD_SLACK", "LastmodVerdict", "UNIFORM_MIN", "lastmod_test", "lastmod_verdict", "verdict_after_fetch",
        "verdict_cell",
    ),
    "linkvalues": (
        "Inlink", "InlinkKind", "Outlink", "OutlinkKind", "format_inlink", "format_outlink", "hop", "parse_inlink",
        "parse_outlink",
    ),
    "marks": ("Mark", "held_by"),
    "newrows": ("new_page",),
    "rank": ("RANK_FIELDS", "order_of", "rank_order", "sitemap_priority", "unjittered_rank"),
    "schedule": ("SchedulePolicy", "after_failure", "eagerest", "schedule"),
    "splits": ("BUCKETS", "Split", "WHOLE", "bucket_label", "bucket_of", "parse_share"),
    "taskindex": ("split_from_scheduler",),
    "webpage": (
        "BATCHROW_TABLE", "BATCH_TABLE", "BatchRecord", "BatchRow", "ChangeFreq", "DUE_TABLE", "DueRow", "FetchStatus",
        "HISTORY_TABLE", "HOST_TABLE", "HistoryRow", "HostRow", "QualityState", "RobotsStatus", "SitemapSource",
        "TABLES", "TABLE_NAMES", "WEBPAGE_TABLE", "WebPage", "batch_cell",
    ),
}
