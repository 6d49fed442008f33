"""`report`: what the table says about a crawl, per host and per sitemap.

One scan of `webpage` (a dozen small columns per row, no bodies, no link
families) and one of `host` give, per host, its rows by status and by
source, errors, robots.txt denials and outcome; per sitemap, how it was
found, its fetch, type, entries, drops with their reasons, problems,
leniency warnings, vouching hosts, blacklist hit and quality (all the HTML
report shows); and totals by status and discovery source, with freshness
against the sitemap lastmods. What each figure means: docs/commands.md,
report. `Report.lines()` is the text for people, `Report.json_lines()` one
JSON object per host, per sitemap and for the totals (`--jsonl`).

Cost: the two scans; memory: one small record per host and per sitemap.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields

from sitemapcrawl.model.cells import column_names
from sitemapcrawl.model.webpage import (
    HOST_TABLE,
    WEBPAGE_TABLE,
    HostRow,
    WebPage,
)
from sitemapcrawl.modes import AuditList
from sitemapcrawl.safetext import json_text
from sitemapcrawl.scoring import rowcounts
from sitemapcrawl.scoring.evidence import STATUS_PREFIX
from sitemapcrawl.storage.politeness import POLITENESS_KEYS_START
from sitemapcrawl.storage.store import Store
from sitemapcrawl.storage.tables import Unreadable, hosts, scan_pages
from sitemapcrawl.web import urls

log = logging.getLogger(__name__)

#: The fields `add_row` reads.
ROW_FIELDS = list(dict.fromkeys([*rowcounts.TALLY_FIELDS, *rowcounts.SUMMARY_FIELDS]))
_HOST_FIELDS = ["robots_status", "robots_http_code", "robots_error", "crawl_delay", "sitemaps"]


@dataclass
class HostSummary:
    """The counts of one host (by host name, all schemes and ports)."""

    host: str
    rows: int = 0
    by_status: Counter[str] = field(default_factory=Counter)
    sitemaps: int = 0
    in_sitemaps: int = 0
    via_links: int = 0
    errors: int = 0
    robots_denied: int = 0
    blocked_by_site: int = 0
    """Rows a bot challenge or WAF block answered (`blocked-by-site`): we are blocked, the host is not broken."""
    robots: list[str] = field(default_factory=list)
    """`origin: status (HTTP code)[, error]` per origin with a host row."""


@dataclass(frozen=True)
class SitemapSummary:
    """One sitemap row, as parse and fetch left it."""

    url: str
    source: str | None
    status: str | None
    http_code: int | None
    type: str | None
    entries: int | None
    dropped_scope: int | None
    dropped_filter: int | None
    dropped_limit: int | None
    problems: tuple[str, ...]
    blacklisted: str | None
    error: str | None
    warnings: tuple[str, ...] = ()
    """Leniency warnings: rules the sitemap breaks that were forgiven (for its owner to fix)."""
    vouched_by: tuple[str, ...] = ()
    """Hosts that vouch for it, `HOST LEVEL` (see `sitemaps.scope`)."""
    quality: float | None = None
    """The quality score in [0, 1] (None: not scored yet)."""
    state: str | None = None
    """What the quality filter made of it: ok, demoted, blacklisted, trusted, blocked."""
    signals: dict[str, float | None] = field(default_factory=dict)
    """The six quality signals by name (see `sitemapcrawl.scoring.quality`)."""
    notes: tuple[str, ...] = ()
    """Why the quality score is below 1."""


@dataclass
class Totals:
    """Over the whole table."""

    rows: int = 0
    by_status: Counter[str] = field(default_factory=Counter)
    by_discovery: Counter[str] = field(default_factory=Counter)
    freshness: Counter[str] = field(default_factory=Counter)
    unreadable: int = 0


@dataclass
class Report:
    """Everything `report` prints."""

    hosts: dict[str, HostSummary] = field(default_factory=dict)
    sitemaps: list[SitemapSummary] = field(default_factory=list)
    totals: Totals = field(default_factory=Totals)

    def lines(self) -> Iterator[str]:
        """The report for people, one line at a time."""
        totals = self.totals
        yield f"rows {totals.rows}: " + _counts(totals.by_status)
        yield "found via: " + _counts(totals.by_discovery)
        if totals.freshness:
            yield "freshness (pages with a sitemap lastmod): " + _counts(totals.freshness)
        if totals.unreadable:
            yield f"unreadable rows: {totals.unreadable}"
        yield ""
        yield "hosts:"
        for summary in sorted(self.hosts.values(), key=lambda h: (-h.rows, h.host)):
            yield (f"  {summary.host}: rows {summary.rows} ({_counts(summary.by_status)}), sitemaps "
                   f"{summary.sitemaps}, in sitemaps {summary.in_sitemaps}, via links {summary.via_links}, "
                   f"errors {summary.errors}, robots.txt denied {summary.robots_denied}"
                   + (f", blocked by the site's bot defence {summary.blocked_by_site}"
                      if summary.blocked_by_site else ""))
            for robots in summary.robots:
                yield f"    robots.txt {robots}"
        yield ""
        yield "sitemaps:"
        for sitemap in self.sitemaps:
            state = sitemap.status or "-"
            if sitemap.http_code is not None:
                state += f" (HTTP {sitemap.http_code})"
            yield (f"  {sitemap.url}: {sitemap.source or '-'}, {state}, {sitemap.type or 'not parsed'}, "
                   f"entries {_n(sitemap.entries)}, dropped scope {_n(sitemap.dropped_scope)} / filter "
                   f"{_n(sitemap.dropped_filter)} / limit {_n(sitemap.dropped_limit)}")
            if sitemap.blacklisted:
                yield f"    blacklisted: {sitemap.blacklisted}"
            if sitemap.error:
                yield f"    fetch error: {sitemap.error}"
            if sitemap.vouched_by:
                yield f"    vouched for by: {', '.join(sitemap.vouched_by)}"
            for problem in sitemap.problems:
                yield f"    problem: {problem}"
            for warning in sitemap.warnings:
                yield f"    warning (read leniently): {warning}"

    def json_lines(self) -> Iterator[str]:
        """One JSON object per host, per sitemap, then the totals."""
        for summary in sorted(self.hosts.values(), key=lambda h: h.host):
            yield json_text({"kind": "host", **_plain(summary)}, sort_keys=True)
        for sitemap in self.sitemaps:
            yield json_text({"kind": "sitemap", **_plain(sitemap)}, sort_keys=True)
        yield json_text({"kind": "totals", **_plain(self.totals)}, sort_keys=True)


def _plain(value: HostSummary | SitemapSummary | Totals) -> dict[str, object]:
    """A record's fields as JSON-ready values (`asdict` would rebuild a Counter from pairs)."""
    out: dict[str, object] = {}
    for item in fields(value):
        field_value = getattr(value, item.name)
        out[item.name] = dict(field_value) if isinstance(field_value, Counter) else field_value
    return out


def _n(value: int | None) -> str:
    return "-" if value is None else str(value)


def _counts(counter: Counter[str]) -> str:
    return ", ".join(f"{key} {n}" for key, n in sorted(counter.items())) or "none"


def add_counts(report: Report, summary: HostSummary, counts: Mapping[str, int]) -> None:
    """Row counts (`rowcounts.row_tally` of one row, or an origin's sum) into a host's summary and the totals.

    The one place the report's counts are made: `build_report` hands it each
    row's tally, `serve` (`panels`) each origin's counters.
    """
    by_status = rowcounts.named(counts, STATUS_PREFIX)
    rows = counts.get(rowcounts.GROUP, 0)
    summary.rows += rows
    summary.by_status.update(by_status)
    summary.sitemaps += counts.get("sitemaps", 0)
    summary.in_sitemaps += counts.get("in_sitemaps", 0)
    summary.via_links += counts.get("via.link", 0)
    summary.errors += counts.get("errors", 0)
    summary.robots_denied += counts.get("robots_denied", 0)
    summary.blocked_by_site += counts.get(rowcounts.AUDIT_WORDS[AuditList.BLOCKED_BY_SITE], 0)
    totals = report.totals
    totals.rows += rows
    totals.by_status.update(by_status)
    totals.by_discovery.update(rowcounts.named(counts, "via."))
    totals.freshness.update(rowcounts.named(counts, "fresh."))


def add_row(report: Report, row: WebPage) -> None:
    """Count one row (read with `ROW_FIELDS`) into the report: its host, the totals, its sitemap summary."""
    host = urls.host_key(row.url)
    summary = report.hosts.get(host) or report.hosts.setdefault(host, HostSummary(host))
    add_counts(report, summary, rowcounts.row_tally(row).counts)
    if row.is_sitemap:
        report.sitemaps.append(SitemapSummary(**rowcounts.summary_fields(row)))


def robots_line(origin: str, row: HostRow) -> str:
    """`origin: status (HTTP code), crawl delay, sitemaps listed, error` of a host row."""
    status = row.robots_status.value if row.robots_status else "not fetched"
    line = f"{origin}: {status}"
    if row.robots_http_code is not None:
        line += f" (HTTP {row.robots_http_code})"
    if row.crawl_delay is not None:
        line += f", crawl delay {row.crawl_delay:g}s"
    if row.sitemaps:
        line += f", sitemaps listed {len(row.sitemaps)}"
    if row.robots_error:
        line += f", error: {row.robots_error}"
    return line


def build_report(store: Store) -> Report:
    """Read both tables once and summarise them (see the module docstring).

    Rows that cannot be decoded are counted, not fatal. Raises the store's
    errors (StoreUnavailableError, TableMissingError).
    """
    store.require_tables(WEBPAGE_TABLE, HOST_TABLE)
    report = Report()
    unreadable = Unreadable()
    for _key, row in scan_pages(store, "report", unreadable, ROW_FIELDS):
        add_row(report, row)
    # Origin rows only: the politeness rows after them are no hosts.
    scan = store.scan(HOST_TABLE, stop=POLITENESS_KEYS_START, columns=column_names(HostRow, _HOST_FIELDS))
    for _key, host_row in hosts(scan, "report", unreadable, _HOST_FIELDS):
        host = urls.host_key(host_row.origin + "/")
        summary = report.hosts.get(host) or report.hosts.setdefault(host, HostSummary(host))
        summary.robots.append(robots_line(host_row.origin, host_row))
    report.totals.unreadable = unreadable.rows
    return report



def sitemap_outcomes(report: Report) -> Counter[str]:
    """Sitemaps by outcome: parsed (by type), blacklisted, failed (by fetch status), not yet fetched."""
    outcomes: Counter[str] = Counter()
    for sitemap in report.sitemaps:
        if sitemap.blacklisted:
            outcomes["blacklisted"] += 1
        elif sitemap.type:
            outcomes[sitemap.type] += 1
        elif sitemap.problems:
            outcomes["not a sitemap"] += 1
        else:
            outcomes[sitemap.status or "none"] += 1
    return outcomes
