"""What a person reads about a crawl: the text report, the HTML report, and `serve`.

`text` builds the report's figures from the small counter rows; `panels`
turns them into the panels both HTML outputs show; `html` writes the
self-contained report page; `serve` is the live monitoring page and its JSON
API; `metrics` is its Prometheus `/metrics`. None of them scans the `webpage`
table.
"""

#: What other packages may use of this one, module by module (tests/unit/test_layout.py refuses any other
#: name): a module or a name not here is this package's own.
FACE: dict[str, tuple[str, ...]] = {
    "html": ("write_report",),
    "panels": ("json_lines", "take_counted_snapshot", "take_snapshot"),
    "serve": ("ServeOptions", "serve"),
    "text": ("build_report", "sitemap_outcomes"),
}
