"""Sitemap quality: each signal alone, the score, the filter with its pins, the weighted priority."""

from __future__ import annotations

import dataclasses
import gzip
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sitemapcrawl.model.rank import rank
from sitemapcrawl.model.webpage import FetchStatus, QualityState, WebPage
from sitemapcrawl.scoring.evidence import Tally, contribution
from sitemapcrawl.scoring.quality import (
    FETCH_EVIDENCE,
    UNIFORM_MIN,
    WEIGHTS,
    ListedStats,
    Pins,
    QualityPolicy,
    Signals,
    SitemapFacts,
    assess,
    is_quality_reason,
    legacy_problem_counts,
    signals_of,
    weighted_priority,
    wilson_upper,
)
from sitemapcrawl.scoring.quality_step import sitemap_facts
from sitemapcrawl.sitemaps import parse_sitemap
from sitemapcrawl.sitemaps.limits import SitemapLimits
from sitemapcrawl.sitemaps.model import ProblemKind, problem_counts, problem_lines, read_problem_lines

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
DAY = timedelta(days=1)
URL = "http://q.test/sitemap.xml"
POLICY = QualityPolicy()


def facts(**fields: object) -> SitemapFacts:
    values: dict[str, object] = {"kind": "urlset", "parsed": True, "entries": 10}
    values.update(fields)
    return SitemapFacts(URL, **values)  # type: ignore[arg-type]


def listed(*rows: tuple[datetime | None, FetchStatus | None], fetch_time: datetime | None = None,
           prev: datetime | None = None, changed: datetime | None = None) -> ListedStats:
    summed = Tally()
    for lastmod, status in rows:
        summed.add(contribution(lastmod, status, fetch_time, prev, changed, NOW))
    return summed.stats()


def signal(name: str, the_facts: SitemapFacts, stats: ListedStats) -> float:
    return float(getattr(signals_of(the_facts, stats, POLICY, NOW)[0], name))


# ------------------------------------------------------------ signals --

def test_a_sitemap_with_no_evidence_is_perfect() -> None:
    found, notes = signals_of(SitemapFacts(URL), ListedStats(), POLICY, NOW)
    assert found == Signals() and found.score() == 1.0 and notes == ()


def test_valid_share_counts_scope_drops_and_invalid_entries() -> None:
    clean = facts(entries=10)
    assert signal("valid", clean, ListedStats()) == 1.0
    dirty = facts(entries=10, dropped_scope=5, problems={ProblemKind.INVALID_URL: 5})
    assert signal("valid", dirty, ListedStats()) == round(11 / 21, 3)


def test_the_engine_counts_invalid_entries_by_kind() -> None:
    body = (b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            b"<url><loc>ftp://q.test/a</loc></url><url><loc>nothing</loc></url>"
            b"<url><loc>http://q.test/ok</loc></url></urlset>")
    document = parse_sitemap(body, URL)
    list(document)
    assert dict(document.report.problem_counts) == {ProblemKind.INVALID_URL: 2} and document.report.invalid == 2


def test_a_row_of_the_previous_version_is_scored_from_its_messages_as_it_was() -> None:
    """A sitemap parsed before the kinds were stored (no `problem_kinds` cell) keeps its score."""
    assert legacy_problem_counts((
        "1,234 entries with a URL that cannot be canonicalised", "5 entries without a usable http(s) URL skipped",
        "URL limit: kept the first 10 entries, 7 more not kept (max_urls=10)",
        "byte limit: stopped reading at 10 uncompressed bytes (max_bytes=10); entries before it kept",
        "a.xml: XML not well-formed (1 error(s); first at line 3: boom)", "not read as a sitemap: HTML page",
        "no entries")) == {
        ProblemKind.UNCANONICAL_URL: 1234, ProblemKind.INVALID_URL: 5, ProblemKind.URL_LIMIT: 7,
        ProblemKind.BYTE_LIMIT: 1, ProblemKind.BROKEN: 1, ProblemKind.NOT_A_SITEMAP: 1}
    old = WebPage(URL, is_sitemap=True, sitemap_type="urlset", parse_time=NOW, sitemap_entries=10,
                  sitemap_problems=("x.xml: XML unreadable: boom",))
    assert sitemap_facts(old).problems == {ProblemKind.BROKEN: 1}
    assert signal("errors", sitemap_facts(old), ListedStats()) == 0.5
    # parsed since: the kinds alone count, whatever the messages say
    new = dataclasses.replace(old, problem_kinds=())
    assert sitemap_facts(new).problems == {} and signal("errors", sitemap_facts(new), ListedStats()) == 1.0


#: Documents that meet every kind of problem the score reads, and some it does not.
PROBLEM_BODIES = {
    "broken XML": b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>http://q.test/a</loc>'
                  b"</url><url><loc>http://q.test/b</loc></url><url><loc>http://q.test/c",
    "cut gzip": gzip.compress(b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">' + b"".join(
        f"<url><loc>http://q.test/{n * 7919 % 100_003}</loc></url>".encode() for n in range(3000)))[:6000],
    "over the URL limit": b"\n".join(f"http://q.test/{n}".encode() for n in range(30)),
    "over the byte limit": b"\n".join(f"http://q.test/{n:05d}".encode() for n in range(400)),
    "invalid and out of scope": b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
                                b"<url><loc>ftp://q.test/a</loc></url><url><loc>http://other.test/b</loc></url>"
                                b"<url><loc>http://q.test/ok</loc></url></urlset>",
    "odd namespace": b'<urlset xmlns="http://example.com/odd"><url><loc>http://q.test/a</loc></url></urlset>',
    "nothing": b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"></urlset>',
}


def parsed_row(name: str) -> WebPage:
    """The sitemap row as `parse` writes it for a body of `PROBLEM_BODIES` (engine problems only)."""
    limits = SitemapLimits(max_urls=20, max_bytes=4000) if name.startswith("over") else SitemapLimits()
    document = parse_sitemap(PROBLEM_BODIES[name], URL, limits=limits)
    kept = sum(1 for _ in document)
    report = document.report
    return WebPage(URL, is_sitemap=True, status=FetchStatus.FETCHED, sitemap_type=document.kind.value,
                   parse_time=NOW, sitemap_entries=kept, dropped_scope=report.dropped_scope,
                   dropped_limit=report.over_limit, sitemap_problems=report.problems,
                   problem_kinds=problem_lines(report.problem_counts))


@pytest.mark.parametrize("name", list(PROBLEM_BODIES))
def test_rewording_every_problem_message_changes_no_score(name: str) -> None:
    row = parsed_row(name)
    assert row.sitemap_problems  # each body meets a problem
    reworded = dataclasses.replace(row, sitemap_problems=tuple(
        f"reworded {n}: " + " ".join(reversed(message.split())) for n, message in enumerate(row.sitemap_problems)))
    stats = listed((NOW - DAY, FetchStatus.FETCHED))
    assert sitemap_facts(reworded) == sitemap_facts(row)
    assert assess(sitemap_facts(reworded), stats, POLICY, Pins(), NOW) == assess(
        sitemap_facts(row), stats, POLICY, Pins(), NOW)
    # what the score reads of the problems: kinds and counts, no text a message could reach
    assert all(type(kind) is ProblemKind and type(n) is int for kind, n in sitemap_facts(row).problems.items())


def test_each_problem_the_score_reads_is_counted_by_kind() -> None:
    kinds = {name: sitemap_facts(parsed_row(name)).problems for name in PROBLEM_BODIES}
    assert kinds["broken XML"].get(ProblemKind.BROKEN) and kinds["cut gzip"].get(ProblemKind.BROKEN)
    assert kinds["over the URL limit"] == {ProblemKind.URL_LIMIT: 10}
    assert kinds["over the byte limit"].get(ProblemKind.BYTE_LIMIT) == 1
    assert kinds["invalid and out of scope"] == {ProblemKind.INVALID_URL: 1, ProblemKind.OUT_OF_SCOPE_HOST: 1}
    assert kinds["odd namespace"] == {ProblemKind.ODD_NAMESPACE: 1}
    assert kinds["nothing"] == {ProblemKind.NO_ENTRIES: 1}
    assert read_problem_lines(problem_lines(problem_counts(kinds["invalid and out of scope"]))) == kinds[
        "invalid and out of scope"]
    assert read_problem_lines(["from-a-newer-version=3", "broken=x", "broken=2"]) == {ProblemKind.BROKEN: 2}


def test_fetch_share_judges_only_fetched_urls() -> None:
    ok = listed(*[(None, FetchStatus.FETCHED)] * 4, (None, FetchStatus.NOT_MODIFIED))
    assert signal("fetch", facts(), ok) == 1.0
    waiting = listed(*[(None, s) for s in (FetchStatus.UNFETCHED, FetchStatus.RETRY, FetchStatus.DEFERRED, None)])
    assert waiting.judged == 0 and signal("fetch", facts(), waiting) == 1.0
    bad = listed((None, FetchStatus.FETCHED), (None, FetchStatus.GONE), (None, FetchStatus.REDIRECT),
                 (None, FetchStatus.BLOCKED_ROBOTS))
    assert (bad.ok, bad.gone, bad.redirected, bad.robots) == (1, 1, 1, 1)
    # all four entries judged: the Wilson upper bound of 1 ok in 4 (issue 10 replaced the raw share)
    assert signal("fetch", facts(entries=4), bad) == 0.5
    # four judged of ten listed: not enough evidence yet
    assert signal("fetch", facts(), bad) == 1.0


def test_the_wilson_upper_bound_pins_known_values() -> None:
    assert wilson_upper(0, 0) == 1.0 and wilson_upper(5, 5) == 1.0
    assert wilson_upper(0, 20) == pytest.approx(1 / 21)
    assert wilson_upper(0, 1) == pytest.approx(0.5)
    assert wilson_upper(15, 20) == pytest.approx(0.8333, abs=1e-4)
    assert wilson_upper(1, 4) == pytest.approx(0.5)
    # z = 1.96 (95 %) is wider: 0 of 20 still leaves about 0.16
    assert wilson_upper(0, 20, z=1.96) == pytest.approx(1.96**2 / (20 + 1.96**2))


def test_a_big_sitemap_needs_evidence_before_the_fetch_signal_acts() -> None:
    big = facts(entries=50_000)
    four = listed(*[(None, FetchStatus.GONE)] * 4)
    verdict = assess(big, four, POLICY, Pins(), NOW)
    assert verdict.signals.fetch == 1.0 and verdict.state is QualityState.OK
    assert any("not counted before 20 are judged" in note for note in verdict.notes)
    nineteen = listed(*[(None, FetchStatus.GONE)] * (FETCH_EVIDENCE - 1))
    assert assess(big, nineteen, POLICY, Pins(), NOW).state is QualityState.OK
    twenty = listed(*[(None, FetchStatus.GONE)] * FETCH_EVIDENCE)
    verdict = assess(big, twenty, POLICY, Pins(), NOW)
    assert verdict.signals.fetch == pytest.approx(1 / 21, abs=0.001)
    assert verdict.state is QualityState.BLACKLISTED and "20 of 20 fetched entries failed" in (verdict.reason or "")
    # a mixed sample: 15 of 20 ok is demoted at most, never blacklisted on the raw 75 %
    mixed = listed(*[(None, FetchStatus.FETCHED)] * 15, *[(None, FetchStatus.GONE)] * 5)
    assert assess(big, mixed, POLICY, Pins(), NOW).signals.fetch == pytest.approx(0.833, abs=0.001)


def test_a_small_sitemap_is_judged_on_all_its_entries() -> None:
    three = facts(entries=3)
    two = listed((None, FetchStatus.GONE), (None, FetchStatus.GONE))
    assert signal("fetch", three, two) == 1.0  # one entry still unjudged
    all_three = listed(*[(None, FetchStatus.GONE)] * 3)
    assert signal("fetch", three, all_three) == pytest.approx(wilson_upper(0, 3), abs=0.001)


def test_all_404_sitemap_falls_under_the_blacklist_threshold() -> None:
    stats = listed(*[(None, FetchStatus.GONE)] * 8)
    verdict = assess(facts(entries=8), stats, POLICY, Pins(), NOW)
    assert verdict.score < POLICY.blacklist_below and verdict.state is QualityState.BLACKLISTED
    assert verdict.weight == 0.0 and verdict.reason is not None and is_quality_reason(verdict.reason)
    assert "8 of 8 fetched entries failed" in verdict.reason


def test_one_failure_alone_does_not_sink_a_sitemap() -> None:
    verdict = assess(facts(entries=1), listed((None, FetchStatus.GONE)), POLICY, Pins(), NOW)
    assert verdict.state is not QualityState.BLACKLISTED


def test_future_lastmods_are_wrong() -> None:
    stats = listed((NOW + 3 * DAY, None), (NOW - 3 * DAY, None), (NOW + 2 * DAY, None))
    assert stats.future == 2 and signal("lastmod", facts(), stats) == round(2 / 4, 3)
    tolerated = listed((NOW + DAY / 2, None))
    assert tolerated.future == 0


def test_one_lastmod_for_every_entry_says_nothing() -> None:
    same = NOW - 10 * DAY
    uniform = listed(*[(same, FetchStatus.FETCHED)] * UNIFORM_MIN)
    assert signal("lastmod", facts(), uniform) == 0.0
    too_few = listed(*[(same, FetchStatus.FETCHED)] * (UNIFORM_MIN - 1))
    assert signal("lastmod", facts(), too_few) == 1.0
    varied = listed(*[(same - i * DAY, FetchStatus.FETCHED) for i in range(UNIFORM_MIN)])
    assert signal("lastmod", facts(), varied) == 1.0


def test_lastmod_older_than_an_observed_change_is_stale() -> None:
    fetched, before = NOW - DAY, NOW - 10 * DAY
    # Changed between the fetch before (10 days ago) and the last one; the sitemap claims 20 days.
    stale = listed((NOW - 20 * DAY, FetchStatus.FETCHED), fetch_time=fetched, prev=before, changed=fetched)
    assert stale.stale == 1 and stale.phantom == 0
    honest = listed((NOW - 5 * DAY, FetchStatus.FETCHED), fetch_time=fetched, prev=before, changed=fetched)
    assert honest.stale == 0
    first_fetch = listed((NOW - 20 * DAY, FetchStatus.FETCHED), fetch_time=fetched, changed=fetched)
    assert first_fetch.stale == 0  # no fetch before: no change was observed, only a first body


def test_lastmod_newer_while_the_content_stayed_the_same_is_a_phantom() -> None:
    changed, fetched = NOW - 30 * DAY, NOW - DAY
    phantom = listed((NOW - 5 * DAY, FetchStatus.NOT_MODIFIED), fetch_time=fetched, changed=changed)
    assert phantom.phantom == 1
    consistent = listed((NOW - 40 * DAY, FetchStatus.FETCHED), fetch_time=fetched, changed=changed)
    assert consistent.phantom == 0
    after_our_fetch = listed((NOW - DAY / 2, FetchStatus.FETCHED), fetch_time=fetched, changed=changed)
    assert after_our_fetch.phantom == 0  # a change after our last fetch: nothing to check yet


def test_duplicates_are_entries_without_a_row_of_their_own() -> None:
    stats = listed(*[(None, None)] * 6)
    assert signal("duplicates", facts(entries=6), stats) == 1.0
    assert signal("duplicates", facts(entries=10), stats) == round(7 / 11, 3)
    assert signal("duplicates", facts(entries=10, parsed=False), ListedStats()) == 1.0


@pytest.mark.parametrize(("the_facts", "expected"), [
    (facts(), 1.0),
    (facts(dropped_limit=5, problems={ProblemKind.URL_LIMIT: 5}), 0.5),
    (facts(problems={ProblemKind.BYTE_LIMIT: 1}), 0.5),
    (facts(truncated=True), 0.5),
    (facts(problems={ProblemKind.BROKEN: 1}), 0.5),
    (facts(problems={ProblemKind.NO_ENTRIES: 1, ProblemKind.ODD_NAMESPACE: 1, ProblemKind.FILTERED: 9}), 1.0),
    (facts(kind=None, entries=0, problems={ProblemKind.NOT_A_SITEMAP: 1}), 0.0),
    (facts(kind="urlset", entries=0, problems={ProblemKind.NOT_A_SITEMAP: 1}), 0.0),
    (facts(status=FetchStatus.GONE, kind=None, parsed=False), 0.0),
])
def test_limit_overflows_and_parse_errors(the_facts: SitemapFacts, expected: float) -> None:
    assert signal("errors", the_facts, ListedStats()) == expected


def test_a_sitemap_not_updated_for_long_loses_freshness() -> None:
    recent = listed((NOW - 30 * DAY, None))
    assert signal("freshness", facts(), recent) == 1.0
    old = listed((NOW - 730 * DAY, None))
    assert signal("freshness", facts(), old) == pytest.approx(0.5, abs=0.001)
    assert signal("freshness", facts(lastmod=NOW - 2 * DAY), old) == 1.0  # its own lastmod (from an index)
    future_only = listed((NOW + 30 * DAY, None))
    assert signal("freshness", facts(), future_only) == 1.0


# -------------------------------------------------------------- score --

@settings(max_examples=200, deadline=None)
@given(st.tuples(*[st.floats(0, 1)] * 6))
def test_the_score_stays_in_range_and_never_exceeds_its_fetch_share(values: tuple[float, ...]) -> None:
    signals = Signals(*values)
    score = signals.score()
    assert 0.0 <= score <= 1.0
    assert score <= signals.fetch + 0.0005  # the fetch weight is 1: it bounds the score


@pytest.mark.parametrize("name", list(WEIGHTS))
def test_each_signal_lowers_the_score_by_at_most_its_weight(name: str) -> None:
    worst = Signals(**{name: 0.0})
    assert worst.score() == pytest.approx(1.0 - WEIGHTS[name], abs=0.001)


# ------------------------------------------------------------- filter --

def test_the_states_follow_the_thresholds() -> None:
    assert assess(facts(), ListedStats(), POLICY, Pins(), NOW).state is QualityState.OK
    fake = listed(*[(NOW - 10 * DAY, FetchStatus.FETCHED)] * 10)
    demoted = assess(facts(), fake, POLICY, Pins(), NOW)
    assert demoted.state is QualityState.DEMOTED and demoted.reason is None
    assert demoted.weight == pytest.approx(demoted.score * POLICY.demote_factor, abs=0.001)


def test_pins_win_over_the_score() -> None:
    bad = listed(*[(None, FetchStatus.GONE)] * 20)
    trusted = assess(facts(), bad, POLICY, Pins(trusted=frozenset({URL})), NOW)
    assert trusted.state is QualityState.TRUSTED and trusted.weight == 1.0 and trusted.reason is None
    assert trusted.score < POLICY.blacklist_below  # still computed and shown
    blocked = assess(facts(), ListedStats(), POLICY, Pins(blocked=frozenset({URL})), NOW)
    assert blocked.state is QualityState.BLOCKED and blocked.weight == 0.0
    assert blocked.reason is not None and is_quality_reason(blocked.reason)


def test_a_blacklist_reason_from_the_file_is_kept_and_counts() -> None:
    verdict = assess(facts(blacklisted="host q.test"), ListedStats(), POLICY, Pins(trusted=frozenset({URL})), NOW)
    assert verdict.state is QualityState.BLACKLISTED and verdict.reason is None and verdict.weight == 0.0
    recovered = assess(facts(blacklisted="quality 0.100 < 0.2: old"), ListedStats(), POLICY, Pins(), NOW)
    assert recovered.state is QualityState.OK and recovered.reason is None


# ------------------------------------------------------------ ranking --

def test_weighted_priority_is_the_best_listing() -> None:
    assert weighted_priority([(0.8, 1.0)]) == 0.8
    assert weighted_priority([(None, 1.0)]) == 0.5
    assert weighted_priority([(1.0, 0.2), (0.5, 0.9)]) == 0.45
    assert weighted_priority([(1.0, 0.0)]) == 0.0


def test_generate_ranks_by_the_weighted_priority_apart_from_the_link_score() -> None:
    key = b"test.q:http/a"
    plain = WebPage("http://q.test/a", score=1.0, priority=1.0)
    weighted = WebPage("http://q.test/a", score=1.0, priority=1.0, weighted_priority=0.1)
    assert rank(plain, key) - rank(weighted, key) == pytest.approx(0.9)
    linked = WebPage("http://q.test/a", score=3.0, priority=1.0, weighted_priority=0.0)
    assert rank(linked, key) == pytest.approx(rank(WebPage("http://q.test/a", score=3.0, priority=0.0), key))
