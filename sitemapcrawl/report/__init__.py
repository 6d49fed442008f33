"""What a person reads about a crawl: the text report, the HTML report, and `serve`.

`text` builds the report's figures from the small counter rows; `panels`
turns them into the panels both HTML outputs show; `html` writes the
self-contained report page; `serve` is the live monitoring page and its JSON
API; `metrics` is its Prometheus `/metrics`. None of them scans the `webpage`
table.
"""

__all__ = ["html", "metrics", "panels", "serve", "text"]
