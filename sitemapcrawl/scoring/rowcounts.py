"""Row counts per origin and sitemap summaries: what `serve` shows without scanning `webpage`.

Pure: no I/O; `scoring.count_step` keeps them in the `host` table. A row adds
one `Tally` to its origin (`row_tally`): rows by status and by how they were
found, sitemaps, rows in sitemaps, errors, robots.txt denials, audit lists
(`model.audit`) and, for pages, freshness, changefreq, lastmod month and
whether some page links to it: exactly the report's host and total counts.
They are kept like the quality evidence (`scoring.evidence`), under the one
group `rows`. Each origin also keeps up to `SAMPLE_CAP` URLs per audit list
(`apply_samples`; `SampleChanges` holds a batch's changes in bounded memory),
so the audit panel shows URLs too; `export` gives every one. What cannot be
counted (lastmod ages, due times) is read by `report --html`.

Cost: one tally per row judged; memory bounded by `SAMPLE_CAP` per list.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from sitemapcrawl.model.audit import AUDIT_NAMES, PROBLEM_FIELDS, REASON_FIELDS, audit_lists, discovered_via
from sitemapcrawl.model.webpage import FetchStatus, WebPage
from sitemapcrawl.scoring.evidence import STATUS_WORDS, Tally
from sitemapcrawl.scoring.quality import SIGNAL_FIELDS, stored_signals
from sitemapcrawl.sitemaps.model import ChangeFreq

#: The one group of the row counts (what `evidence.judge` calls the parse).
GROUP = "rows"
#: The fields `row_tally` reads.
TALLY_FIELDS = tuple(dict.fromkeys(("status", "is_sitemap", "seed", "in_sitemap", "lastmod", "fetch_time",
                                     "changefreq", "link_inlinks", "sitemaps_listing", *PROBLEM_FIELDS)))
#: The fields of a row's tally and of why it is on each audit list (`model.audit.reason`): its samples.
AUDIT_FIELDS = tuple(dict.fromkeys((*TALLY_FIELDS, *REASON_FIELDS)))
#: URLs kept per audit list and origin (the panel shows at most this many per list).
SAMPLE_CAP = 50
#: The fields `summary` reads (the report's sitemap line and the quality columns).
SUMMARY_FIELDS = (
    "is_sitemap", "sitemap_source", "status", "http_code", "sitemap_type", "sitemap_entries", "dropped_scope",
    "dropped_filter", "dropped_limit", "sitemap_problems", "blacklisted", "error", "sitemap_warnings",
    "vouched_by", "quality", "quality_state", *SIGNAL_FIELDS, "quality_notes",
)
#: The fetch statuses counted as `errors`.
ERROR_STATUSES = (FetchStatus.RETRY, FetchStatus.GONE)


def row_tally(row: WebPage) -> Tally:
    """What one row adds to its origin's counts. No I/O."""
    counts = {GROUP: 1, STATUS_WORDS[row.status]: 1, _VIA_WORDS[discovered_via(row)]: 1}
    if row.is_sitemap:
        counts["sitemaps"] = 1
    if row.in_sitemap:
        counts["in_sitemaps"] = 1
    if row.status in ERROR_STATUSES:
        counts["errors"] = 1
    if row.status is FetchStatus.BLOCKED_ROBOTS:
        counts["robots_denied"] = 1
    for name in audit_lists(row):
        counts[AUDIT_WORDS[name]] = 1
    if not row.is_sitemap:
        if row.lastmod is not None:
            if row.fetch_time is None:
                counts[_word("fresh.never fetched")] = 1
            else:
                counts["fresh.stale" if row.lastmod > row.fetch_time else "fresh.fresh"] = 1
            counts[f"lm.{row.lastmod.year:04d}-{row.lastmod.month:02d}"] = 1
        counts[_CHANGEFREQ_WORDS[row.changefreq]] = 1
        if row.link_inlinks:
            counts["linked"] = 1
    return Tally(counts)


Samples = dict[str, dict[str, str]]
"""An origin's audit samples: list -> URL -> why it is on the list (`model.audit.reason`)."""
Noted = dict[str, dict[str, tuple[bool, str]]]
"""A batch's audit-list changes of an origin: list -> URL -> (on the list now?, why)."""


def read_samples(cells: Mapping[str, str]) -> Samples:
    """An origin's `n:a.<list>` cells as samples: `URL TAB why` a line (a line without a tab: no reason)."""
    samples: Samples = {}
    for name, text in cells.items():
        listed = samples[name] = {}
        for line in text.split("\n"):
            url, _, why = line.partition("\t")
            if url:
                listed[url] = why
    return samples


def sample_text(listed: Mapping[str, str]) -> str:
    """One list's samples as its cell text (`read_samples`), URLs in order."""
    return "\n".join(f"{url}\t{listed[url]}" if listed[url] else url for url in sorted(listed))


def _one_line(why: str) -> str:
    return " ".join(why.split())


def apply_samples(samples: Samples, changes: Noted) -> Samples:
    """An origin's audit samples after `changes`; only the lists changed.

    First every URL no longer on its list leaves, and a sampled URL still on
    it takes its new reason; then URLs on it join, in URL order, while the
    list has fewer than `SAMPLE_CAP` (kept sorted). So only removals and
    reasons of sampled URLs and the `SAMPLE_CAP` first new URLs matter:
    `SampleChanges` keeps just those. Idempotent, so a rerun writes the same
    lists.
    """
    out: Samples = {}
    for name, urls_now in changes.items():
        kept = dict(samples.get(name, {}))
        before = dict(kept)
        for url, (on, why) in urls_now.items():
            if not on:
                kept.pop(url, None)
            elif url in kept:
                kept[url] = _one_line(why)
        for url in sorted(url for url, (on, _why) in urls_now.items() if on and url not in kept):
            if len(kept) >= SAMPLE_CAP:
                break
            kept[url] = _one_line(urls_now[url][1])
        if kept != before:
            out[name] = kept
    return out


class SampleChanges:
    """One origin's audit-list changes in bounded memory, for `apply_samples`.

    Holds the removals and new reasons of URLs in the stored samples (at most
    `SAMPLE_CAP` per list) and the `SAMPLE_CAP` first new URLs per list (URL
    order): what `apply_samples` can use, whatever the batch's size.
    """

    def __init__(self, stored: Samples) -> None:
        self.stored = stored
        self.changes: Noted = {}

    def note(self, name: str, url: str, on: bool, why: str = "") -> None:
        """URL `url` is (`on`, because `why`) or is no longer on list `name`."""
        sampled = self.stored.get(name, {}).get(url)
        if (sampled is None and not on) or (sampled is not None and on and sampled == _one_line(why)):
            return  # a URL leaving a list it was not sampled on, or a sampled URL on it for the same reason
        listed = self.changes.setdefault(name, {})
        listed[url] = (on, why)
        if on and len(listed) > 4 * SAMPLE_CAP:
            self._prune(listed, self.stored.get(name, {}))

    @staticmethod
    def _prune(listed: dict[str, tuple[bool, str]], sampled: Mapping[str, str]) -> None:
        new = [url for url, (on, _why) in listed.items() if on and url not in sampled]
        keep = set(sorted(new)[:SAMPLE_CAP])
        for url in new:
            if url not in keep:
                del listed[url]


def _word(name: str) -> str:
    """A counter name as one word (`via.sitemap+document`): the stored text is space-separated."""
    return name.replace(" ", "+")


# The counter names of a row's discovery and changefreq, spelled once (row_tally runs per row; the status
# words are the evidence's).
_VIA_WORDS = {via: _word(f"via.{via}") for via in ("sitemap document", "seed", "sitemap", "link")}
_CHANGEFREQ_WORDS: dict[ChangeFreq | None, str] = {None: "cf.none", **{c: f"cf.{c.value}" for c in ChangeFreq}}
#: What the counter of a row on an audit list starts with (`named(counts, AUDIT_PREFIX)`: count by list).
AUDIT_PREFIX = "a."
#: The counter of each audit list (`model.audit.AUDIT_NAMES`): `a.<list>`.
AUDIT_WORDS = {name: f"{AUDIT_PREFIX}{name}" for name in AUDIT_NAMES}


def named(counts: Mapping[str, int], prefix: str) -> dict[str, int]:
    """The counters starting with `prefix`, by the rest of their name (`st.gone` -> `gone`, `+` -> space)."""
    return {name[len(prefix):].replace("+", " "): n for name, n in counts.items() if name.startswith(prefix) and n}


def summary_fields(row: WebPage) -> dict[str, Any]:
    """A sitemap row (read with `SUMMARY_FIELDS`) as the report's `SitemapSummary` fields. No I/O."""
    return {
        "url": row.url, "source": row.sitemap_source.value if row.sitemap_source else None,
        "status": row.status.value if row.status else None, "http_code": row.http_code,
        "type": row.sitemap_type, "entries": row.sitemap_entries, "dropped_scope": row.dropped_scope,
        "dropped_filter": row.dropped_filter, "dropped_limit": row.dropped_limit,
        "problems": tuple(row.sitemap_problems or ()), "blacklisted": row.blacklisted, "error": row.error,
        "warnings": tuple(row.sitemap_warnings or ()), "vouched_by": tuple(row.vouched_by or ()),
        "quality": row.quality, "state": row.quality_state.value if row.quality_state else None,
        "signals": stored_signals(row),
        "notes": tuple(row.quality_notes or ()),
    }


def summary(row: WebPage) -> str:
    """A sitemap row as one JSON object: `summary_fields`, for the origin's host row. No I/O."""
    return json.dumps(summary_fields(row), sort_keys=True, ensure_ascii=False)


def read_summary(text: str) -> dict[str, Any]:
    """Inverse of `summary` (lists back to tuples); ValueError on anything else."""
    value = json.loads(text)
    if not isinstance(value, dict) or "url" not in value:
        raise ValueError("not a sitemap summary")
    for name in ("problems", "warnings", "vouched_by", "notes"):
        value[name] = tuple(value.get(name) or ())
    return value
