"""Sitemap quality and row counts: one evidence ledger, counted as rows arrive.

`evidence` judges a row's facts into per-kind tallies and keeps them as
counter cells; `quality` turns a sitemap's tallies into its quality state and
the weight of its priorities; `rowcounts` turns them into the row counts
`serve` and `report` read. `quality_step` and `count_step` are updatedb's
steps that apply the ledger to a batch's rows, each row judged by itself;
`alike` wraps them to judge rows merged alike once per kind; `hreflang_step`
judges a row's hreflang return links before it is counted; `new_rows`
counts the rows inject and detect write that no batch has judged.
"""

__all__ = ["alike", "count_step", "evidence", "hreflang_step", "new_rows", "quality", "quality_step",
           "rowcounts"]
