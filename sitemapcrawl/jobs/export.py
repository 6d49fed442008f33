"""`export`: one flat row per URL, with readable column names, as CSV, JSON lines or Parquet.

A deliberate full scan of `webpage` (or of one host's key range with
`--host`): the data out, for a notebook or a spreadsheet, not part of a
crawl round. It streams: rows go out as they are read (Parquet, the optional
`parquet` extra, a row group per `PARQUET_GROUP` rows), so memory stays flat
whatever the table holds. The columns (`COLUMNS`), the filters and what
makes a CSV safe to open: docs/commands.md, export.

Cost per row: a dozen small columns and only the *sitemap* inlink cells (a
server-side filter drops link cells, so a page with thousands of inlinks
costs nothing extra); first, one filtered scan of the sitemap rows for their
quality scores (one float per sitemap in memory).
"""

from __future__ import annotations

import csv
import enum
import logging
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from sitemapcrawl.errors import CellDecodeError, InvalidUrlError, UsageError
from sitemapcrawl.model.audit import (
    AUDIT_NAMES,
    PROBLEM_FIELDS,
    REASON_FIELDS,
    alternates,
    audit_lists,
    discovered_via,
    is_orphan,
    is_unlisted,
    reason,
)
from sitemapcrawl.model.cells import column_names, equals_filter, map_column, map_families_of
from sitemapcrawl.model.codec import format_time, parse_time
from sitemapcrawl.model.lastmod import LastmodVerdict
from sitemapcrawl.model.linkvalues import InlinkKind
from sitemapcrawl.model.webpage import WEBPAGE_TABLE, FetchStatus, WebPage
from sitemapcrawl.modes import ExportFormat, choices
from sitemapcrawl.safetext import printable, printable_json
from sitemapcrawl.storage.store import Store
from sitemapcrawl.storage.tables import Unreadable, decode_page, scan_pages
from sitemapcrawl.web import rowkeys, urls
from sitemapcrawl.web.pagesays import x_robots_tag

log = logging.getLogger(__name__)

#: The columns of every format, in order.
COLUMNS = (
    "url", "host", "status", "http_code", "content_type", "fetched_at", "next_fetch_at", "discovered_via",
    "sitemaps", "lastmod", "changefreq", "priority", "sitemap_quality", "depth", "radius", "noindex",
    "canonical", "redirect_to", "linked_from", "x_robots_tag", "hreflang", "news_publication_date", "news_title",
    "images", "videos", "lastmod_verdict", "audit",
)
#: Rows per Parquet row group (and per write).
PARQUET_GROUP = 50_000
PARQUET_MISSING = "Parquet export needs pyarrow: pip install 'sitemapcrawl[parquet]' (or pip install pyarrow)"

#: The webpage fields export reads (bench_export's happybase floor reads the same columns).
EXPORT_FIELDS = list(dict.fromkeys([
    "status", "http_code", "content_type", "fetch_time", "next_fetch", "is_sitemap", "in_sitemap", "seed",
    "lastmod", "changefreq", "priority", "depth", "radius", "noindex", "canonical", "redirect_to",
    "link_inlinks", "inlinks", "hreflang", "sitemap_hreflang", "news_date", "news_title", "images", "videos",
    *PROBLEM_FIELDS, *REASON_FIELDS]))


#: What is decoded after `split_cells` took the times (as text) and the sitemap inlinks out.
_DECODED_FIELDS = [name for name in EXPORT_FIELDS if name not in ("fetch_time", "next_fetch", "lastmod", "inlinks")]


class Listing(enum.StrEnum):
    """Which rows by their sitemap membership."""

    ALL = "all"
    IN_SITEMAPS = "in-sitemaps"
    NOT_IN_SITEMAPS = "not-in-sitemaps"
    ORPHANS = "orphans"
    UNLISTED = "unlisted"


@dataclass(frozen=True)
class ExportOptions:
    """Which rows to export, and how."""

    host: str | None = None
    status: str | None = None
    listing: Listing = Listing.ALL
    format: ExportFormat = ExportFormat.CSV
    audit: str | None = None
    """Only the rows on this audit list (`model.audit.AUDIT_NAMES`)."""

    @classmethod
    def from_flags(cls, fmt: str | ExportFormat, *, host: str | None = None, status: str | None = None,
                   in_sitemaps: bool = False, not_in_sitemaps: bool = False, orphans: bool = False,
                   unlisted: bool = False, audit: str | None = None) -> ExportOptions:
        """The options of the command line; UsageError naming the first bad or clashing flag."""
        if audit is not None and audit not in AUDIT_NAMES:
            raise UsageError(f"--audit {audit[:40]!r}: choose one of {', '.join(AUDIT_NAMES)}")
        try:
            chosen = ExportFormat(fmt)
        except ValueError:
            raise UsageError(f"--format {fmt!r}: choose one of {choices(ExportFormat)}") from None
        if in_sitemaps and not_in_sitemaps:
            raise UsageError("export: give --in-sitemaps or --not-in-sitemaps, not both (together they select nothing)")
        if orphans and unlisted:
            raise UsageError("export: give --orphans or --unlisted, not both")
        if (orphans or unlisted) and (in_sitemaps or not_in_sitemaps):
            raise UsageError("export: --orphans and --unlisted already say whether rows are in sitemaps")
        listing = Listing.ORPHANS if orphans else Listing.UNLISTED if unlisted else (
            Listing.IN_SITEMAPS if in_sitemaps else Listing.NOT_IN_SITEMAPS if not_in_sitemaps else Listing.ALL)
        options = cls(host=host, status=status, listing=listing, format=chosen, audit=audit)
        options.status_value()
        if chosen is ExportFormat.PARQUET:
            _pyarrow()
        return options

    def status_value(self) -> FetchStatus | None:
        """`status` as a FetchStatus; UsageError listing the choices for a bad one."""
        if self.status is None:
            return None
        try:
            return FetchStatus(self.status)
        except ValueError:
            raise UsageError(f"--status {self.status!r}: choose one of {choices(FetchStatus)}") from None


@dataclass
class ExportCounts:
    """What an export did."""

    scanned: int = 0
    written: int = 0
    unreadable: Unreadable = field(default_factory=Unreadable)
    """Rows skipped: their key or a cell did not decode (logged)."""

    def summary(self) -> str:
        """One line for stderr."""
        return f"{self.written} rows written of {self.scanned} read" + (
            f", {self.unreadable.rows} unreadable rows skipped" if self.unreadable.rows else "")


def sitemap_filter() -> str:
    """The row's own columns, and of its inlinks only the cells a sitemap wrote (`sitemap ...`)."""
    inlinks = map_families_of(WebPage)["inlinks"].family
    return f"(FamilyFilter(!=, 'binary:{inlinks}') OR ValueFilter(=, 'binaryprefix:{InlinkKind.SITEMAP.value} '))"


def sitemap_scores(store: Store) -> dict[str, float]:
    """Quality score by sitemap URL (one filtered scan of the sitemap rows).

    An unreadable sitemap row is logged and has no score here; the row scan
    counts it in the summary when it reaches it.
    """
    scores: dict[str, float] = {}
    sitemaps = equals_filter(WebPage, "is_sitemap", True)
    for _key, row in scan_pages(store, "export", Unreadable(), ["is_sitemap", "quality"], row_filter=sitemaps):
        if row.quality is not None:
            scores[row.url] = row.quality
    return scores


def _keep(row: WebPage, listing: Listing, audit: str | None = None) -> bool:
    if audit is not None and audit not in audit_lists(row):
        return False
    if listing is Listing.IN_SITEMAPS:
        return bool(row.in_sitemap)
    if listing is Listing.NOT_IN_SITEMAPS:
        return not row.in_sitemap
    if listing is Listing.ORPHANS:
        return is_orphan(row)
    if listing is Listing.UNLISTED:
        return is_unlisted(row)
    return True


#: Times are checked (a real time) and go out in the one fixed-width spelling (`format_time`).
_TIME_FIELDS = ("fetch_time", "next_fetch", "lastmod")
_TIME_COLUMNS = tuple(zip(("fetched_at", "next_fetch_at", "lastmod"), column_names(WebPage, _TIME_FIELDS),
                          strict=True))
_INLINK_PREFIX = map_column(WebPage, "inlinks")


def split_cells(cells: dict[bytes, bytes]) -> tuple[dict[str, str | None], list[str]]:
    """Take the time cells (checked, as the one fixed-width text) and the sitemap inlink qualifiers out of `cells`.

    What is left is decoded as usual. The scan's filter sends only sitemap
    inlink cells, so each `il:` qualifier left is a listing sitemap. Raises
    CellDecodeError for a time cell that is not a real UTC time of years
    1..9999 (`0000-01-01T00:00:00Z`, a 31 February). No I/O.
    """
    times: dict[str, str | None] = {}
    for name, column in _TIME_COLUMNS:
        raw = cells.pop(column, None)
        if raw is None:
            times[name] = None
            continue
        try:
            # Written again by the one formatter: an old short-year cell goes out zero-padded.
            times[name] = format_time(parse_time(raw.decode("ascii")))
        except (ValueError, UnicodeDecodeError):
            raise CellDecodeError(f"column {column.decode()}: {raw[:40]!r} is not a UTC time") from None
    listing = sorted(key[len(_INLINK_PREFIX):].decode("utf-8") for key in cells if key.startswith(_INLINK_PREFIX))
    for source in listing:
        del cells[_INLINK_PREFIX + source.encode("utf-8")]
    return times, listing


def flat_row(row: WebPage, scores: dict[str, float], times: dict[str, str | None],
             listing: list[str]) -> dict[str, Any]:
    """One exported row (JSON-ready values; None: not known), from `split_cells` and the decoded rest. No I/O."""
    quality = [scores[s] for s in listing if s in scores]
    claimed = times["lastmod"] is not None or bool(row.lastmod_verdict)
    return {
        "url": row.url, "host": urls.host_key(row.url),
        "status": row.status.value if row.status else None, "http_code": row.http_code,
        "content_type": row.content_type or None,
        "fetched_at": times["fetched_at"], "next_fetch_at": times["next_fetch_at"],
        "discovered_via": discovered_via(row), "sitemaps": listing, "lastmod": times["lastmod"],
        "changefreq": row.changefreq.value if row.changefreq else None, "priority": row.priority,
        "sitemap_quality": max(quality) if quality else None, "depth": row.depth, "radius": row.radius,
        "noindex": row.noindex, "canonical": row.canonical or None, "redirect_to": row.redirect_to or None,
        "linked_from": row.link_inlinks or 0,  # absent: updatedb writes no 0 (model.audit.listing_count)
        "x_robots_tag": x_robots_tag(row.robots or ()),
        "hreflang": [{"hreflang": lang, "href": href} for lang, href in alternates(row)],
        "news_publication_date": row.news_date or None, "news_title": row.news_title or None,
        "images": row.images or 0, "videos": row.videos or 0,
        "lastmod_verdict": (row.lastmod_verdict or LastmodVerdict.OK.value) if claimed else None,
        "audit": [f"{name}: {reason(row, name)}" for name in audit_lists(row)],
    }


def export_rows(store: Store, options: ExportOptions, counts: ExportCounts,
                rules: urls.CanonicalRules = urls.DEFAULT_RULES,
                on_progress: Callable[[int], None] = lambda rows: None) -> Iterator[dict[str, Any]]:
    """The exported rows in key order (see the module docstring).

    Raises at once (before any row, so no output is started) UsageError for
    a bad status, InvalidUrlError for a bad host, and the store's errors.
    Unreadable rows are counted and skipped.
    """
    store.require_tables(WEBPAGE_TABLE)
    status = options.status_value()
    prefix = rowkeys.host_row_prefix(options.host, rules).encode("utf-8") if options.host else None
    row_filter = sitemap_filter()
    if status is not None:
        row_filter = f"{equals_filter(WebPage, 'status', status)} AND {row_filter}"
    scores = sitemap_scores(store)
    return _rows(store, prefix, row_filter, scores, options, counts, on_progress)


def _rows(store: Store, prefix: bytes | None, row_filter: str, scores: dict[str, float], options: ExportOptions,
          counts: ExportCounts, on_progress: Callable[[int], None]) -> Iterator[dict[str, Any]]:
    for key, cells in store.scan(WEBPAGE_TABLE, prefix=prefix, columns=column_names(WebPage, EXPORT_FIELDS),
                                 filter=row_filter):
        counts.scanned += 1
        if counts.scanned % 10_000 == 0:
            on_progress(counts.scanned)
        try:
            times, sitemaps = split_cells(cells)
            row = decode_page(key, cells, _DECODED_FIELDS)
        except (InvalidUrlError, CellDecodeError) as exc:
            counts.unreadable.add("export", key, exc)
            continue
        if not _keep(row, options.listing, options.audit):
            continue
        counts.written += 1
        yield flat_row(row, scores, times, sitemaps)


# ------------------------------------------------------------------ formats --

#: What a spreadsheet reads as the start of a formula (OWASP, "CSV Injection").
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_text(text: str) -> str:
    """A text cell safe to open in a spreadsheet and to print: no formula, no control character.

    A cell starting with `=`, `+`, `-`, `@`, tab or carriage return gets a
    single quote in front (OWASP's advice: the spreadsheet shows the text,
    never runs it); control characters are escaped as `\\xNN` as everywhere
    the CLI prints (`safetext.printable`). No I/O.
    """
    if text.startswith(_FORMULA_START):
        text = "'" + text
    return printable(text)


#: How a list column is joined in a CSV cell: `sitemaps` are URLs (no spaces), `audit` lines are words.
_CSV_JOIN = {"audit": " | "}


def _csv_value(value: Any, join: str = " ") -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list) and value and isinstance(value[0], dict):  # hreflang: LANG=URL ...
        return csv_text(join.join(f"{item['hreflang']}={item['href']}" for item in value))
    if isinstance(value, list):
        return csv_text(join.join(value))
    if isinstance(value, str):
        return csv_text(value)
    return value


def write_csv(rows: Iterator[dict[str, Any]], out: IO[str]) -> None:
    """CSV with a header; empty cell = unknown, flags true/false, `sitemaps` space-separated, `hreflang` as
    `LANG=URL` space-separated, `audit` as `list: reason` lines joined by ` | `.

    Text cells go through `csv_text` (formulas neutralised, control characters escaped).
    """
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for row in rows:
        writer.writerow([_csv_value(row[name], _CSV_JOIN.get(name, " ")) for name in COLUMNS])


def write_jsonl(rows: Iterator[dict[str, Any]], out: IO[str]) -> None:
    """One JSON object per row, keys in `COLUMNS` order; always valid JSON, terminal-safe (`printable_json`)."""
    for row in rows:
        out.write(printable_json(row) + "\n")


def parquet_schema() -> Any:
    """The Parquet schema (times as UTC timestamps, `sitemaps` a list of strings)."""
    pa = _pyarrow()
    text, number, whole, flag = pa.string(), pa.float64(), pa.int64(), pa.bool_()
    moment = pa.timestamp("s", tz="UTC")
    pair = pa.struct([("hreflang", text), ("href", text)])
    types = {"http_code": whole, "fetched_at": moment, "next_fetch_at": moment, "sitemaps": pa.list_(text),
             "lastmod": moment, "priority": number, "sitemap_quality": number, "depth": whole, "radius": whole,
             "noindex": flag, "linked_from": whole, "hreflang": pa.list_(pair), "news_publication_date": moment,
             "images": whole, "videos": whole, "audit": pa.list_(text)}
    return pa.schema([(name, types.get(name, text)) for name in COLUMNS])


def _pyarrow() -> Any:
    try:
        import pyarrow
    except ImportError:
        raise UsageError(PARQUET_MISSING) from None
    return pyarrow


def _parquet_value(name: str, value: Any) -> Any:
    if value is not None and name in ("fetched_at", "next_fetch_at", "lastmod"):
        return parse_time(value)  # checked by split_cells: a real time of years 1..9999
    if value is not None and name == "news_publication_date":
        try:
            return parse_time(value)
        except ValueError:
            return None  # a hand-written cell that is no time: unknown
    return value


def write_parquet(rows: Iterator[dict[str, Any]], out: Any) -> None:
    """Parquet, one row group per PARQUET_GROUP rows; `out` is a path or a binary file."""
    pa = _pyarrow()
    import pyarrow.parquet as pq

    schema = parquet_schema()
    with pq.ParquetWriter(out, schema) as writer:
        batch: dict[str, list[Any]] = {name: [] for name in COLUMNS}
        size = 0
        for row in rows:
            for name in COLUMNS:
                batch[name].append(_parquet_value(name, row[name]))
            size += 1
            if size >= PARQUET_GROUP:
                writer.write_table(pa.table(batch, schema=schema))
                batch = {name: [] for name in COLUMNS}
                size = 0
        if size:
            writer.write_table(pa.table(batch, schema=schema))


def export(store: Store, options: ExportOptions, output: Path | None, counts: ExportCounts,
           rules: urls.CanonicalRules = urls.DEFAULT_RULES,
           on_progress: Callable[[int], None] = lambda rows: None) -> None:
    """Write the export to `output` (None: stdout) in `options.format`.

    UsageError when Parquet would go to a terminal or the file cannot be
    written; the errors of `export_rows` come before anything is written.
    """
    if options.format is ExportFormat.PARQUET and output is None and sys.stdout.isatty():
        raise UsageError("export: Parquet is binary; give --output FILE or redirect stdout")
    rows = export_rows(store, options, counts, rules, on_progress=on_progress)
    try:
        if options.format is ExportFormat.PARQUET:
            write_parquet(rows, str(output) if output else sys.stdout.buffer)
            return
        write = write_csv if options.format is ExportFormat.CSV else write_jsonl
        if output is None:
            write(rows, sys.stdout)
            return
        with output.open("w", encoding="utf-8", newline="") as out:
            write(rows, out)
    except OSError as exc:
        raise UsageError(f"export: cannot write {output or 'stdout'}: {exc.strerror or exc}") from None
