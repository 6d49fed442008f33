"""The jobs: each is the work of one command; it scans rows, does its work, writes rows, returns counts.

A job never hands data to the next one through memory or files: all state is
in HBase, so every job can be stopped and run again. Jobs import the parts
below them (fetcher, scoring, batch, storage, web, model), never another job,
except `crawl`, the one loop that runs the others. The jobs: `init`,
`inject`, `detect`, `generate`, `fetch`, `parse`, `updatedb`, `crawl`,
`readdb` and `export`.
"""

#: What other packages may use of this one, module by module (tests/unit/test_layout.py refuses any other
#: name): a module or a name not here is this package's own.
FACE: dict[str, tuple[str, ...]] = {
    "crawl": (
        "CrawlOptions", "Splits", "crawl", "finish_batch", "generate_workers", "parse_workers", "updatedb_workers",
    ),
    "detect": ("detect",),
    "export": ("ExportCounts", "ExportOptions", "export"),
    "fetch": ("fetch",),
    "generate": ("GenerateOptions", "generate"),
    "init": ("init_tables",),
    "inject": ("Rejected", "inject"),
    "parse": ("SitemapOutcome", "parse_batch"),
    "readdb": ("collect_stats", "read_row", "rows_with_prefix"),
    "updatedb": ("updatedb",),
}
