"""The panels of the HTML report and of the monitoring page: JSON-ready facts from HBase.

A `Snapshot` is the text report's data (`sitemapcrawl.report.build_report`:
totals, hosts, sitemaps) plus what the pages show beyond it, from one more
scan of a few small columns: each sitemap's quality score, state, signals
and notes; the changefreq and lastmod-age distributions of the pages; when
rows are due (next fetch time). Each panel (`PANELS`) turns a snapshot into
a plain dict, so `report --html` draws it, `serve` draws it live and
`/api/<panel>` hands it to scripts. Nothing here reads the settings, so no
panel can show a configuration value.

Cost: two scans of `webpage` (the report's and this one) and one of `host`;
memory: one small record per host and per sitemap, and a few counters.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sitemapcrawl import urls
from sitemapcrawl.errors import CellDecodeError, InvalidUrlError, UsageError
from sitemapcrawl.report import Report, build_report, sitemap_outcomes
from sitemapcrawl.store import Store
from sitemapcrawl.webpage import WEBPAGE_TABLE, ChangeFreq, QualityState, WebPage, column_names, decode

log = logging.getLogger(__name__)

_EXTRA_FIELDS = [
    "is_sitemap", "changefreq", "lastmod", "next_fetch", "quality", "quality_state", "quality_valid",
    "quality_fetch", "quality_lastmod", "quality_duplicates", "quality_errors", "quality_freshness",
    "quality_notes",
]
SIGNALS = ("valid", "fetch", "lastmod", "duplicates", "errors", "freshness")
#: Age buckets (upper bound, label), for lastmods (age) and next fetch times (wait).
AGE_BUCKETS = ((timedelta(days=1), "< 1 day"), (timedelta(days=7), "< 1 week"), (timedelta(days=30), "< 1 month"),
               (timedelta(days=365), "< 1 year"))
DUE_BUCKETS = ((timedelta(0), "due now"), (timedelta(hours=1), "< 1 hour"), (timedelta(days=1), "< 1 day"),
               (timedelta(days=7), "< 1 week"), (timedelta(days=30), "< 1 month"))
AGE_ORDER = ("future", *(label for _, label in AGE_BUCKETS), "older", "no lastmod")
DUE_ORDER = (*(label for _, label in DUE_BUCKETS), "later", "never")
CHANGEFREQ_ORDER = (*(c.value for c in ChangeFreq), "none")
STATUS_ORDER = ("unfetched", "fetched", "not_modified", "redirect", "gone", "retry", "blocked_robots", "too_large",
                "deferred", "none")


@dataclass(frozen=True)
class SitemapQuality:
    """The quality columns of one sitemap row (None: not scored yet)."""

    score: float | None
    state: str | None
    signals: dict[str, float | None]
    notes: tuple[str, ...]


@dataclass
class Extras:
    """What the pages show beyond the text report."""

    quality: dict[str, SitemapQuality] = field(default_factory=dict)
    changefreq: Counter[str] = field(default_factory=Counter)
    lastmod_age: Counter[str] = field(default_factory=Counter)
    due: Counter[str] = field(default_factory=Counter)


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
    if row.is_sitemap:
        signals = {name: getattr(row, f"quality_{name}") for name in SIGNALS}
        extras.quality[row.url] = SitemapQuality(
            row.quality, row.quality_state.value if row.quality_state else None, signals, row.quality_notes or ())
    else:
        extras.changefreq[row.changefreq.value if row.changefreq else "none"] += 1
        if row.lastmod is None:
            extras.lastmod_age["no lastmod"] += 1
        elif row.lastmod > now:
            extras.lastmod_age["future"] += 1
        else:
            extras.lastmod_age[_bucket(now - row.lastmod, AGE_BUCKETS, "older")] += 1
    if row.next_fetch is None:
        extras.due["never"] += 1
    else:
        extras.due[_bucket(row.next_fetch - now, DUE_BUCKETS, "later")] += 1


def take_snapshot(store: Store, now: datetime) -> Snapshot:
    """Read the tables once for every panel. Raises the store's errors (TableMissingError...)."""
    report = build_report(store)
    extras = Extras()
    for key, cells in store.scan(WEBPAGE_TABLE, columns=column_names(WebPage, _EXTRA_FIELDS)):
        try:
            row = decode(WebPage, urls.url_from_row_key(key.decode("utf-8")), cells)
        except (InvalidUrlError, CellDecodeError, UnicodeDecodeError) as exc:
            log.debug("panels: skipping row %r: %s", key[:200], exc)
            continue
        add_extra(extras, row, now)
    return Snapshot(now, report, extras)


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
        "taken": snapshot.taken.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "rows": report.totals.rows, "hosts": len(report.hosts), "sitemaps": len(report.sitemaps),
        "sitemap_outcomes": dict(sorted(sitemap_outcomes(report).items())),
        "fetched": sum(n for s, n in report.totals.by_status.items() if s in ("fetched", "not_modified")),
        "errors": sum(n for s, n in report.totals.by_status.items() if s in ("gone", "retry")),
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
    """Per host: rows, statuses, errors, robots.txt denials and robots.txt facts (crawl delay)."""
    hosts = sorted(snapshot.report.hosts.values(), key=lambda h: (-h.errors, -h.rows, h.host))
    rows = [{"host": h.host, "rows": h.rows, "by_status": dict(sorted(h.by_status.items())), "sitemaps": h.sitemaps,
             "in_sitemaps": h.in_sitemaps, "via_links": h.via_links, "errors": h.errors,
             "robots_denied": h.robots_denied, "robots": list(h.robots)} for h in hosts]
    return {"count": len(rows), "hosts": rows[:limit] if limit is not None else rows}


def freshness_panel(snapshot: Snapshot) -> dict[str, Any]:
    """Pages' lastmod ages and changefreqs, rows by when they are due, pages fresh or stale."""
    extras = snapshot.extras
    return {
        "lastmod_age": _ordered(extras.lastmod_age, AGE_ORDER),
        "changefreq": _ordered(extras.changefreq, CHANGEFREQ_ORDER),
        "due": _ordered(extras.due, DUE_ORDER),
        "fresh_vs_stale": _ordered(snapshot.report.totals.freshness, ("fresh", "stale", "never fetched")),
    }


#: Panel name -> (title, function of a snapshot and the panel's options).
PANELS: dict[str, tuple[str, Callable[..., dict[str, Any]]]] = {
    "totals": ("Crawl totals", totals_panel),
    "status": ("Rows by status", status_panel),
    "discovery": ("Found via sitemaps or links", discovery_panel),
    "sitemaps": ("Sitemaps and their quality", sitemaps_panel),
    "hosts": ("Hosts: errors and politeness", hosts_panel),
    "freshness": ("Freshness", freshness_panel),
}
#: Query parameters each panel accepts (all optional).
PANEL_OPTIONS: dict[str, tuple[str, ...]] = {"sitemaps": ("limit", "state"), "hosts": ("limit",)}
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
            if not value.isdigit() or not 1 <= int(value) <= MAX_LIMIT:
                raise UsageError(f"limit must be a whole number from 1 to {MAX_LIMIT}, not {value[:40]!r}")
            options["limit"] = int(value)
        elif key == "state":
            try:
                options["state"] = QualityState(value)
            except ValueError:
                choices = ", ".join(s.value for s in QualityState)
                raise UsageError(f"state must be one of {choices}, not {value[:40]!r}") from None
    return options


def panel_data(snapshot: Snapshot, name: str, options: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON-ready dict of one panel; KeyError for an unknown panel name."""
    return PANELS[name][1](snapshot, **(options or {}))
