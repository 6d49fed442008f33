"""How far a sitemap can be trusted: its six signals, its score in [0, 1], and what follows.

Pure: facts in, numbers out; no I/O. `scoring.quality_step` gathers the facts
at updatedb and writes what `assess` returns beside the sitemap. Each signal
(valid, fetch, lastmod, duplicates, errors, freshness) is in [0, 1], 1 good,
and "no evidence yet" counts as 1, so a sitemap is never punished before it
is known. The fetch signal waits for `FETCH_EVIDENCE` judged entries, then
takes the upper end of the Wilson interval (`wilson_upper`): the filter
punishes, so it gives the benefit of the doubt. The score multiplies
`1 - w * (1 - s)` over the signals, so one bad signal is not hidden by good
ones; under `demote_below` a sitemap is demoted, under `blacklist_below`
blacklisted, and a pin in the settings wins over both.

The formulas, weights, thresholds and the weighted priority: docs/quality.md.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any

from sitemapcrawl.model.lastmod import LASTMOD_SLACK, UNIFORM_MIN
from sitemapcrawl.model.webpage import FetchStatus, QualityState, WebPage
from sitemapcrawl.sitemaps.model import ProblemKind, read_problem_lines

#: Judged entries the fetch signal needs before it counts (or all, when a sitemap lists fewer).
FETCH_EVIDENCE = 20
#: z of the Wilson bound on the fetch share (1: one standard error, about 84 % one-sided).
WILSON_Z = 1.0
#: Start of every blacklist reason this module writes (so it may also clear it).
QUALITY_REASON = "quality "
PINNED_REASON = "pinned blocked"



@dataclass(frozen=True)
class QualityPolicy:
    """Thresholds of the filter and the staleness limit."""

    demote_below: float = 0.7
    blacklist_below: float = 0.2
    demote_factor: float = 0.5
    stale_days: int = 365


@dataclass(frozen=True)
class SitemapFacts:
    """What the sitemap's own row says (None: not known)."""

    url: str
    status: FetchStatus | None = None
    truncated: bool = False
    kind: str | None = None
    """urlset, index, text, rss, atom; None when never read as a sitemap."""
    parsed: bool = False
    """parse has read (or tried to read) its body at least once."""
    entries: int = 0
    dropped_scope: int = 0
    dropped_limit: int = 0
    problems: Mapping[ProblemKind, int] = field(default_factory=dict)
    """Parse problems by kind (`sitemap_facts`): never their messages, which may be reworded."""
    lastmod: datetime | None = None
    blacklisted: str | None = None


@dataclass(slots=True)
class ListedStats:
    """What the rows a sitemap lists say about it: `evidence.Tally.stats` of their contributions."""

    listed: int = 0
    ok: int = 0
    gone: int = 0
    redirected: int = 0
    robots: int = 0
    dated: int = 0
    future: int = 0
    stale: int = 0
    phantom: int = 0
    first_lastmod: datetime | None = None
    lastmods_differ: bool = False
    newest: datetime | None = None

    @property
    def judged(self) -> int:
        """Listed URLs whose fetch outcome says something about the sitemap."""
        return self.ok + self.gone + self.redirected + self.robots

    @property
    def bad_dates(self) -> int:
        """Entries whose lastmod failed a test."""
        return self.future + self.stale + self.phantom


def _signal(weight: float) -> float:
    """A signal field: 1 (good) by default, with the most it can take away from the score."""
    return field(default=1.0, metadata={"weight": weight})


@dataclass(frozen=True)
class Signals:
    """The six signals, each in [0, 1] (1 = good): the one place their names and weights are written."""

    valid: float = _signal(0.8)
    fetch: float = _signal(1.0)
    lastmod: float = _signal(0.6)
    duplicates: float = _signal(0.3)
    errors: float = _signal(0.8)
    freshness: float = _signal(0.3)

    def score(self) -> float:
        """The product of `1 - w * (1 - s)` over the signals, rounded to 3 places."""
        total = 1.0
        for name, weight in WEIGHTS.items():
            total *= 1.0 - weight * (1.0 - getattr(self, name))
        return round(min(1.0, max(0.0, total)), 3)


#: The signal names, in the order reports show them (the row's columns are `quality_<name>`).
SIGNALS: tuple[str, ...] = tuple(item.name for item in fields(Signals))
#: Most each signal can take away from the score, heaviest first: the order the product is taken in
#: (a float product depends on its order; this one has been the score's since it was written).
WEIGHTS: dict[str, float] = {item.name: item.metadata["weight"]
                             for item in sorted(fields(Signals), key=lambda item: -item.metadata["weight"])}
#: The `WebPage` fields that hold the signals of a scored sitemap, in `SIGNALS` order.
SIGNAL_FIELDS: tuple[str, ...] = tuple(f"quality_{name}" for name in SIGNALS)


def stored_signals(row: WebPage) -> dict[str, float | None]:
    """The signals a sitemap row holds (read with `SIGNAL_FIELDS`), by name; None: not scored yet."""
    return {name: getattr(row, column) for name, column in zip(SIGNALS, SIGNAL_FIELDS, strict=True)}


def signal_values(signals: Signals) -> dict[str, Any]:
    """The signals as `WebPage` field values (`SIGNAL_FIELDS`), for the verdict's put."""
    return {column: getattr(signals, name) for name, column in zip(SIGNALS, SIGNAL_FIELDS, strict=True)}


@dataclass(frozen=True)
class Assessment:
    """A sitemap's verdict: score, signals, notes, state, blacklist reason and weight."""

    score: float
    signals: Signals
    state: QualityState
    weight: float
    """What a listed URL's priority is multiplied by."""
    notes: tuple[str, ...] = ()
    reason: str | None = None
    """The blacklist reason this module wants on the row (None: none of ours)."""


#: The note of each limit that cut a document (`{n}`: its count).
_CUT_NOTES = {ProblemKind.URL_LIMIT: "URL limit, {n:,} entries not kept",
              ProblemKind.BYTE_LIMIT: "byte limit, reading stopped"}
#: How the previous version's problem messages read, for `legacy_problem_counts` only.
_LEGACY_INVALID = (
    (ProblemKind.INVALID_URL, re.compile(r"([\d,]+) entries without a usable http\(s\) URL skipped")),
    (ProblemKind.UNCANONICAL_URL, re.compile(r"([\d,]+) entries with a URL that cannot be canonicalised")),
)
_LEGACY_STARTS = ((ProblemKind.NOT_A_SITEMAP, "not read as a sitemap"), (ProblemKind.URL_LIMIT, "URL limit:"),
                  (ProblemKind.BYTE_LIMIT, "byte limit:"))
_LEGACY_OVER = re.compile(r"([\d,]+) more not kept")
_LEGACY_BROKEN = ("XML unreadable", "XML not well-formed", "cut off", "broken", "unreadable")


def legacy_problem_counts(messages: Iterable[str]) -> dict[ProblemKind, int]:
    """The problem kinds of a sitemap parsed by a version that stored only messages (no `problem_kinds`).

    Read as that version's score read them, so its scores stay as they
    were: the entries counted by its invalid-URL lines, a message starting
    `not read as a sitemap`, `URL limit:` or `byte limit:`, and a message
    holding a word of a broken document. Only for such old rows: a row
    parsed since carries its kinds, and its messages are never read.
    """
    counts: dict[ProblemKind, int] = {}

    def add(kind: ProblemKind, n: int) -> None:
        counts[kind] = counts.get(kind, 0) + n

    for message in messages:
        for kind, pattern in _LEGACY_INVALID:
            found = pattern.search(message)
            if found:
                add(kind, int(found.group(1).replace(",", "")))
        for kind, start in _LEGACY_STARTS:
            if message.startswith(start):
                over = _LEGACY_OVER.search(message) if kind is ProblemKind.URL_LIMIT else None
                add(kind, int(over.group(1).replace(",", "")) if over else 1)
        if any(word in message for word in _LEGACY_BROKEN):
            add(ProblemKind.BROKEN, 1)
    return counts


def sitemap_facts(row: WebPage) -> SitemapFacts:
    """What a sitemap row (read with its quality fields) tells `assess`. No I/O.

    Its parse problems by kind (`problem_kinds`); a row parsed by a version
    that stored only the messages (no `problem_kinds` cell) is read as that
    version scored it (`legacy_problem_counts`) until it is parsed again.
    """
    if row.problem_kinds is not None:
        problems = read_problem_lines(row.problem_kinds)
    else:
        problems = legacy_problem_counts(row.sitemap_problems or ())
    return SitemapFacts(
        row.url, status=row.status, truncated=bool(row.truncated), kind=row.sitemap_type,
        parsed=row.parse_time is not None, entries=row.sitemap_entries or 0, dropped_scope=row.dropped_scope or 0,
        dropped_limit=row.dropped_limit or 0, problems=problems, lastmod=row.lastmod, blacklisted=row.blacklisted)


def _share(good: int, seen: int) -> float:
    return (good + 1) / (seen + 1)


def wilson_upper(good: int, seen: int, z: float = WILSON_Z) -> float:
    """The upper bound of the Wilson score interval of the share `good / seen` (1 when nothing was seen)."""
    if seen <= 0:
        return 1.0
    p = good / seen
    z2 = z * z
    centre = p + z2 / (2 * seen)
    spread = z * math.sqrt(p * (1 - p) / seen + z2 / (4 * seen * seen))
    return min(1.0, (centre + spread) / (1 + z2 / seen))


def fetch_signal(listed: ListedStats, entries: int) -> tuple[float, str | None]:
    """The fetch signal and its note: 1 until enough entries were judged, then the Wilson upper bound.

    `entries`: how many entries the sitemap lists (the larger of what parse
    kept and the listed rows counted), so a sitemap of 5 is judged on all 5.
    """
    needed = max(1, min(FETCH_EVIDENCE, max(entries, listed.listed)))
    failed = listed.judged - listed.ok
    if listed.judged < needed:
        if not failed:
            return 1.0, None
        return 1.0, (f"{failed} of {listed.judged} fetched entries failed; not counted before "
                     f"{needed} are judged")
    signal = wilson_upper(listed.ok, listed.judged)
    if not failed:
        return signal, None
    return signal, (f"{failed} of {listed.judged} fetched entries failed "
                    f"(gone {listed.gone}, redirected {listed.redirected}, robots {listed.robots})")


def _errors(facts: SitemapFacts) -> tuple[float, str | None]:
    if facts.status in (FetchStatus.GONE, FetchStatus.TOO_LARGE):
        return 0.0, f"the sitemap itself is {facts.status.value}"
    problems = facts.problems
    if facts.parsed and (facts.kind is None or problems.get(ProblemKind.NOT_A_SITEMAP)):
        return 0.0, "not readable as a sitemap"
    cuts = [note.format(n=problems[kind]) for kind, note in _CUT_NOTES.items() if problems.get(kind)]
    if cuts or facts.dropped_limit > 0 or facts.truncated:
        return 0.5, "over a limit: " + ("; ".join(cuts) if cuts else "body truncated at the size cap")
    if problems.get(ProblemKind.BROKEN):
        return 0.5, f"read with errors: the document broke part-way ({problems[ProblemKind.BROKEN]} time(s))"
    return 1.0, None


def signals_of(facts: SitemapFacts, listed: ListedStats, policy: QualityPolicy,
               now: datetime) -> tuple[Signals, tuple[str, ...]]:
    """The six signals of one sitemap and a note for each that is not perfect. No I/O."""
    notes: list[str] = []
    invalid = facts.problems.get(ProblemKind.INVALID_URL, 0) + facts.problems.get(ProblemKind.UNCANONICAL_URL, 0)
    seen = facts.entries + facts.dropped_scope + invalid
    valid = _share(facts.entries, seen)
    if facts.dropped_scope or invalid:
        notes.append(f"{facts.dropped_scope + invalid} of {seen} entries out of scope or invalid")
    fetch, fetch_note = fetch_signal(listed, facts.entries)
    if fetch_note:
        notes.append(fetch_note)
    lastmod = _share(listed.dated - listed.bad_dates, listed.dated)
    if listed.bad_dates:
        notes.append(f"{listed.bad_dates} of {listed.dated} lastmods wrong (future {listed.future}, "
                     f"older than a change {listed.stale}, newer without a change {listed.phantom})")
    if listed.dated >= UNIFORM_MIN and not listed.lastmods_differ and listed.first_lastmod is not None:
        lastmod = 0.0
        notes.append(f"all {listed.dated} entries share one lastmod")
    duplicates_found = max(0, facts.entries - listed.listed) if facts.parsed and listed.listed else 0
    duplicates = _share(facts.entries - duplicates_found, facts.entries)
    if duplicates_found:
        notes.append(f"{duplicates_found} of {facts.entries} entries duplicate")
    errors, why = _errors(facts)
    if why:
        notes.append(why)
    newest = max((d for d in (facts.lastmod, listed.newest) if d is not None and d <= now + LASTMOD_SLACK),
                 default=None)
    freshness = 1.0
    if newest is not None:
        age = max(0.0, (now - newest).total_seconds() / 86400)
        if age > policy.stale_days:
            freshness = policy.stale_days / age
            notes.append(f"newest date {age:.0f} days old")
    return Signals(round(valid, 3), round(fetch, 3), round(lastmod, 3), round(duplicates, 3), errors,
                   round(freshness, 3)), tuple(notes)


@dataclass(frozen=True)
class Pins:
    """Sitemaps a person pinned in the settings: canonical URLs trusted or blocked."""

    trusted: frozenset[str] = field(default_factory=frozenset)
    blocked: frozenset[str] = field(default_factory=frozenset)


def assess(facts: SitemapFacts, listed: ListedStats, policy: QualityPolicy, pins: Pins,
           now: datetime) -> Assessment:
    """Score a sitemap and decide what follows (see the module docstring). No I/O.

    A blacklist reason not written by this module (the blacklist file) is
    left alone and makes the sitemap blacklisted whatever its score.
    """
    signals, notes = signals_of(facts, listed, policy, now)
    score = signals.score()
    if facts.url in pins.blocked:
        return Assessment(score, signals, QualityState.BLOCKED, 0.0, notes,
                          f"{PINNED_REASON} in the settings (sitemap_blocked)")
    foreign = facts.blacklisted is not None and not is_quality_reason(facts.blacklisted)
    if foreign:
        return Assessment(score, signals, QualityState.BLACKLISTED, 0.0, notes, None)
    if facts.url in pins.trusted:
        return Assessment(score, signals, QualityState.TRUSTED, 1.0, notes, None)
    if score < policy.blacklist_below:
        worst = notes[0] if notes else "low score"
        reason = f"{QUALITY_REASON}{score:.3f} < {policy.blacklist_below:g}: {worst}"
        return Assessment(score, signals, QualityState.BLACKLISTED, 0.0, notes, reason)
    if score < policy.demote_below:
        return Assessment(score, signals, QualityState.DEMOTED, round(score * policy.demote_factor, 3), notes)
    return Assessment(score, signals, QualityState.OK, score, notes)


def weight_of(state: QualityState | None, score: float | None, policy: QualityPolicy) -> float:
    """The weight `assess` gives a sitemap in `state` with `score` (1 when never scored). No I/O."""
    if state is None or state is QualityState.TRUSTED:
        return 1.0
    if state in (QualityState.BLACKLISTED, QualityState.BLOCKED):
        return 0.0
    if score is None:
        return 1.0
    return round(score * policy.demote_factor, 3) if state is QualityState.DEMOTED else score


def is_quality_reason(reason: str) -> bool:
    """Was this blacklist reason written by the quality filter (so it may clear it)?"""
    return reason.startswith((QUALITY_REASON, PINNED_REASON))


def weighted_priority(listings: list[tuple[float | None, float]]) -> float:
    """A URL's sitemap priority weighted by quality: the best `priority x weight` over its sitemaps.

    `listings` holds (priority or None, weight) per sitemap listing the URL;
    a missing priority counts as the protocol's default, 0.5. No I/O.
    """
    return round(max(((0.5 if pr is None else pr) * weight for pr, weight in listings), default=0.0), 4)
