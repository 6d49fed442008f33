"""`--workers`: sub-splits, limit shares, counts merged from the workers' JSON, split registry rules."""

import json
from collections import Counter
from datetime import UTC, datetime

import pytest

from sitemapcrawl.batch.calls import as_dict
from sitemapcrawl.batch.registry import (
    BatchState,
    batch_splits,
    begun_splits,
    generated_within,
    missing_splits,
    read_batch,
)
from sitemapcrawl.batch.workers import Throttle, merge_counts, sub_splits, top_n_of_split
from sitemapcrawl.errors import UsageError
from sitemapcrawl.fetcher.model import FetchCounts
from sitemapcrawl.jobs.generate import GenerateCounts
from sitemapcrawl.jobs.parse import ParseCounts
from sitemapcrawl.jobs.updatedb import UpdateCounts
from sitemapcrawl.model.cells import encode
from sitemapcrawl.model.splits import BUCKETS, Split
from sitemapcrawl.model.webpage import BatchRow
from sitemapcrawl.scoring.quality_step import QualityCounts


@pytest.mark.parametrize("split,workers", [(Split(0, 1), 4), (Split(1, 3), 2), (Split(2, 5), 7), (Split(0, 2), 1)])
def test_the_sub_splits_of_workers_cover_their_split_exactly(split: Split, workers: int) -> None:
    parts = sub_splits(split, workers)
    assert len(parts) == workers
    assert sorted(b for part in parts for b in part.buckets()) == list(split.buckets())


def test_too_many_splits_in_all_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="at most 256"):
        sub_splits(Split(0, 64), 8)
    with pytest.raises(UsageError):
        sub_splits(Split(0, 1), BUCKETS + 1)


@pytest.mark.parametrize("total,count", [(10, 3), (1, 4), (1000, 7), (5, 5)])
def test_split_shares_of_a_limit_add_up_to_it(total: int, count: int) -> None:
    shares = [top_n_of_split(total, Split(k, count)) for k in range(count)]
    assert sum(s or 0 for s in shares) == total and max(s or 0 for s in shares) - min(s or 0 for s in shares) <= 1
    assert top_n_of_split(None, Split(0, 2)) is None


def _through_json(counts: object) -> dict:  # type: ignore[type-arg]
    return json.loads(json.dumps(as_dict(counts), default=str))  # type: ignore[no-any-return]


def test_generate_counts_merge_after_json() -> None:
    a = GenerateCounts(batch_id=None, due=3, selected=0, skipped=Counter({"filtered": 3}))
    b = GenerateCounts(batch_id="b1", due=5, selected=4, by_fetch_split=Counter({0: 3, 1: 1}),
                       by_host=Counter({"h1": 4}), skipped=Counter({"filtered": 1}))
    c = GenerateCounts(batch_id="b1", due=2, selected=2, by_fetch_split=Counter({1: 2}), by_host=Counter({"h2": 2}))
    merged = merge_counts(GenerateCounts, [_through_json(x) for x in (a, b, c)])
    assert merged.batch_id == "b1" and merged.due == 10 and merged.selected == 6
    assert merged.by_fetch_split == Counter({0: 3, 1: 3})  # int keys again
    assert merged.by_host == Counter({"h1": 4, "h2": 2}) and merged.skipped == Counter({"filtered": 4})


def test_fetch_counts_merge_hosts_and_take_the_longest_time() -> None:
    a = FetchCounts("b", total=4, done=4, by_status=Counter({"fetched": 4}), by_host={"h1": Counter({"fetched": 4})},
                    seconds=2.0)
    b = FetchCounts("b", total=3, done=2, by_status=Counter({"fetched": 1, "retry": 1}),
                    by_host={"h2": Counter({"fetched": 1, "retry": 1})}, stopped="time limit", seconds=5.0)
    merged = merge_counts(FetchCounts, [_through_json(a), _through_json(b)])
    assert (merged.total, merged.done, merged.seconds, merged.stopped) == (7, 6, 5.0, "time limit")
    assert merged.by_host == {"h1": Counter({"fetched": 4}), "h2": Counter({"fetched": 1, "retry": 1})}
    assert merged.errors == 1 and "6 of 7 done" in merged.summary()


def test_update_counts_merge_nested_counts_and_keep_the_one_quality_step() -> None:
    a = UpdateCounts("b", merged=3, scheduled=2, by_status=Counter({"fetched": 2}))
    a.unreadable.rows = 1
    b = UpdateCounts("b", merged=4, scheduled=5, quality=QualityCounts(sitemaps=2, by_state=Counter({"ok": 2})))
    merged = merge_counts(UpdateCounts, [_through_json(a), _through_json(b)])
    assert (merged.merged, merged.scheduled, merged.unreadable.rows) == (7, 7, 1)
    assert merged.quality == QualityCounts(sitemaps=2, by_state=Counter({"ok": 2}))
    none = merge_counts(UpdateCounts, [_through_json(a)])
    assert none.quality is None


def test_parse_counts_merge_with_nothing_is_empty() -> None:
    assert merge_counts(ParseCounts, []) == ParseCounts()


def _state(*done: str) -> BatchState:
    when = datetime(2026, 1, 1, tzinfo=UTC)
    return BatchState("b", generated=when, done={name: "2026-01-01T00:00:00Z" for name in done})


def test_a_batch_is_made_of_the_splits_that_generated_rows_or_of_all() -> None:
    assert batch_splits(_state(), 3) == [Split(0, 3), Split(1, 3), Split(2, 3)]
    assert batch_splits(_state("generate.0/3", "generate.2/3"), 3) == [Split(0, 3), Split(2, 3)]
    assert missing_splits(_state("generate.0/3", "generate.2/3", "parse.0/3"), "parse", 3) == [Split(2, 3)]
    assert missing_splits(_state("parse.0/2", "parse.1/2"), "parse", 2) == []
    assert missing_splits(None, "parse", 2) == [Split(0, 2), Split(1, 2)]


def test_a_batch_is_finished_in_the_splits_its_updatedb_began_in() -> None:
    phases = ("spread", "update")
    assert begun_splits(_state("generate.0/2", "generate.1/2", "spread.0/2"), phases) == [Split(0, 2), Split(1, 2)]
    assert begun_splits(_state("generate.1/4", "spread.1/4", "update.1/4"), phases) == [Split(1, 4)]
    assert begun_splits(_state("parse.0/2"), phases) == []  # updatedb not begun in splits: unsplit
    assert begun_splits(_state("spread.0/2", "spread.0/3"), phases) == []  # two shapes: none to follow
    assert begun_splits(_state("update"), phases) == []


def test_the_generate_splits_not_finished_are_named_in_the_batch_state() -> None:
    state = BatchState("b", generating=(Split(1, 2),))
    assert state.phase() == "generating (1/2 not finished)"
    assert generated_within(state, Split(1, 2)) and not generated_within(state, Split(0, 2))


class _OneRow:
    """A store holding one batch row (what `read_batch` reads: one get)."""

    def __init__(self, row: BatchRow) -> None:
        self.cells = encode(row)

    def row(self, _table: str, _key: bytes) -> dict[bytes, bytes]:
        return self.cells


def test_a_named_generate_split_is_generating_until_its_done_mark() -> None:
    when = datetime(2026, 1, 1, tzinfo=UTC)
    row = BatchRow("b", generated=when, generating="0/2 1/2", done={"generate.0/2": "2026-01-01T00:00:00Z"})
    state = read_batch(_OneRow(row), "b")  # type: ignore[arg-type]
    assert state is not None and state.generating == (Split(1, 2),)
    unsplit = BatchRow("b", generated=when, generating="0/1")
    assert read_batch(_OneRow(unsplit), "b").generating == (Split(0, 1),)  # type: ignore[arg-type,union-attr]
    unsplit.done = {"generate": "2026-01-01T00:00:00Z"}
    assert read_batch(_OneRow(unsplit), "b").generating == ()  # type: ignore[arg-type,union-attr]


def test_a_split_crawl_finishes_only_the_batches_generated_inside_its_split() -> None:
    mine = _state("generate.0/4", "generate.1/4")
    assert generated_within(mine, Split(0, 2)) and not generated_within(mine, Split(1, 2))
    assert not generated_within(_state(), Split(0, 2))  # an unsplit batch is left to an unsplit crawl
    assert generated_within(_state(), Split(0, 1))


def test_the_batch_line_says_how_many_splits_are_done() -> None:
    fetched = ("fetch.0/1",)
    assert _state(*fetched, "parse.0/3").phase() == "fetched, not parsed (parse: 1 of 3 splits done)"
    assert _state(*fetched, "parse", "update.1/2").phase() == "parsed, not updated (updatedb: 1 of 2 splits done)"
    assert _state(*fetched, "parse").phase() == "parsed, not updated"
    assert _state(*fetched, "parse", "update").phase() == "finished"


def test_a_split_reports_progress_at_most_once_per_interval() -> None:
    slow, eager = Throttle(3600), Throttle(0)
    assert [slow() for _ in range(3)] == [True, False, False]  # the first at once, then one an hour
    assert [eager() for _ in range(3)] == [True, True, True]
