"""The panels of the HTML report and of the monitoring page: JSON-ready facts from HBase.

A `Snapshot` is the text report's data (`report.text.build_report`) plus
what the pages show beyond it: each sitemap's quality, the changefreq,
lastmod-month and lastmod-age distributions, when rows are due, the audit
lists (`model.audit`, each capped at `AUDIT_CAP` URLs with its total) and
each sitemap's last parses from the `history` table. Each panel (`PANELS`)
turns a snapshot into a plain dict, so `report --html` draws it, `serve`
draws it live and `/api/<panel>` hands it to scripts. Nothing here reads the
settings, so no panel can show a configuration value. `take_counted_snapshot`
(what `serve` reads) builds it from the counters in the `host` table
instead, with no `webpage` row: lastmod ages and due times are then unknown.

Cost: two scans of `webpage` (counted: none), one of `host`, one of the `history`
summaries; memory: a record per host and sitemap, the capped lists, `history_keep` parses.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sitemapcrawl.errors import CellDecodeError, InvalidUrlError, UsageError
from sitemapcrawl.model.audit import TITLES, audit_lists, reason
from sitemapcrawl.model.cells import column_names, decode
from sitemapcrawl.model.codec import format_time
from sitemapcrawl.model.webpage import (
    HISTORY_TABLE,
    HOST_TABLE,
    WEBPAGE_TABLE,
    ChangeFreq,
    FetchStatus,
    HostRow,
    QualityState,
    WebPage,
)
from sitemapcrawl.modes import choices
from sitemapcrawl.report.text import (
    HostSummary,
    Report,
    SitemapSummary,
    add_counts,
    build_report,
    robots_line,
    sitemap_outcomes,
)
from sitemapcrawl.safetext import json_text
from sitemapcrawl.scoring import evidence, rowcounts
from sitemapcrawl.scoring.count_step import COUNTER_FIELDS
from sitemapcrawl.scoring.evidence import Base
from sitemapcrawl.scoring.quality import SIGNAL_FIELDS, stored_signals
from sitemapcrawl.storage.history import SitemapHistory, histories, parse_counts, parse_statuses
from sitemapcrawl.storage.politeness import POLITENESS_KEYS_START
from sitemapcrawl.storage.store import Store
from sitemapcrawl.storage.tables import decode_host
from sitemapcrawl.web import rowkeys, urls

log = logging.getLogger(__name__)

_HOST_FIELDS = ["robots_status", "robots_http_code", "robots_error", "crawl_delay", "sitemaps"]
#: What the panels read of an origin's counters (scoring/count_step.py writes them) and its sitemaps' summaries.
_HOST_COUNT_FIELDS = [*COUNTER_FIELDS, "sitemap_summaries"]
_EXTRA_FIELDS = list(dict.fromkeys([
    "is_sitemap", "changefreq", "lastmod", "next_fetch", "quality", "quality_state", *SIGNAL_FIELDS,
    "quality_notes", *rowcounts.AUDIT_FIELDS]))
#: URLs kept per audit list (the total is counted in full; `export` gives them all).
AUDIT_CAP = rowcounts.SAMPLE_CAP
#: The audit lists (`model.audit`), in the order shown, with their titles and the `export` command that gives
#: all of a list.
AUDIT_LISTS: dict[str, tuple[str, str]] = {
    name.value: (title, f"sitemapcrawl export --audit {name.value}") for name, title in TITLES.items()}
#: Months drawn in the lastmod histogram (the most recent; earlier ones are summed in one bar).
LASTMOD_MONTHS = 60
#: Age buckets (upper bound, label), for lastmods (age) and next fetch times (wait).
AGE_BUCKETS = ((timedelta(days=1), "< 1 day"), (timedelta(days=7), "< 1 week"), (timedelta(days=30), "< 1 month"),
               (timedelta(days=365), "< 1 year"))
DUE_BUCKETS = ((timedelta(0), "due now"), (timedelta(hours=1), "< 1 hour"), (timedelta(days=1), "< 1 day"),
               (timedelta(days=7), "< 1 week"), (timedelta(days=30), "< 1 month"))
AGE_ORDER = ("future", *(label for _, label in AGE_BUCKETS), "older", "no lastmod")
DUE_ORDER = (*(label for _, label in DUE_BUCKETS), "later", "never")
CHANGEFREQ_ORDER = (*(c.value for c in ChangeFreq), "none")
STATUS_ORDER = (*(status.value for status in FetchStatus), "none")


@dataclass(frozen=True)
class SitemapQuality:
    """The quality columns of one sitemap row (None: not scored yet)."""

    score: float | None
    state: str | None
    signals: dict[str, float | None]
    notes: tuple[str, ...]


@dataclass
class AuditList:
    """One audit list: the first `AUDIT_CAP` URLs (key order), why each is on it, and the total."""

    total: int = 0
    urls: list[str] = field(default_factory=list)
    reasons: dict[str, str] = field(default_factory=dict)
    """URL -> why it is on the list (`model.audit.reason`), for the URLs kept (from the rows, or the samples)."""

    def add(self, url: str, why: str = "") -> None:
        """Count a URL, keeping it (and why) while the list has room."""
        self.total += 1
        if len(self.urls) < AUDIT_CAP:
            self.urls.append(url)
            self.reasons[url] = why


@dataclass
class Extras:
    """What the pages show beyond the text report."""

    quality: dict[str, SitemapQuality] = field(default_factory=dict)
    changefreq: Counter[str] = field(default_factory=Counter)
    lastmod_age: Counter[str] = field(default_factory=Counter)
    lastmod_month: Counter[str] = field(default_factory=Counter)
    due: Counter[str] = field(default_factory=Counter)
    audit: dict[str, AuditList] = field(default_factory=lambda: {name: AuditList() for name in AUDIT_LISTS})
    linked_rows: int = 0
    """Rows some crawled page links to: none means no links were followed (not a mixed crawl)."""
    history: list[SitemapHistory] = field(default_factory=list)
    """Each sitemap's recorded parses (the `history` table), oldest first."""
    counted: bool = False
    """Read from the counters updatedb keeps (`serve`), not from a scan of `webpage` (`report --html`):
    the lastmod ages and due times are then not known, the audit lists are the origins' samples."""


@dataclass(frozen=True)
class Snapshot:
    """The report and the extras, read at `taken`."""

    taken: datetime
    report: Report
    extras: Extras


def _bucket(delta: timedelta, buckets: tuple[tuple[timedelta, str], ...], last: str) -> str:
    for bound, label in buckets:
        if delta < bound or (bound == timedelta(0) and delta <= bound):
            return label
    return last


def add_extra(extras: Extras, row: WebPage, now: datetime) -> None:
    """Count one row into the extras: a sitemap's quality, or a page's changefreq and lastmod age; its due time."""
    _audit(extras, row)
    if row.is_sitemap:
        extras.quality[row.url] = SitemapQuality(row.quality, row.quality_state.value if row.quality_state else None,
                                                 stored_signals(row), row.quality_notes or ())
    else:
        extras.changefreq[row.changefreq.value if row.changefreq else "none"] += 1
        if row.lastmod is None:
            extras.lastmod_age["no lastmod"] += 1
        elif row.lastmod > now:
            extras.lastmod_age["future"] += 1
        else:
            extras.lastmod_age[_bucket(now - row.lastmod, AGE_BUCKETS, "older")] += 1
        if row.lastmod is not None:
            extras.lastmod_month[format_time(row.lastmod)[:7]] += 1
    if row.next_fetch is None:
        extras.due["never"] += 1
    else:
        extras.due[_bucket(row.next_fetch - now, DUE_BUCKETS, "later")] += 1


def _audit(extras: Extras, row: WebPage) -> None:
    """Count one row into the audit lists, with why it is on each (see `sitemapcrawl.model.audit`)."""
    if row.link_inlinks and not row.is_sitemap:
        extras.linked_rows += 1
    for name in audit_lists(row):
        extras.audit[name].add(row.url, " ".join(reason(row, name).split()))


def take_snapshot(store: Store, now: datetime) -> Snapshot:
    """Read the tables once for every panel. Raises the store's errors (TableMissingError...).

    The sitemap history comes from a scan of the `history` table's summary
    columns (none when the table is missing: made by an older `init`).
    """
    report = build_report(store)
    extras = Extras()
    if HISTORY_TABLE in store.existing_tables():
        extras.history = list(histories(store))
    for key, cells in store.scan(WEBPAGE_TABLE, columns=column_names(WebPage, _EXTRA_FIELDS)):
        try:
            row = decode(WebPage, rowkeys.url_from_row_key(key.decode("utf-8")), cells)
        except (InvalidUrlError, CellDecodeError, UnicodeDecodeError) as exc:
            log.debug("panels: skipping row %r: %s", key[:200], exc)
            continue
        add_extra(extras, row, now)
    return Snapshot(now, report, extras)


def take_counted_snapshot(store: Store, now: datetime) -> Snapshot:
    """Every panel `serve` can show from the counters: no `webpage` row is read.

    One scan of the `host` table (its origin rows: robots.txt facts, the row
    counts of `scoring.count_step` and the sitemap summaries) and one of the
    `history` summaries. The audit lists show the origins' samples (their
    totals are exact); lastmod ages and due times need a scan of the table:
    that panel says to run `report --html`. Raises the
    store's errors (TableMissingError...).
    """
    store.require_tables(WEBPAGE_TABLE, HOST_TABLE)
    report = Report()
    extras = Extras(counted=True)
    if HISTORY_TABLE in store.existing_tables():
        extras.history = list(histories(store))
    columns = column_names(HostRow, [*_HOST_FIELDS, *_HOST_COUNT_FIELDS])
    summaries: list[tuple[bytes, dict[str, Any]]] = []
    samples: dict[str, list[tuple[bytes, str, str]]] = {name: [] for name in AUDIT_LISTS}
    # Origin rows only: the politeness rows (and `~counters`) after them are no hosts.
    for key, cells in store.scan(HOST_TABLE, stop=POLITENESS_KEYS_START, columns=columns):
        try:
            row = decode_host(key, cells)
            origin = row.origin
            host = urls.host_key(origin + "/")
            base = Base.read(row.counts, rowcounts.GROUP)
            _group, tally = evidence.latest(evidence.evidence(base, row.count_cells or {}), rowcounts.GROUP)
            for text in (row.sitemap_summaries or {}).values():
                value = rowcounts.read_summary(text)
                summaries.append((rowkeys.row_key(value["url"]).encode("utf-8"), value))
            for name, listed in rowcounts.read_samples(row.audit_samples or {}).items():
                if name in samples:
                    found = samples[name]
                    found += [(rowkeys.row_key(u).encode("utf-8"), u, why) for u, why in listed.items()]
                    if len(found) > 2 * AUDIT_CAP:  # the first in key order are shown: memory stays a few caps
                        samples[name] = sorted(found)[:AUDIT_CAP]
        except (InvalidUrlError, CellDecodeError, UnicodeDecodeError, ValueError) as exc:
            log.warning("panels: skipping host row %r: %s", key[:200], exc)
            report.totals.unreadable += 1
            continue
        robots = row.robots_status is not None or row.robots_http_code is not None or row.sitemaps is not None
        if not tally.counts.get(rowcounts.GROUP) and not robots:
            continue
        summary = report.hosts.get(host) or report.hosts.setdefault(host, HostSummary(host))
        if robots:
            summary.robots.append(robots_line(origin, row))
        _add_counts(report, extras, summary, tally.counts)
    for name, found in samples.items():
        shown = sorted(found)[:AUDIT_CAP]
        extras.audit[name].urls = [u for _key, u, _why in shown]
        extras.audit[name].reasons = {u: why for _key, u, why in shown}
    for _key, value in sorted(summaries, key=lambda item: item[0]):
        report.sitemaps.append(SitemapSummary(**value))
        extras.quality[value["url"]] = SitemapQuality(value["quality"], value["state"], value["signals"],
                                                      value["notes"])
    return Snapshot(now, report, extras)


def _add_counts(report: Report, extras: Extras, summary: HostSummary, counts: dict[str, int]) -> None:
    """One origin's row counts into its host's summary, the totals and the extras."""
    add_counts(report, summary, counts)
    extras.changefreq.update(rowcounts.named(counts, "cf."))
    extras.lastmod_month.update(rowcounts.named(counts, "lm."))
    extras.linked_rows += counts.get("linked", 0)
    for name, n in rowcounts.named(counts, rowcounts.AUDIT_PREFIX).items():
        if name in extras.audit:
            extras.audit[name].total += n


_ERROR_WORDS = frozenset(status.value for status in rowcounts.ERROR_STATUSES)
#: What a panel read from the counters says about what it cannot show.
SCAN_NOTE = "needs a scan of the table: run `sitemapcrawl report --html FILE`"


# ------------------------------------------------------------- panels --

def _ordered(counter: Counter[str], order: tuple[str, ...]) -> list[list[Any]]:
    """[label, count] pairs: the known labels in their order (zeros kept), then any others."""
    pairs: list[list[Any]] = [[label, counter.get(label, 0)] for label in order]
    pairs += [[label, n] for label, n in sorted(counter.items()) if label not in order]
    return pairs


def totals_panel(snapshot: Snapshot) -> dict[str, Any]:
    """Crawl totals: rows, hosts, sitemaps by outcome, unreadable rows, when read."""
    report = snapshot.report
    return {
        "taken": format_time(snapshot.taken),
        "source": ("the counters updatedb keeps (no table scan)" if snapshot.extras.counted
                   else "a full scan of the webpage table"),
        "rows": report.totals.rows, "hosts": len(report.hosts), "sitemaps": len(report.sitemaps),
        "sitemap_outcomes": dict(sorted(sitemap_outcomes(report).items())),
        "fetched": sum(n for s, n in report.totals.by_status.items() if s in ("fetched", "not_modified")),
        "errors": sum(n for s, n in report.totals.by_status.items() if s in _ERROR_WORDS),
        "unreadable": report.totals.unreadable,
    }


def status_panel(snapshot: Snapshot) -> dict[str, Any]:
    """Rows by fetch status."""
    return {"by_status": _ordered(snapshot.report.totals.by_status, STATUS_ORDER)}


def discovery_panel(snapshot: Snapshot) -> dict[str, Any]:
    """Rows by how they were found: sitemap, link, seed, sitemap document."""
    return {"by_discovery": _ordered(snapshot.report.totals.by_discovery,
                                     ("sitemap", "link", "seed", "sitemap document"))}


def sitemaps_panel(snapshot: Snapshot, limit: int | None = None, state: QualityState | None = None) -> dict[str, Any]:
    """The sitemaps, worst quality first: type, entries, drops, quality and its signals, errors."""
    rows = []
    for sitemap in snapshot.report.sitemaps:
        quality = snapshot.extras.quality.get(sitemap.url) or SitemapQuality(None, None, {}, ())
        if state is not None and quality.state != state.value:
            continue
        rows.append({
            "url": sitemap.url, "source": sitemap.source, "status": sitemap.status, "http_code": sitemap.http_code,
            "type": sitemap.type, "entries": sitemap.entries, "dropped_scope": sitemap.dropped_scope,
            "dropped_filter": sitemap.dropped_filter, "dropped_limit": sitemap.dropped_limit,
            "quality": quality.score, "state": quality.state, "signals": quality.signals,
            "notes": list(quality.notes), "problems": list(sitemap.problems), "blacklisted": sitemap.blacklisted,
            "error": sitemap.error, "warnings": list(sitemap.warnings),
        })
    rows.sort(key=lambda r: (r["quality"] if r["quality"] is not None else 2.0, r["url"]))
    return {"count": len(rows), "sitemaps": rows[:limit] if limit is not None else rows}


def hosts_panel(snapshot: Snapshot, limit: int | None = None) -> dict[str, Any]:
    """Per host: rows, statuses, errors, robots.txt denials, rows a bot defence blocked, robots.txt facts."""
    hosts = sorted(snapshot.report.hosts.values(), key=lambda h: (-h.errors, -h.rows, h.host))
    rows = [{"host": h.host, "rows": h.rows, "by_status": dict(sorted(h.by_status.items())), "sitemaps": h.sitemaps,
             "in_sitemaps": h.in_sitemaps, "via_links": h.via_links, "errors": h.errors,
             "robots_denied": h.robots_denied, "blocked_by_site": h.blocked_by_site, "robots": list(h.robots)}
            for h in hosts]
    return {"count": len(rows), "hosts": rows[:limit] if limit is not None else rows}


_MONTH = re.compile(r"(?!0000)[0-9]{4}-(?:0[1-9]|1[0-2])")


def lastmod_months(months: Counter[str]) -> list[list[Any]]:
    """[month, pages] for every month from the earliest lastmod to the latest (zeros kept).

    Over LASTMOD_MONTHS months, the earlier ones are summed in one first bar
    `before YYYY-MM`. A label that is not a month of years 0001..9999 (a counter
    cell written by hand, or by a bug) is left out, not a crash.
    """
    months = Counter({label: n for label, n in months.items() if _MONTH.fullmatch(label)})
    if not months:
        return []
    first, last = min(months), max(months)
    year, month = int(first[:4]), int(first[5:7])
    every: list[str] = []
    while True:
        label = f"{year:04d}-{month:02d}"
        every.append(label)
        if label >= last:
            break
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    shown = every[-LASTMOD_MONTHS:]
    pairs: list[list[Any]] = [[label, months.get(label, 0)] for label in shown]
    if len(every) > len(shown):
        pairs.insert(0, [f"before {shown[0]}", sum(n for label, n in months.items() if label < shown[0])])
    return pairs


def audit_panel(snapshot: Snapshot) -> dict[str, Any]:
    """The audit lists (capped, with totals and the export command for all), and whether links were crawled."""
    extras = snapshot.extras
    lists = {name: {"title": title, "total": extras.audit[name].total, "urls": list(extras.audit[name].urls),
                    "reasons": dict(extras.audit[name].reasons), "export": hint}
             for name, (title, hint) in AUDIT_LISTS.items()}
    return {"cap": AUDIT_CAP, "mixed": extras.linked_rows > 0, "lists": lists}


def history_panel(snapshot: Snapshot, limit: int | None = None) -> dict[str, Any]:
    """Per sitemap, its last parses: entries, statuses of its URLs, and changes by kind."""
    sitemaps = []
    for history in snapshot.extras.history:
        parses = [{
            "at": format_time(p.parsed_at) if p.parsed_at else None, "batch": p.batch, "entries": p.entries,
            "first": bool(p.baseline), "statuses": parse_statuses(p.statuses),
            **{kind.value: n for kind, n in parse_counts(p).items()},
        } for p in history.parses]
        sitemaps.append({"url": history.sitemap, "parses": parses})
    return {"count": len(sitemaps), "sitemaps": sitemaps[:limit] if limit is not None else sitemaps}


def freshness_panel(snapshot: Snapshot) -> dict[str, Any]:
    """Pages' lastmod by month and age, changefreqs, rows by when they are due, pages fresh or stale."""
    extras = snapshot.extras
    data: dict[str, Any] = {
        "lastmod_by_month": lastmod_months(extras.lastmod_month),
        "lastmod_age": _ordered(extras.lastmod_age, AGE_ORDER),
        "changefreq": _ordered(extras.changefreq, CHANGEFREQ_ORDER),
        "due": _ordered(extras.due, DUE_ORDER),
        "fresh_vs_stale": _ordered(snapshot.report.totals.freshness, ("fresh", "stale", "never fetched")),
    }
    if extras.counted:
        data.update(lastmod_age=[], due=[], note=f"Lastmod ages and due times {SCAN_NOTE}.")
    return data


#: Panel name -> (title, function of a snapshot and the panel's options).
PANELS: dict[str, tuple[str, Callable[..., dict[str, Any]]]] = {
    "totals": ("Crawl totals", totals_panel),
    "status": ("Rows by status", status_panel),
    "discovery": ("Found via sitemaps or links", discovery_panel),
    "sitemaps": ("Sitemaps and their quality", sitemaps_panel),
    "hosts": ("Hosts: errors and politeness", hosts_panel),
    "freshness": ("Freshness", freshness_panel),
    "audit": ("Sitemap audit: what to fix", audit_panel),
    "history": ("Sitemap history: entries, statuses and changes per crawl", history_panel),
}
#: Query parameters each panel accepts (all optional).
PANEL_OPTIONS: dict[str, tuple[str, ...]] = {
    "sitemaps": ("limit", "state"), "hosts": ("limit",), "history": ("limit",),
}
MAX_LIMIT = 100_000


def panel_options(name: str, query: dict[str, list[str]]) -> dict[str, Any]:
    """The typed options of panel `name` from a URL query; UsageError with a message for a bad one."""
    allowed = PANEL_OPTIONS.get(name, ())
    options: dict[str, Any] = {}
    for key, values in query.items():
        if key not in allowed:
            known = ", ".join(allowed) or "none"
            raise UsageError(f"unknown parameter {key!r} for panel {name!r} (known: {known})")
        if len(values) != 1:
            raise UsageError(f"parameter {key!r} given {len(values)} times")
        value = values[0]
        if key == "limit":
            # ASCII digits only, and few: int() refuses over 4,300 digits and str.isdigit takes "²".
            if not (value.isascii() and value.isdigit() and len(value) <= 6) or not 1 <= int(value) <= MAX_LIMIT:
                raise UsageError(f"limit must be a whole number from 1 to {MAX_LIMIT}, not {value[:40]!r}")
            options["limit"] = int(value)
        elif key == "state":
            try:
                options["state"] = QualityState(value)
            except ValueError:
                raise UsageError(f"state must be one of {choices(QualityState)}, not {value[:40]!r}") from None
    return options


def json_lines(snapshot: Snapshot) -> Iterator[str]:
    """`report --jsonl`: the report's host and sitemap records, then what the HTML page adds (one
    `audit` record: the capped lists with totals; one `lastmod_by_month` record; one
    `sitemap_history` record per sitemap), then the totals record, last as before."""
    records = list(snapshot.report.json_lines())
    yield from records[:-1]
    yield json_text({"kind": "audit", **audit_panel(snapshot)}, sort_keys=True)
    yield json_text({"kind": "lastmod_by_month", "months": lastmod_months(snapshot.extras.lastmod_month)})
    for sitemap in history_panel(snapshot)["sitemaps"]:
        yield json_text({"kind": "sitemap_history", **sitemap}, sort_keys=True)
    yield records[-1]


def panel_data(snapshot: Snapshot, name: str, options: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON-ready dict of one panel; KeyError for an unknown panel name."""
    return PANELS[name][1](snapshot, **(options or {}))
