"""The quality evidence counters: contributions, deltas, reruns, splits and folding (scoring/evidence.py)."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from sitemapcrawl.model.webpage import FetchStatus, QualityState
from sitemapcrawl.scoring import evidence
from sitemapcrawl.scoring.evidence import Base, Contribution, Tally, contribution, judge
from sitemapcrawl.scoring.quality import (
    ListedStats,
    Pins,
    QualityPolicy,
    SitemapFacts,
    assess,
    weight_of,
)

NOW = datetime(2026, 6, 1, tzinfo=UTC)
B1, B2, B3 = "20260101000000-aaaa", "20260102000000-bbbb", "20260103000000-cccc"


def random_row(rng: random.Random) -> tuple[datetime | None, FetchStatus | None, datetime | None,
                                            datetime | None, datetime | None]:
    status = rng.choice([None, *FetchStatus])
    day = timedelta(days=1)
    lastmod = rng.choice([None, NOW - rng.randint(0, 60) * day, NOW + rng.randint(0, 40) * day,
                          datetime(2026, 5, 1, tzinfo=UTC)])
    fetch_time = rng.choice([None, NOW - rng.randint(0, 30) * day])
    prev = rng.choice([None, fetch_time - rng.randint(1, 30) * day]) if fetch_time else None
    changed = rng.choice([None, fetch_time, fetch_time - rng.randint(1, 60) * day]) if fetch_time else None
    return lastmod, status, fetch_time, prev, changed


@pytest.mark.parametrize("seed", range(30))
def test_summed_contributions_do_not_depend_on_the_order_of_the_rows(seed: int) -> None:
    rng = random.Random(seed)
    rows = [random_row(rng) for _ in range(rng.randint(0, 40))]
    forward, shuffled = Tally(), Tally()
    for row in rows:
        forward.add(contribution(*row, NOW))
    for row in rng.sample(rows, len(rows)):
        shuffled.add(contribution(*row, NOW))
    assert forward.counts == shuffled.counts and forward.stats() == shuffled.stats()
    stats = forward.stats()
    assert stats.listed == len(rows) and stats.judged <= stats.listed and stats.bad_dates <= stats.dated
    facts = SitemapFacts("http://a.test/s.xml", kind="urlset", parsed=True, entries=len(rows))
    policy = QualityPolicy()
    assert assess(facts, stats, policy, Pins(), NOW) == assess(facts, shuffled.stats(), policy, Pins(), NOW)


def test_a_contribution_pins_its_counters() -> None:
    day = timedelta(days=1)
    fetched, prev = NOW - day, NOW - 10 * day
    assert contribution(None, None, None, None, None, NOW).counts == {"listed": 1, "st.none": 1}
    assert contribution(NOW + 5 * day, FetchStatus.GONE, None, None, None, NOW).counts == {
        "listed": 1, "st.gone": 1, "gone": 1, "dated": 1, "future": 1}
    # changed at the last fetch, but the lastmod is older than the fetch before: stale
    assert contribution(NOW - 20 * day, FetchStatus.FETCHED, fetched, prev, fetched, NOW).counts == {
        "listed": 1, "st.fetched": 1, "ok": 1, "dated": 1, "stale": 1}
    # unchanged since 30 days, yet a lastmod 5 days old: phantom
    assert contribution(NOW - 5 * day, FetchStatus.NOT_MODIFIED, fetched, prev, NOW - 30 * day, NOW).counts == {
        "listed": 1, "st.not_modified": 1, "ok": 1, "dated": 1, "phantom": 1}


@pytest.mark.parametrize("seed", range(10))
def test_unfetched_entries_sum_what_each_unfetched_row_would_give(seed: int) -> None:
    rng = random.Random(seed)
    lastmods = [random_row(rng)[0] for _ in range(rng.randint(0, 60))]
    one_by_one = Tally()
    for lastmod in lastmods:
        one_by_one.add(contribution(lastmod, FetchStatus.UNFETCHED, None, None, None, NOW))
    assert evidence.unfetched_entries(lastmods, NOW) == one_by_one
    assert evidence.unfetched_entries(iter(lastmods), NOW).text() == one_by_one.text()


def test_a_contribution_pins_known_counts() -> None:
    day = timedelta(days=1)
    gone = contribution(NOW - 10 * day, FetchStatus.GONE, NOW - day, None, NOW - day, NOW)
    assert gone.text() == "listed=1 gone=1 dated=1 st.gone=1 d=2026-05-22T00:00:00Z"  # one date for lo, hi, new
    # The three words an older version wrote read the same.
    assert Tally.read("listed=1 gone=1 dated=1 st.gone=1 lo=2026-05-22T00:00:00Z hi=2026-05-22T00:00:00Z "
                      "new=2026-05-22T00:00:00Z") == gone
    two = Tally({"listed": 2}, NOW - 10 * day, NOW - day, NOW - day)
    assert two.text() == "listed=2 lo=2026-05-22T00:00:00Z hi=2026-05-31T00:00:00Z new=2026-05-31T00:00:00Z"
    stale = contribution(NOW - 10 * day, FetchStatus.FETCHED, NOW, NOW - 5 * day, NOW, NOW)
    assert stale.counts == {"listed": 1, "ok": 1, "dated": 1, "stale": 1, "st.fetched": 1}
    future = contribution(NOW + 30 * day, None, None, None, None, NOW)
    assert future.counts == {"listed": 1, "dated": 1, "future": 1, "st.none": 1} and future.new is None
    assert Tally.read(gone.text()) == gone


def test_text_round_trips_and_bad_text_is_a_value_error() -> None:
    base = Base(B2, {B1: contribution(NOW, FetchStatus.FETCHED, NOW, None, NOW, NOW)})
    assert Base.read(base.lines()) == base
    assert base.lines()[0] == f"through={B2} folded="
    folded = Base("", {}, folded=(B1, B2))
    assert Base.read(folded.lines()) == folded and folded.lines()[0] == f"through= folded={B1},{B2}"
    line = Contribution("http://a.test/s.xml", B2, B1, Tally({"listed": 1}), None, None).line()
    assert line == f"http://a.test/s.xml\t{B2}\t{B1} listed=1\t-"
    assert Contribution.read(line).line() == line
    # A parse that is the judging batch is written `=`; the batch spelled out (an older line) reads the same.
    same = Contribution("http://a.test/s.xml", B2, B2, Tally({"listed": 1}), B2, Tally({"listed": 1}))
    assert same.line() == f"http://a.test/s.xml\t{B2}\t= listed=1\t= listed=1"
    assert Contribution.read(same.line()) == same == Contribution.read(f"http://a.test/s.xml\t{B2}\t{B2} listed=1\t"
                                                                       f"{B2} listed=1")
    for bad in ("listed", "listed=x", "lo=yesterday"):
        with pytest.raises(ValueError):
            Tally.read(bad)
    with pytest.raises(ValueError):
        Base.read(["listed=1"])
    with pytest.raises(ValueError):
        Contribution.read("a\tb")


S = "http://a.test/s.xml"


def ok(parse: str = B1) -> tuple[str, Tally]:
    return parse, contribution(None, FetchStatus.FETCHED, NOW, None, NOW, NOW)


def gone(parse: str = B1) -> tuple[str, Tally]:
    return parse, contribution(None, FetchStatus.GONE, NOW, None, NOW, NOW)


def unfetched(parse: str = B1) -> tuple[str, Tally]:
    return parse, contribution(None, FetchStatus.UNFETCHED, None, None, None, NOW)


def counts(groups: dict[str, Tally]) -> dict[str, dict[str, int]]:
    return {parse: tally.counts for parse, tally in groups.items()}


def test_a_row_judged_again_gives_the_difference_and_a_rerun_the_same_difference() -> None:
    lines1, deltas1 = judge([], {S: unfetched()}, B1)
    assert counts(deltas1[S]) == {B1: {"listed": 1, "st.unfetched": 1}}
    lines2, deltas2 = judge(lines1, {S: gone()}, B2)
    assert counts(deltas2[S]) == {B1: {"gone": 1, "st.gone": 1, "st.unfetched": -1}}
    # A rerun of B2 reads what B2 wrote and still computes the delta from before B2.
    lines2b, deltas2b = judge(lines2, {S: gone()}, B2)
    assert [c.line() for c in lines2b] == [c.line() for c in lines2]
    assert counts(deltas2b[S]) == counts(deltas2[S])


def test_a_sitemap_parsed_again_moves_the_row_to_its_new_parse() -> None:
    lines1, _ = judge([], {S: ok(B1)}, B1)
    _lines2, deltas = judge(lines1, {S: ok(B2)}, B2)
    assert counts(deltas[S]) == {B1: {"listed": -1, "ok": -1, "st.fetched": -1},
                                 B2: {"listed": 1, "ok": 1, "st.fetched": 1}}


def test_a_row_a_sitemap_stops_listing_is_subtracted_and_a_rerun_subtracts_it_again() -> None:
    lines1, _ = judge([], {S: gone()}, B1)
    lines2, deltas = judge(lines1, {}, B2)
    assert counts(deltas[S]) == {B1: {"listed": -1, "gone": -1, "st.gone": -1}}
    assert len(lines2) == 1 and lines2[0].tally is None  # kept until the next batch
    _again, rerun = judge(lines2, {}, B2)
    assert counts(rerun[S]) == counts(deltas[S])
    lines3, later = judge(lines2, {}, B3)
    assert lines3 == [] and later == {}


def cells_of(rows: list[tuple[int, dict[str, tuple[str, Tally]]]], stored: dict[int, list[Contribution]],
             batch: str, buckets: dict[int, int]) -> dict[str, str]:
    """Judge rows (id -> current) as updatedb would and return the cells: one per host bucket."""
    per_bucket: dict[int, dict[str, Tally]] = {}
    for row_id, current in rows:
        lines, deltas = judge(stored.get(row_id, []), current, batch)
        stored[row_id] = lines
        for groups in deltas.values():
            evidence.add_groups(per_bucket.setdefault(buckets[row_id], {}), groups)
    return {evidence.cell_name(batch, bucket): "\n".join(evidence.groups_text(groups))
            for bucket, groups in per_bucket.items()}


def test_split_cells_and_folds_sum_to_what_one_count_says() -> None:
    buckets = {n: n % 3 for n in range(9)}
    stored: dict[int, list[Contribution]] = {}
    cells = cells_of([(n, {S: unfetched()}) for n in range(9)], stored, B1, buckets)
    assert len(cells) == 3  # one cell per bucket, whoever wrote it
    # Batch 2 by two splits: rows of buckets 0-1 and rows of bucket 2, each written once.
    first = cells_of([(n, {S: gone() if n < 4 else ok()}) for n in range(9) if buckets[n] < 2], stored, B2,
                     buckets)
    second = cells_of([(n, {S: gone() if n < 4 else ok()}) for n in range(9) if buckets[n] == 2], stored, B2,
                      buckets)
    cells.update(first)
    cells.update(second)
    _parse, tally = evidence.latest(evidence.evidence(Base(), cells))
    assert tally.counts == {"listed": 9, "gone": 4, "ok": 5, "st.gone": 4, "st.fetched": 5}
    # A rerun of one split overwrites its cells with the same values.
    rerun = cells_of([(n, {S: gone() if n < 4 else ok()}) for n in range(9) if buckets[n] == 2], stored, B2,
                     buckets)
    assert rerun == second
    # Folding while batch 3 runs takes batches 1 and 2; folding again changes nothing.
    base, names = evidence.fold(Base(), cells, B3)
    assert sorted(names) == sorted(cells) and base.folded == (B1, B2)
    assert evidence.latest(base.groups)[1].counts == tally.counts
    again, names_again = evidence.fold(base, cells, B3)
    assert again.lines() == base.lines() and names_again == names
    # A cell of a folded batch written again (a late rerun) is not counted twice.
    assert evidence.latest(evidence.evidence(base, second))[1].counts == tally.counts
    # Cells of the current batch are not folded (another split may still write its own).
    _base, held = evidence.fold(Base(), cells, B2)
    assert all(evidence.cell_batch(name) == B1 for name in held)


def test_only_the_latest_parse_with_entries_counts() -> None:
    groups = {B1: Tally({"listed": 6, "gone": 6}), B2: Tally({"listed": 2, "ok": 2}), B3: Tally({"ok": 0})}
    assert evidence.latest(groups) == (B2, groups[B2])
    assert evidence.latest({B1: Tally({"listed": 0})}) == ("", Tally())


def test_weight_of_a_stored_verdict_is_the_weight_assess_gave() -> None:
    policy = QualityPolicy()
    url = "http://a.test/s.xml"
    facts = SitemapFacts(url, kind="urlset", parsed=True, entries=20)
    seen = set()
    for pins in (Pins(), Pins(trusted=frozenset({url})), Pins(blocked=frozenset({url}))):
        for failed in range(0, 21, 2):
            stats = ListedStats(listed=20, ok=20 - failed, gone=failed)
            verdict = assess(facts, stats, policy, pins, NOW)
            seen.add(verdict.state)
            assert weight_of(verdict.state, verdict.score, policy) == verdict.weight
    assert seen == set(QualityState)
    assert weight_of(None, None, policy) == 1.0


def test_batches_made_in_one_second_count_whatever_their_ids_sort_like() -> None:
    early, late = "20260101000000-ffff", "20260101000000-0000"  # `late` was made after, sorts before
    cells = {evidence.cell_name(early, 1): f"{B1} listed=1"}
    base, names = evidence.fold(Base(), cells, late)
    assert base.folded == (early,) and names == [evidence.cell_name(early, 1)]
    cells[evidence.cell_name(late, 1)] = f"{B1} listed=2"
    assert evidence.latest(evidence.evidence(base, cells))[1].counts == {"listed": 3}
    # The oldest folded ids are forgotten into `through` after FOLDED_KEPT more folds.
    for n in range(evidence.FOLDED_KEPT):
        base, _ = evidence.fold(base, {evidence.cell_name(f"2026020100{n:04d}-aaaa", 1): f"{B1} listed=1"}, late)
    assert early not in base.folded and base.through == early and base.holds(early)
    assert evidence.latest(base.groups)[1].counts == {"listed": 1 + evidence.FOLDED_KEPT}


def test_a_run_id_is_never_forgotten_into_through() -> None:
    """A run id (`scoring.new_rows`: no batch, not ordered by time) sorts after every batch id: once
    forgotten it must not become `through`, or every later batch's cells would count as folded."""
    run = evidence.RUN_PREFIX + "inject0123456789abcdef"
    base, _ = evidence.fold(Base(count="rows"), {evidence.cell_name(run, 7): "rows rows=2"}, "20260101000000-aaaa")
    assert base.folded == (run,) and base.holds(run)
    for n in range(evidence.FOLDED_KEPT):
        base, _ = evidence.fold(base, {evidence.cell_name(f"2026020100{n:04d}-aaaa", 7): "rows rows=1"},
                                "20270101000000-aaaa")
    assert run not in base.folded and base.through == "" and not base.holds("20270101000000-aaaa")
    assert evidence.latest(base.groups, "rows")[1].counts == {"rows": 2 + evidence.FOLDED_KEPT}


def test_a_first_judgement_takes_the_short_way_to_what_the_general_way_gives() -> None:
    # A stored line that names another sitemap and holds nothing sends judge down its general way;
    # with no stored line at all it takes the short way for rows judged the first time.
    nothing = Contribution("http://a.test/other.xml", B1, None, None, None, None)
    dated = (B1, contribution(NOW - timedelta(days=3), FetchStatus.FETCHED, NOW, None, NOW, NOW))
    for current in ({S: unfetched()}, {S: gone(B2), "http://a.test/t.xml": ok(B1)}, {S: ("", Tally())},
                    {S: (B1, Tally())}, {S: dated}, {}):
        short_lines, short_deltas = judge([], current, B2)
        long_lines, long_deltas = judge([nothing], current, B2)
        assert [c.line() for c in short_lines] == [c.line() for c in long_lines]
        assert ({s: {p: t.text() for p, t in g.items()} for s, g in short_deltas.items()}
                == {s: {p: t.text() for p, t in g.items()} for s, g in long_deltas.items()})


# ------------------------------------------------- first judgements, counted --

def current_of(row: tuple[datetime | None, FetchStatus | None, datetime | None, datetime | None, datetime | None],
               listed_by: list[str]) -> dict[str, tuple[str, Tally]]:
    """What a row gives each sitemap listing it (parsed in B1), as `judge` takes it."""
    return {sitemap: (B1, contribution(*row, NOW)) for sitemap in listed_by}


@pytest.mark.parametrize(("seed", "held"), [(seed, held) for seed in range(12) for held in (1, 3, 4096)])
def test_first_judgements_counted_sum_as_rows_judged_one_by_one(seed: int, held: int) -> None:
    """Rows judged for the first time through a Ledger (alike ones judged once and counted, flushed
    every `held` kinds) give the same lines, cells and summed deltas as `judge` row by row."""
    rng = random.Random(seed)
    kinds = [random_row(rng) for _ in range(6)]
    sitemaps = ["http://a.test/s1.xml", "http://a.test/s2.xml"]
    one_by_one: dict[int, dict[str, evidence.Groups]] = {}
    counted: dict[int, dict[str, evidence.Groups]] = {}

    def add(bucket: int, sitemap: str, groups: evidence.Groups) -> None:
        evidence.add_groups(counted.setdefault(bucket, {}).setdefault(sitemap, {}), groups)

    firsts: evidence.Ledger[int] = evidence.Ledger(
        B2, lambda texts: "\n".join(texts).encode(), add, held=held)
    for _ in range(300):
        kind = rng.randrange(len(kinds))
        listed_by = sitemaps[: 1 + kind % 2]
        bucket = rng.choice([0, 7])
        lines, deltas = judge([], current_of(kinds[kind], listed_by), B2)
        for sitemap, groups in deltas.items():
            evidence.add_groups(one_by_one.setdefault(bucket, {}).setdefault(sitemap, {}), groups)
        got_lines, cell = firsts.lines(bucket, (kind, tuple(listed_by)), current_of, kinds[kind], listed_by)
        assert [c.line() for c in got_lines] == [c.line() for c in lines]
        assert cell == "\n".join(c.line() for c in lines).encode()
    firsts.flush()
    as_text = {bucket: {s: evidence.groups_text(g) for s, g in by.items()} for bucket, by in one_by_one.items()}
    assert {bucket: {s: evidence.groups_text(g) for s, g in by.items()} for bucket, by in counted.items()} == as_text
    assert as_text  # the rows gave something to sum


def test_a_tally_times_n_adds_as_n_tallies() -> None:
    one = contribution(datetime(2026, 5, 1, tzinfo=UTC), FetchStatus.FETCHED, None, None, None, NOW)
    by_hand = Tally()
    for _ in range(5):
        by_hand.add(one)
    at_once = Tally()
    at_once.add(one.times(5))
    assert at_once == by_hand and at_once.counts["listed"] == 5 and at_once.lo == one.lo
    assert one.key() == contribution(one.lo, FetchStatus.FETCHED, None, None, None, NOW).key()


def test_a_forgetful_memo_forgets_all_when_full_and_kind_numbers_are_never_given_twice() -> None:
    memo: evidence.Forgetful[str, int] = evidence.Forgetful(2)
    assert memo.keep("a", 1) == 1 and memo.keep("b", 2) == 2 and memo.get("a") == 1
    assert memo.keep("c", 3) == 3 and dict(memo) == {"c": 3}  # full: all forgotten, then kept
    numbers = evidence.KindNumbers(2)
    first = [numbers.of(kind) for kind in ("x", "y", "x")]
    assert first == [0, 1, 0]
    assert numbers.of("z") == 2 and numbers.of("x") == 3  # forgotten kinds get new numbers, never old ones
