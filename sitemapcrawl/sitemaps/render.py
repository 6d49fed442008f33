"""Text for people and scripts: table rows, JSON lines, tree lines, report lines.

Pure string building, one entry or node at a time, so output streams.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from sitemapcrawl.sitemaps.model import Entry, PageEntry, ParseReport, SitemapKind, SitemapRef
from sitemapcrawl.sitemaps.times import format_time, iso

if TYPE_CHECKING:  # the tree walker (protego, usp) is not needed to print one document
    from sitemapcrawl.sitemaps.tree import TreeNode

TABLE_HEADER = f"{'KIND':<7} {'LASTMOD':<20} {'CHANGEFREQ':<10} {'PRIO':>4}  LOC"


_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
_quote = json.encoder.encode_basestring  # what JSONEncoder(ensure_ascii=False) does to a str


def json_line(entry: Entry) -> str:
    """One entry as a compact JSON object (the `--jsonl` shape: `json.dumps(entry.to_dict())`).

    A plain page (no extensions) or child sitemap is written directly, the
    rest through the JSON encoder; a test pins both to the same text.
    """
    if type(entry) is PageEntry and not (entry.images or entry.videos or entry.news or entry.alternates):
        kind = '{"kind":"url","loc":'
        changefreq = "null" if entry.changefreq is None else '"' + entry.changefreq + '"'  # a StrEnum
        value = entry.priority  # in [0, 1] after normalising: repr is what json writes
        priority = "null" if value is None else repr(value) if 0 <= value <= 1 else _JSON.encode(value)
    elif type(entry) is SitemapRef:
        kind, changefreq, priority = '{"kind":"sitemap","loc":', "null", "null"
    else:
        return _JSON.encode(entry.to_dict())
    lastmod = entry.lastmod
    stamp = "null" if lastmod is None else '"' + format_time(lastmod) + '"'
    return f'{kind}{_quote(entry.loc)},"lastmod":{stamp},"changefreq":{changefreq},"priority":{priority}}}'


def entry_json_line(sitemap: str, entry: Entry) -> str:
    """One entry with the sitemap that lists it (`sitemap tree --entries --jsonl`)."""
    return json.dumps({"sitemap": sitemap, **entry.to_dict()}, ensure_ascii=False, separators=(",", ":"))


def table_row(entry: Entry) -> str:
    """One entry as a fixed-width table row under `TABLE_HEADER`."""
    if type(entry) is PageEntry:
        changefreq = None if entry.changefreq is None else entry.changefreq.value
        priority = "-" if entry.priority is None else f"{entry.priority:g}"
    else:
        changefreq, priority = None, "-"
    return f"{entry.kind:<7} {iso(entry.lastmod) or '-':<20} {changefreq or '-':<10} {priority:>4}  {entry.loc}"


def report_lines(report: ParseReport) -> list[str]:
    """The problems and leniency warnings of a report, one line each, for stderr."""
    lines = [f"warning: {problem}" for problem in report.problems]
    return lines + [f"warning: lenient read: {warning}" for warning in report.warnings]


def report_summary(kind: SitemapKind, report: ParseReport) -> str:
    """A one-line summary of a document read."""
    return (
        f"{kind.value}: {report.kept:,} entries kept, {report.dropped_scope:,} out of scope, "
        f"{report.over_limit:,} over the URL limit, {report.invalid:,} invalid, "
        f"{report.bytes_read:,} bytes read"
    )


def tree_line(node: TreeNode) -> str:
    """One sitemap of a tree, indented by depth: URL, kind, counts, problems."""
    indent = "  " * node.depth
    if node.error is not None or node.kind is None or node.report is None:
        return f"{indent}{node.url}  [{node.via}] ERROR: {node.error}"
    counts = (
        f"{node.children:,} sitemaps"
        if node.kind is SitemapKind.INDEX
        else f"{node.report.kept:,} urls"
    )
    problems = "; ".join(
        (*node.report.problems, *(f"lenient read: {w}" for w in node.report.warnings))
    )
    tail = f"  ! {problems}" if problems else ""
    return f"{indent}{node.url}  [{node.kind.value}, {node.via}] {counts}{tail}"


def tree_json_line(node: TreeNode) -> str:
    """One sitemap of a tree as a JSON object (`sitemap tree --jsonl`)."""
    report = node.report
    data = {
        "url": node.url,
        "depth": node.depth,
        "via": node.via,
        "parent": node.parent,
        "kind": None if node.kind is None else node.kind.value,
        "urls": None if report is None or node.kind is SitemapKind.INDEX else report.kept,
        "sitemaps": node.children if node.kind is SitemapKind.INDEX else None,
        "dropped_scope": None if report is None else report.dropped_scope,
        "dropped_folder": None if report is None else report.dropped_folder,
        "dropped_host": None if report is None else report.dropped_host,
        "over_limit": None if report is None else report.over_limit,
        "invalid": None if report is None else report.invalid,
        "problems": [] if report is None else list(report.problems),
        "warnings": [] if report is None else list(report.warnings),
        "error": node.error,
    }
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


class TreeTotals:
    """Counts over the nodes of a tree, for the closing summary line."""

    def __init__(self) -> None:
        self.sitemaps = 0
        self.failed = 0
        self.urls = 0

    def add(self, node: TreeNode) -> None:
        """Count one node."""
        if node.report is None:
            self.failed += 1
            return
        self.sitemaps += 1
        if node.kind is not SitemapKind.INDEX:
            self.urls += node.report.kept

    def line(self) -> str:
        """The one-line summary."""
        return (
            f"{self.sitemaps:,} sitemaps read, {self.failed:,} not read, "
            f"{self.urls:,} page URLs listed"
        )
