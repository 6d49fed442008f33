"""Sitemap quality and row counts: one evidence ledger, counted as rows arrive.

`evidence` judges a row's facts into per-kind tallies and keeps them as
counter cells; `quality` turns a sitemap's tallies into its quality state and
the weight of its priorities; `rowcounts` turns them into the row counts
`serve` and `report` read. `quality_step` and `count_step` are updatedb's
steps that apply the ledger to a batch's rows, each row judged by itself;
`alike` wraps them to judge rows merged alike once per kind; `hreflang_step`
judges a row's hreflang return links before it is counted; `new_rows`
counts the rows inject and detect write that no batch has judged;
`firstlisting` stores a first-listed row's two ledger cells as one short cell.
"""

#: What other packages may use of this one, module by module (tests/unit/test_layout.py refuses any other
#: name): a module or a name not here is this package's own.
FACE: dict[str, tuple[str, ...]] = {
    "alike": ("AlikeCounting", "AlikeRows"),
    "count_step": (
        "BatchCounting", "COUNTER_FIELDS", "CountCounts", "counters_built", "crawled_before", "mark_built", "recount",
    ),
    "evidence": ("Base", "STATUS_PREFIX", "evidence", "latest"),
    "new_rows": ("FIELDS", "Written", "count_written"),
    "quality": ("SIGNALS", "SIGNAL_FIELDS", "stored_signals"),
    "quality_step": ("QualityCounts", "score_sitemaps"),
    "rowcounts": (
        "AUDIT_FIELDS", "AUDIT_PREFIX", "AUDIT_WORDS", "ERROR_STATUSES", "GROUP", "SAMPLE_CAP", "SUMMARY_FIELDS",
        "TALLY_FIELDS", "named", "read_samples", "read_summary", "row_tally", "summary_fields",
    ),
}
