"""A crawl stopped inside round 2's split phases: the rerun finishes the batch in the splits it began.

The stops are deterministic, in this process, on a runner of split tasks
(`HereRunner`, in the place of Dask or local processes): round 2's generate
stopped after its first split (a Dask scheduler gone, the other task never
begun), or unsplit with its members recorded and its rows not yet marked;
round 2's updatedb stopped in the merge step of its first split, after its
first write (a worker killed mid-task). The rerun (given the seed file again,
as a user would) must generate the splits the registry names unfinished for
the same batch before fetching it, run updatedb in the splits it was begun
in, and leave the same rows, statuses, scores and marks as a crawl never
stopped, with no URL fetched twice. Before, an unsplit updatedb finished the
batch and spread its links again from rows the stopped merge had already
raised: pages two links from a home page ended with a score they never had
(the flaky test_dask.py scheduler test).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
from split_helpers import split_settings, table

from sitemapcrawl.batch import registry
from sitemapcrawl.batch.calls import SplitTask
from sitemapcrawl.batch.workers import WorkerResults
from sitemapcrawl.config import Settings
from sitemapcrawl.jobs import generate as generate_job
from sitemapcrawl.jobs.crawl import CrawlOptions, CrawlResult, Phases, Splits, crawl
from sitemapcrawl.model.splits import Split
from sitemapcrawl.model.webpage import WEBPAGE_TABLE
from sitemapcrawl.storage import batchrecords
from sitemapcrawl.storage.store import Store
from sitemapcrawl.testweb import TestWebServer
from sitemapcrawl.testweb.generate import bulk_web
from sitemapcrawl.web.http import PoliteHttpClient
from sitemapcrawl.web.rules import UrlRules

WEB = bulk_web(6, 6, first_host="127.0.14.1")  # served by the shared `web` fixture, one server for the module
OPTIONS = CrawlOptions(rounds=10)


class Stopped(Exception):
    """The crawl's engine went away (what a scheduler that died looks like to the crawl)."""


class Killed(BaseException):
    """A task's process died: nothing of the task runs after it (no `except Exception` catches it)."""


class HereRunner:
    """Runs a phase's split tasks in this process, one after another; raises Stopped before task
    `stop_before` of the `generate`-th generate (None: never)."""

    reruns = False

    def __init__(self, phase: str = "", round_number: int = 0, stop_before: int | None = None) -> None:
        self.phase, self.round_number, self.stop_before, self.runs = phase, round_number, stop_before, 0

    def run(self, phase: str, batch: str, tasks: Sequence[SplitTask[Any]]) -> WorkerResults:
        self.runs += phase == self.phase
        counts = []
        for number, task in enumerate(tasks):
            if phase == self.phase and self.runs == self.round_number and number == self.stop_before:
                raise Stopped(f"stopped before {phase} task {task.label} of batch {batch}")
            counts.append(task(lambda stage, done, total, errors: None))
        return WorkerResults(counts, [])


class KillingRunner(HereRunner):
    """A HereRunner whose `phase` task `stop_before` of round `round_number` dies after its first write of rows."""

    def run(self, phase: str, batch: str, tasks: Sequence[SplitTask[Any]]) -> WorkerResults:
        if phase != self.phase or self.runs + 1 != self.round_number:
            return super().run(phase, batch, tasks)
        self.runs += 1
        write = Store.write

        def dying(store: Store, table_name: str, rows: Any) -> Any:
            written = write(store, table_name, rows)
            if table_name == WEBPAGE_TABLE and written.rows:
                raise Killed(f"{phase} task {tasks[self.stop_before or 0].label} killed after its first write")
            return written

        for number, task in enumerate(tasks):
            if number != self.stop_before:
                task(lambda stage, done, total, errors: None)
                continue
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(Store, "write", dying)
                task(lambda stage, done, total, errors: None)
            raise AssertionError(f"{phase} task {task.label} wrote no row")
        raise AssertionError(f"{phase} has no task {self.stop_before}")


def fetches(web: TestWebServer) -> Counter[str]:
    """How often each URL was requested (robots.txt aside)."""
    return Counter(r.url for r in web.log.records() if r.status != 0 and r.target != "/robots.txt")


def run_crawl(settings: Settings, web: TestWebServer, phases: Callable[[Settings], Phases | None],
              on_resume: Callable[[str], None] = lambda line: None) -> CrawlResult:
    """A whole crawl of the test web, its rounds run by `phases(settings)` (None: in this process)."""
    rules = UrlRules.from_settings(settings)
    client = PoliteHttpClient.from_settings(settings)
    try:
        with Store(settings) as store:
            return crawl(store, client, rules, [f"{u}\n" for u in web.base_urls()], OPTIONS,
                         phases=phases(settings), on_resume=on_resume)
    finally:
        client.close()


@pytest.fixture(scope="module")
def reference(web: TestWebServer, hbase_address: str) -> Iterator[tuple[dict[str, Any], Counter[str], list[int]]]:
    """The table, the access log and each round's selected rows of a crawl never stopped."""
    settings = split_settings(Settings(hbase=hbase_address, table_prefix=f"t_resgen_ref_{os.getpid()}_"))
    with Store(settings) as store:
        store.create_tables()
        try:
            web.reset()
            result = run_crawl(settings, web, lambda _settings: None)
            assert result.stopped == "nothing due"
            yield table(store), fetches(web), [r.generate.selected for r in result.rounds]
        finally:
            store.drop_tables()


def check_rerun(settings: Settings, store: Store, web: TestWebServer,
                reference: tuple[dict[str, Any], Counter[str], list[int]],
                phases: Callable[[Settings], Phases | None]) -> None:
    """The stopped crawl left one batch generating; the rerun finishes it and ends as the reference."""
    rows, fetched, selected = reference
    [left] = registry.unfinished(store)
    assert left.generating and left.phase().startswith("generating")
    heard: list[str] = []
    result = run_crawl(settings, web, phases, heard.append)
    assert result.stopped == "nothing due"
    assert heard == [f"batch {left.batch_id}: resuming, left unfinished by an earlier run ({left.phase()})"]
    [resumed] = result.resumed
    assert resumed.generate.selected == selected[1]  # the whole of round 2's batch, counted once
    state = registry.read_batch(store, left.batch_id)
    assert state is not None and state.finished and not state.generating and state.selected == selected[1]
    now = table(store)
    assert now == rows, {url: (row, rows.get(url)) for url, row in now.items() if row != rows.get(url)}
    assert fetches(web) == fetched  # no URL fetched twice (the round stopped before fetching), none left out


def test_a_crawl_stopped_between_generate_splits_generates_the_rest_for_the_same_batch(
        web: TestWebServer, store: Store, settings: Settings,
        reference: tuple[dict[str, Any], Counter[str], list[int]]) -> None:
    mine = split_settings(settings)
    web.reset()
    with pytest.raises(Stopped):
        run_crawl(mine, web, lambda s: Splits(HereRunner("generate", 2, stop_before=1), s, 2))
    [left] = registry.unfinished(store)
    assert [s.text() for s in left.generating] == ["1/2"] and "generate.0/2" in left.done
    check_rerun(mine, store, web, reference, lambda s: Splits(HereRunner(), s, 2))


def test_a_crawl_stopped_before_generate_marked_its_rows_generates_them_for_the_same_batch(
        web: TestWebServer, store: Store, settings: Settings, monkeypatch: pytest.MonkeyPatch,
        reference: tuple[dict[str, Any], Counter[str], list[int]]) -> None:
    mine = split_settings(settings)
    record_members, generate, runs = batchrecords.record_members, generate_job.generate, []

    def counted(*args: Any, **kwargs: Any) -> Any:
        runs.append(1)
        return generate(*args, **kwargs)

    def record_then_stop(*args: Any, **kwargs: Any) -> Any:
        recorded = record_members(*args, **kwargs)
        if len(runs) == 2:  # in round 2's generate (fetch records redirect hops too)
            raise Stopped("stopped after round 2's members were recorded, before its rows were marked")
        return recorded

    monkeypatch.setattr(generate_job, "generate", counted)
    monkeypatch.setattr(batchrecords, "record_members", record_then_stop)
    web.reset()
    with pytest.raises(Stopped):
        run_crawl(mine, web, lambda _settings: None)
    monkeypatch.undo()
    [left] = registry.unfinished(store)
    assert [s.text() for s in left.generating] == ["0/1"]
    check_rerun(mine, store, web, reference, lambda _settings: None)


def test_a_crawl_whose_split_merge_was_killed_finishes_it_in_the_same_splits(
        web: TestWebServer, store: Store, settings: Settings,
        reference: tuple[dict[str, Any], Counter[str], list[int]]) -> None:
    rows, fetched, _selected = reference
    mine = split_settings(settings)
    web.reset()
    with pytest.raises(Killed):
        run_crawl(mine, web, lambda s: Splits(KillingRunner("updatedb-merge", 2, stop_before=0), s, 2))
    [left] = registry.unfinished(store)
    assert {"spread.0/2", "spread.1/2"} <= set(left.done) and "update.0/2" not in left.done
    assert registry.begun_splits(left, (registry.SPREAD, registry.UPDATE)) == [Split(0, 2), Split(1, 2)]
    result = run_crawl(mine, web, lambda _settings: None)  # finished here, then rounds in this process
    assert result.stopped == "nothing due" and [r.generate.batch_id for r in result.resumed] == [left.batch_id]
    now = table(store)
    assert now == rows, {url: (row, rows.get(url)) for url, row in now.items() if row != rows.get(url)}
    assert set(fetches(web)) == set(fetched)
    state = registry.read_batch(store, left.batch_id)
    assert state is not None and state.finished and "update.1/2" in state.done  # finished as begun: in splits
