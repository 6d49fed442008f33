"""`crawl`: inject, detect, then rounds of generate, fetch, parse and updatedb.

The loop of the other jobs, nothing more: each stage is the same job the
single commands run, on the same table, so a crawl can be stopped at any
point and continued by another `crawl` (or by the single commands). Resume
is the default: every batch the registry (`batch.registry`) calls
unfinished is finished first (`finish_batch`: each phase skips what is
done), or released when older than `batch_max_age`. The mode (`modes.CrawlMode`)
decides which rows are generated and whether links are followed. A round's
phases are handed to one `Phases`: `InProcess` (here) or `Splits` (split
tasks on a `batch.workers.Runner`: local worker processes or Dask), both
calling each job's phase function (`batch.calls`); the split tasks of each
phase are built at the end of this module, also what `generate`/`parse`/
`updatedb --workers` run. In full: docs/commands.md, crawl, and Splits and workers.

Cost: that of the stages; the crawl itself holds only the counts.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Protocol

from sitemapcrawl import logfields
from sitemapcrawl.batch import registry
from sitemapcrawl.batch.calls import BatchSplit, SplitTask, StageUpdate, Work, as_dict
from sitemapcrawl.batch.registry import BatchState
from sitemapcrawl.batch.workers import (
    Runner,
    WorkerResults,
    merge_counts,
    raise_failed,
    run_splits,
    sub_splits,
    tasks_wait,
    top_n_of_split,
)
from sitemapcrawl.clock import Clock, utc_now
from sitemapcrawl.config import Settings
from sitemapcrawl.errors import LeaseHeldError, UsageError
from sitemapcrawl.jobs.detect import DetectCounts, detect
from sitemapcrawl.jobs.fetch import FetchCounts, FetchOptions, fetch_phase
from sitemapcrawl.jobs.generate import GenerateCounts, GenerateOptions, generate_phase
from sitemapcrawl.jobs.inject import InjectCounts, Rejected, inject
from sitemapcrawl.jobs.parse import ParseCounts, parse_phase
from sitemapcrawl.jobs.updatedb import UpdateCounts, updatedb_phase
from sitemapcrawl.model.codec import format_time
from sitemapcrawl.model.splits import WHOLE, Split
from sitemapcrawl.model.webpage import BATCH_TABLE, DUE_TABLE, HOST_TABLE, WEBPAGE_TABLE
from sitemapcrawl.modes import CountMode, CrawlMode, UpdateStep
from sitemapcrawl.storage.hosts import origins_in_table
from sitemapcrawl.storage.store import Store
from sitemapcrawl.web import rowkeys
from sitemapcrawl.web.http import PoliteHttpClient
from sitemapcrawl.web.rules import UrlRules

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CrawlOptions:
    """What one crawl does; fetch politeness comes from the settings."""

    mode: CrawlMode = CrawlMode.MIXED
    rounds: int = 3
    top_n: int | None = None
    max_per_host: int | None = None
    count_mode: CountMode = CountMode.HOST
    fetch_splits: int = 1
    probe_known_paths: bool = False
    time_limit: float | None = None
    """Seconds each fetch may start URLs for (None: no limit)."""
    documents_only: bool = False
    """Sitemap-only inventory: fetch the sitemap documents alone and record
    every URL they list without fetching the pages."""
    split: Split = WHOLE
    """This crawl's split of the host buckets (`crawl --split K/N` on machine K of N): its rounds
    generate only there, and it finishes only the unfinished batches generated there."""

    def check(self) -> None:
        """Raise UsageError naming the first bad option."""
        if self.rounds < 1:
            raise UsageError(f"--rounds must be at least 1, not {self.rounds}")
        if self.documents_only and self.mode is not CrawlMode.SITEMAP_ONLY:
            raise UsageError("--sitemaps-only-docs goes with --mode sitemap-only")


@dataclass(frozen=True)
class RoundResult:
    """The counts of one round's four stages."""

    number: int
    generate: GenerateCounts
    fetch: FetchCounts
    parse: ParseCounts
    update: UpdateCounts
    seconds: dict[str, float] = field(default_factory=dict)
    """Wall-clock seconds of each stage: generate, fetch, parse, updatedb."""

    @property
    def row_writes(self) -> int:
        """Row puts the round sent to HBase: marks, outcomes, entries and links, merges, schedules."""
        parse, update = self.parse, self.update
        return (self.generate.selected + self.fetch.done + parse.rows + parse.entries + parse.children
                + update.links + update.redirects + update.merged + update.scheduled)

    def line(self) -> str:
        """One summary line for the round."""
        fetched = self.fetch
        statuses = ", ".join(f"{s} {n}" for s, n in sorted(fetched.by_status.items()))
        return (
            f"round {self.number}: batch {self.generate.batch_id}: selected {self.generate.selected}, "
            f"fetched {fetched.done} ({statuses or 'nothing'}), sitemaps parsed {self.parse.sitemaps} "
            f"(entries {self.parse.entries}, child sitemaps {self.parse.children}), pages parsed "
            f"{self.parse.pages} (outlinks {self.parse.outlinks}), rows merged {self.update.merged} "
            f"(new {self.update.new_rows}); "
            + ", ".join(f"{stage} {took:.1f}s" for stage, took in self.seconds.items())
        )


@dataclass
class CrawlResult:
    """What a crawl did, stage by stage, and why it stopped."""

    inject: InjectCounts | None = None
    detect: DetectCounts | None = None
    rounds: list[RoundResult] = field(default_factory=list)
    resumed: list[RoundResult] = field(default_factory=list)
    """Unfinished batches of earlier runs, finished first."""
    released: dict[str, int] = field(default_factory=dict)
    """Batches too old to finish, released: batch id -> rows freed."""
    stopped: str = ""
    """`rounds done`, `nothing due` or `interrupted`."""


class Phases(Protocol):
    """Where a round's phases run: here (`InProcess`) or as split tasks on a runner (`Splits`).

    Each method takes the phase's options and returns its counts.
    """

    def generate(self, options: GenerateOptions) -> GenerateCounts:
        """Make the round's batch."""

    def fetch(self, options: FetchOptions) -> FetchCounts:
        """Fetch the batch."""

    def parse(self, options: BatchSplit) -> ParseCounts:
        """Parse the batch."""

    def updatedb(self, options: BatchSplit) -> UpdateCounts:
        """Merge the batch."""


class InProcess:
    """The phases in this process, on the crawl's own store, HTTP client and clock (`work`).

    `updatedb_splits`: run updatedb as these splits, one after another, each its spread step, then each
    its merge step (finishing a batch whose updatedb a killed crawl began in splits, `finish_batch`:
    a split's rerun skips what it did; an unsplit run would spread again from rows merged since).
    """

    def __init__(self, work: Work, on_stage: StageUpdate, updatedb_splits: list[Split] | None = None) -> None:
        self.work = work
        self.on_stage = on_stage
        self.updatedb_splits = updatedb_splits or []

    def generate(self, options: GenerateOptions) -> GenerateCounts:
        """Run generate here."""
        return generate_phase(self.work, options, self.on_stage)

    def fetch(self, options: FetchOptions) -> FetchCounts:
        """Run fetch here."""
        return fetch_phase(self.work, options, self.on_stage)

    def parse(self, options: BatchSplit) -> ParseCounts:
        """Run parse here."""
        return parse_phase(self.work, options, self.on_stage)

    def updatedb(self, options: BatchSplit) -> UpdateCounts:
        """Run updatedb here (in `updatedb_splits`, when given)."""
        if not self.updatedb_splits:
            return updatedb_phase(self.work, options, self.on_stage)
        return merge_counts(UpdateCounts, [
            as_dict(updatedb_phase(self.work, replace(options, split=part, step=step), self.on_stage))
            for step in (UpdateStep.SPREAD, UpdateStep.MERGE) for part in self.updatedb_splits])


def _fetch_options(settings: Settings, mode: CrawlMode, options: CrawlOptions, batch_id: str) -> FetchOptions:
    keep_pages = mode is not CrawlMode.SITEMAP_ONLY or settings.store_content
    return FetchOptions.from_settings(settings, batch_id, store_content=keep_pages, time_limit=options.time_limit)


def finish_round(phases: Phases, settings: Settings, options: CrawlOptions, mode: CrawlMode,
                 generated: GenerateCounts, seconds: dict[str, float], number: int, wait: bool = False) -> RoundResult:
    """The rest of a round once its batch is made (`generated`): fetch, parse, updatedb, each timed.

    `wait`: every phase waits for another worker's lease (finishing a batch left unfinished).
    """
    batch = generated.batch_id or ""
    logfields.note(batch=batch)  # what the round's log lines are about
    started = time.monotonic()
    fetched = phases.fetch(replace(_fetch_options(settings, mode, options, batch), wait=wait))
    seconds["fetch"], started = time.monotonic() - started, time.monotonic()
    parsed = phases.parse(BatchSplit(batch, mode, wait=wait))
    seconds["parse"], started = time.monotonic() - started, time.monotonic()
    updated = phases.updatedb(BatchSplit(batch, mode, wait=wait))
    seconds["updatedb"] = time.monotonic() - started
    return RoundResult(number, generated, fetched, parsed, updated, seconds)


def finish_batch(
    store: Store,
    client: PoliteHttpClient,
    rules: UrlRules,
    state: BatchState,
    options: CrawlOptions,
    *,
    on_stage: StageUpdate = lambda stage, done, total, errors: None,
    clock: Clock = utc_now,
) -> RoundResult:
    """Finish one batch here: generate the splits not generated, fetch what is not fetched, parse what is
    not parsed, update.

    Each phase skips what an earlier run did, and waits for a lease another
    worker still holds on it. Returns the counts as a round numbered 0.
    """
    here = InProcess(Work(rules.settings, store=store, rules=rules, client=client, clock=clock), on_stage,
                     updatedb_splits=registry.begun_splits(state, (registry.SPREAD, registry.UPDATE)))
    mode = crawl_mode_of(state, options)
    seconds: dict[str, float] = {}
    if state.generating:
        started = time.monotonic()
        state = finish_generate(here, store, state, options, mode)
        seconds["generate"] = time.monotonic() - started
    generated = GenerateCounts(batch_id=state.batch_id, selected=state.selected or 0)
    return finish_round(here, rules.settings, options, mode, generated, seconds, 0, wait=True)


def finish_generate(phases: Phases, store: Store, state: BatchState, options: CrawlOptions,
                    mode: CrawlMode) -> BatchState:
    """Run the generate splits a killed crawl began and did not finish (`state.generating`), for the same
    batch, with the options its splits had (each split its share of `--topN`); the batch's state after.

    A split run again chooses its rows already marked again (`generate`), so it makes the batch the
    killed run would have made. Cost: those splits' generate, one get.
    """
    for part in state.generating:
        phases.generate(replace(_generate_options(options, mode), top_n=top_n_of_split(options.top_n, part),
                                fetch_splits=state.fetch_splits, batch_id=state.batch_id, split=part))
    return registry.read_batch(store, state.batch_id) or state


def _generate_options(options: CrawlOptions, mode: CrawlMode) -> GenerateOptions:
    """The options of a crawl's generate (a round's, or a split's finished for a batch left generating)."""
    return GenerateOptions(top_n=options.top_n, max_per_host=options.max_per_host, count_mode=options.count_mode,
                           fetch_splits=options.fetch_splits, mode=mode, documents_only=options.documents_only,
                           split=options.split)


def split_origins(store: Store, split: Split) -> list[str]:
    """The origins of the table whose rows are in `split` (a host's rows share one bucket).

    Cost: the skip scan of `hosts.origins_in_table`, one round trip per origin.
    """
    return [origin for origin in origins_in_table(store)
            if split.holds(rowkeys.row_key(origin + "/").encode("utf-8"))]


def crawl_mode_of(state: BatchState, options: CrawlOptions) -> CrawlMode:
    """The mode a batch was generated in (the crawl's own when the registry does not say)."""
    try:
        return CrawlMode(state.mode) if state.mode else options.mode
    except ValueError:
        return options.mode


def resume_unfinished(
    store: Store,
    client: PoliteHttpClient,
    rules: UrlRules,
    options: CrawlOptions,
    result: CrawlResult,
    *,
    on_resume: Callable[[str], None],
    on_stage: StageUpdate,
    on_round: Callable[[RoundResult], None],
    clock: Clock,
) -> bool:
    """Finish (or, when too old, release) every unfinished batch; False when interrupted."""
    for state in registry.unfinished(store):
        batch = state.batch_id
        if not registry.generated_within(state, options.split):
            continue
        if registry.too_old(state, clock(), rules.settings.batch_max_age):
            try:
                freed = registry.release(store, batch, clock())
            except LeaseHeldError as exc:
                on_resume(f"batch {batch}: older than batch_max_age, left alone: {exc}")
                continue
            result.released[batch] = freed
            on_resume(f"batch {batch}: released, {freed} rows freed: generated "
                      f"{format_time(state.generated) if state.generated else '?'}, longer ago than "
                      f"batch_max_age ({rules.settings.batch_max_age} s), so it will not be finished")
            continue
        on_resume(f"batch {batch}: resuming, left unfinished by an earlier run ({state.phase()})")
        logfields.note(batch=batch)
        finished = finish_batch(store, client, rules, state, options, on_stage=on_stage, clock=clock)
        logfields.note(batch=None)
        result.resumed.append(finished)
        on_round(finished)
        if finished.fetch.stopped == "interrupted":
            return False
    return True


def crawl(
    store: Store,
    client: PoliteHttpClient,
    rules: UrlRules,
    seeds: Iterable[str],
    options: CrawlOptions,
    *,
    on_stage: StageUpdate = lambda stage, done, total, errors: None,
    on_round: Callable[[RoundResult], None] = lambda result: None,
    on_reject: Callable[[Rejected], None] = lambda rejected: None,
    on_resume: Callable[[str], None] = lambda line: None,
    clock: Clock = utc_now,
    phases: Phases | None = None,
) -> CrawlResult:
    """Run a whole crawl (see the module docstring); return what each stage did.

    `seeds` are seed-file lines (may be empty: continue the table's crawl).
    `on_stage(stage, done, total, errors)` hears progress of the running stage
    (total None when unknown); `on_round` each finished round; `on_resume` one
    line per unfinished batch it finishes or releases first. `phases` runs
    each round's phases (default: `InProcess`, here; `Splits`: worker
    processes or Dask tasks); inject, detect and finishing unfinished
    batches run here either way. Raises what the stages raise: UsageError
    (options, no user agent), TableMissingError, StoreUnavailableError.
    """
    options.check()
    mode = options.mode
    result = CrawlResult()
    store.require_tables(WEBPAGE_TABLE, HOST_TABLE, BATCH_TABLE, DUE_TABLE)
    if not resume_unfinished(store, client, rules, options, result, on_resume=on_resume, on_stage=on_stage,
                             on_round=on_round, clock=clock):
        result.stopped = "interrupted"
        return result
    result.inject = inject(store, seeds, rules, on_reject=on_reject,
                           on_progress=lambda done: on_stage("inject", done, None, 0), clock=clock)
    if mode is not CrawlMode.LINKS_ONLY:
        result.detect = _detect(store, client, rules, options, on_stage, clock)
    phases = phases or InProcess(Work(rules.settings, store=store, rules=rules, client=client, clock=clock), on_stage)
    generate_options = _generate_options(options, mode)
    result.stopped = "rounds done"
    for number in range(1, options.rounds + 1):
        started = time.monotonic()
        generated = phases.generate(generate_options)
        if generated.batch_id is None:
            result.stopped = "nothing due"
            break
        round_result = finish_round(phases, rules.settings, options, mode, generated,
                                    {"generate": time.monotonic() - started}, number)
        result.rounds.append(round_result)
        on_round(round_result)
        log.info("crawl: %s", round_result.line())
        if round_result.fetch.stopped == "interrupted":
            result.stopped = "interrupted"
            break
    logfields.note(batch=None)
    return result


def _detect(store: Store, client: PoliteHttpClient, rules: UrlRules, options: CrawlOptions, on_stage: StageUpdate,
            clock: Clock) -> DetectCounts:
    """detect for the crawl: every host's robots.txt, or with `--split K/N` those of this machine's hosts."""
    hosts = 0

    def host_done(_report: object) -> None:
        nonlocal hosts
        hosts += 1
        on_stage("detect", hosts, None, 0)

    if options.split.whole:
        return detect(store, client, rules, probe_known_paths=options.probe_known_paths, on_host=host_done, clock=clock)
    mine = split_origins(store, options.split)
    return detect(store, client, rules, hosts=mine, probe_known_paths=options.probe_known_paths,
                  on_host=host_done, clock=clock) if mine else DetectCounts()


# ---------------------------------------------------------------- workers --
# Each phase as split tasks (`--workers M` or `--dask`, `batch.workers.Runner`):
# one `SplitTask` (`batch.calls`: the job's phase function, the settings, its
# options with the split) per split, which local processes and Dask tasks alike
# receive, and their counts merged. generate, parse and updatedb run as M tasks
# over the sub-splits of a split (`workers.sub_splits`); fetch as M fetch splits.
# generate's tasks share one batch id chosen here; `--topN` is the batch's
# total, each split selecting its share. Here, not in a part, because it runs
# the other jobs (as crawl does); the commands call these too.

def generate_workers(runner: Runner, settings: Settings, options: GenerateOptions, workers: int,
                     clock: Clock = utc_now) -> tuple[GenerateCounts, WorkerResults]:
    """Run generate as `workers` tasks over `options.split`; one batch (options.batch_id or a new id).

    `options.top_n` is the batch's total (each task takes its share). UsageError for bad options
    (a split of several machines needs the batch id they share).
    """
    options.check()
    batch = options.batch_for(clock())

    def task(s: Split) -> SplitTask[GenerateOptions]:
        mine = replace(options, batch_id=batch, split=s, top_n=top_n_of_split(options.top_n, s))
        return SplitTask("generate", s.text(), generate_phase, settings, mine)

    results = run_splits(runner, "generate", batch, options.split, workers, task)
    counts = results.merged(GenerateCounts)
    if counts.selected == 0:
        counts.batch_id = None
    return counts, results


def parse_workers(runner: Runner, settings: Settings, batch: str, mode: CrawlMode, split: Split, workers: int,
                  wait: bool = False) -> tuple[ParseCounts, WorkerResults]:
    """Run parse as `workers` tasks over `split` (waiting for a live holder's lease: `tasks_wait`)."""
    wait = tasks_wait(runner, wait)
    results = run_splits(runner, "parse", batch, split, workers, lambda s: SplitTask(
        "parse", s.text(), parse_phase, settings, BatchSplit(batch, mode, s, wait=wait)))
    return results.merged(ParseCounts), results


def updatedb_workers(runner: Runner, settings: Settings, batch: str, mode: CrawlMode, split: Split, workers: int,
                     wait: bool = False) -> tuple[UpdateCounts, WorkerResults]:
    """Run updatedb as `workers` tasks over `split`, in two phases: every split spreads its links, then
    (once all have, and none failed) every split merges. No task waits for another: the barrier between
    the steps is here, so any number of workers (one is enough) runs them, and a lost task is simply run
    again. Tasks wait for a live holder's lease as `tasks_wait` says."""
    wait = tasks_wait(runner, wait)

    def task(s: Split, step: UpdateStep) -> SplitTask[BatchSplit]:
        return SplitTask("updatedb", s.text(), updatedb_phase, settings, BatchSplit(batch, mode, s, step, wait))

    results = []
    for step in (UpdateStep.SPREAD, UpdateStep.MERGE):
        results.append(run_splits(runner, f"updatedb-{step.value}", batch, split, workers,
                                  functools.partial(task, step=step)))
        if results[-1].failed:
            break
    both = WorkerResults([c for r in results for c in r.counts], [f for r in results for f in r.failed])
    return both.merged(UpdateCounts), both


def fetch_workers(runner: Runner, options: FetchOptions, settings: Settings,
                  fetch_splits: int) -> tuple[FetchCounts, WorkerResults]:
    """Run fetch as one task per fetch split of the batch (`fetch --split K/N`), waiting for a live holder's
    lease as `tasks_wait` says."""
    mine = replace(options, wait=tasks_wait(runner, options.wait))
    results = runner.run("fetch", options.batch_id, [SplitTask(
        "fetch", f"{k}/{fetch_splits}", fetch_phase, settings, replace(mine, fetch_split=(k, fetch_splits)))
        for k in range(fetch_splits)])
    return results.merged(FetchCounts), results


class Splits:
    """A crawl round's phases, each as split tasks on a runner (`crawl --workers M [--split K/N]`, `--dask`).

    Fetch runs one worker per fetch split: generate is told `fetch_splits` = M.
    updatedb runs as two phases (spread, then merge): no task waits for
    another, the crawl holds the barrier between them. A failed worker stops
    the crawl with WorkerFailedError after its phase.
    """

    def __init__(self, runner: Runner, settings: Settings, workers: int, split: Split = WHOLE) -> None:
        self.runner = runner
        self.settings = settings
        self.workers = workers
        self.split = split

    def generate(self, options: GenerateOptions) -> GenerateCounts:
        """Run generate's workers for the crawl's split.

        The splits are named generating in the registry before they run (a crawl killed meanwhile runs
        the rest next time, `finish_generate`); when none selected a row, that name is all there was, and
        goes. When the counts say none but the registry says the batch exists (a task whose counts were
        lost), the registry's count is taken. Cost: a get and a check-and-put before; one get when none
        were selected.
        """
        batch = options.batch_for(utc_now())  # the crawl's splits' batch: named in the registry first
        mine = replace(options, split=self.split, fetch_splits=self.workers, batch_id=batch)
        with Store(self.settings) as store:  # named before any runs: a crawl killed now runs them next time
            registry.begin_generating(store, batch, sub_splits(self.split, self.workers))
        counts, results = generate_workers(self.runner, self.settings, mine, self.workers)
        raise_failed(results)
        if counts.batch_id is None:
            with Store(self.settings) as store:
                state = registry.read_batch(store, batch)
                if state is not None and state.generated is None:
                    registry.forget_generating(store, batch)
            if state is not None and state.generated is not None and not state.finished:
                counts.batch_id, counts.selected = batch, state.selected or 0
        return counts

    def fetch(self, options: FetchOptions) -> FetchCounts:
        """Run one fetch worker per fetch split."""
        counts, results = fetch_workers(self.runner, options, self.settings, self.workers)
        raise_failed(results)
        return counts

    def parse(self, options: BatchSplit) -> ParseCounts:
        """Run parse's workers over the crawl's split."""
        counts, results = parse_workers(self.runner, self.settings, options.batch_id, options.mode, self.split,
                                        self.workers, wait=options.wait)
        raise_failed(results)
        return counts

    def updatedb(self, options: BatchSplit) -> UpdateCounts:
        """Run updatedb's workers over the crawl's split."""
        counts, results = updatedb_workers(self.runner, self.settings, options.batch_id, options.mode, self.split,
                                           self.workers, wait=options.wait)
        raise_failed(results)
        return counts
