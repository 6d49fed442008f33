"""The sitemap engine: bytes and a URL in; entries, child sitemaps and problems out.

It knows nothing of HBase or the network, so jobs, tests and benchmarks use it
alone. Modules: `document` (`parse_sitemap`, the streaming pipeline), `sniff`
(what the bytes are), `decompress` (gzip and zip, capped), `xml` (the safe
lxml `iterparse` loop), `feeds` (RSS and Atom), `text`, `normalize` (loc,
lastmod, changefreq, priority), `scope` (vouching hosts, else the folder
rule), `limits`, `discovery` (the well-known paths), `tree` (walking a site's
sitemaps, network behind a protocol), `render` (what the CLI prints), `model`
(values and errors), `times` (the one spelling of a time), `usp_tree` and
`usp_pages` (`sitemap_tree_for_homepage`, ultimate-sitemap-parser's call and
objects, read by this engine; imported on first use, since usp's import
costs more than the rest of the package). Which library does what, and why:
docs/sitemaps.md.
"""

from typing import TYPE_CHECKING, Any

from sitemapcrawl.sitemaps.document import SitemapDocument, parse_sitemap
from sitemapcrawl.sitemaps.limits import SitemapLimits
from sitemapcrawl.sitemaps.model import (
    Alternate,
    ChangeFreq,
    EmptySitemapError,
    Entry,
    Image,
    News,
    NotASitemapError,
    PageEntry,
    ParseReport,
    SitemapKind,
    SitemapRef,
    Video,
)
from sitemapcrawl.sitemaps.scope import ScopeContext

if TYPE_CHECKING:
    from sitemapcrawl.sitemaps.usp_tree import UspWebClientFetcher, sitemap_tree_for_homepage

_LAZY = ("UspWebClientFetcher", "sitemap_tree_for_homepage")


def __getattr__(name: str) -> Any:
    """The usp drop-in's names, imported when first asked for (usp is slow to import)."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module("sitemapcrawl.sitemaps.usp_tree"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Alternate",
    "ChangeFreq",
    "EmptySitemapError",
    "Entry",
    "Image",
    "News",
    "NotASitemapError",
    "PageEntry",
    "ParseReport",
    "ScopeContext",
    "SitemapDocument",
    "SitemapKind",
    "SitemapLimits",
    "SitemapRef",
    "UspWebClientFetcher",
    "Video",
    "parse_sitemap",
    "sitemap_tree_for_homepage",
]

#: What other packages may use of this one, module by module (tests/unit/test_layout.py refuses any other
#: name): a module or a name not here is this package's own.
FACE: dict[str, tuple[str, ...]] = {
    "discovery": ("well_known_sitemap_urls",),
    "document": ("parse_sitemap",),
    "limits": ("SitemapLimits",),
    "model": (
        "ChangeFreq", "PageEntry", "ProblemKind", "SitemapRef", "add_problem_counts", "problem_lines",
        "read_problem_lines",
    ),
    "render": (
        "TABLE_HEADER", "TreeTotals", "entry_json_line", "json_line", "report_lines", "report_summary", "table_row",
        "tree_json_line", "tree_line",
    ),
    "scope": (
        "ScopeContext", "format_vouchers", "host_of", "inherited_vouchers", "merge_vouchers", "parse_vouchers",
        "vouch_host", "vouchers_after_redirect",
    ),
    "times": ("format_time",),
    "tree": ("EntrySink", "Start", "TreeNode", "walk_tree"),
}
