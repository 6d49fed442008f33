"""Each phase as worker processes: the command line of every worker, and their counts merged.

`generate`, `parse` and `updatedb` run as M workers over the sub-splits of
a split (`workers.sub_splits`: M workers of split K/N take splits K*M+j of
N*M, so the shares of every machine and worker are disjoint and cover every
host bucket); `fetch` runs as M partitions of the batch. `WorkerPhases` is
what `crawl --workers M` runs each round with (see `jobs.crawl.Phases`).
generate's workers share one batch id chosen here; `--topN` is the batch's
total, each split selecting its share (`workers.split_share`).

Cost: that of the workers; here only command lines and merging.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from sitemapcrawl.config import Settings
from sitemapcrawl.jobs.fetch import FetchOptions
from sitemapcrawl.jobs.fetch_model import FetchCounts
from sitemapcrawl.jobs.generate import GenerateCounts, GenerateOptions, new_batch_id
from sitemapcrawl.jobs.parse import ParseCounts
from sitemapcrawl.jobs.updatedb import UpdateCounts
from sitemapcrawl.jobs.workers import Pool, WorkerResults, raise_failed, run_splits
from sitemapcrawl.modes import CrawlMode
from sitemapcrawl.splits import WHOLE, Split


def _opt(name: str, value: object) -> list[str]:
    return [] if value is None or value is False else [name] if value is True else [name, str(value)]


def generate_workers(pool: Pool, options: GenerateOptions, workers: int,
                     now: datetime | None = None) -> tuple[GenerateCounts, WorkerResults]:
    """Run generate as `workers` processes over `options.split`; one batch (options.batch_id or a new id).

    `options.top_n` is the batch's total (each worker takes its share). UsageError for bad options
    (a split of several machines needs the batch id they share).
    """
    options.check()
    batch = options.batch_id or new_batch_id((now or datetime.now(UTC)).replace(microsecond=0))
    common = (["--batch-id", batch, "--partitions", str(options.partitions), "--count-mode",
               options.count_mode.value, "--mode", options.mode.value]
              + _opt("--topN", options.top_n) + _opt("--max-per-host", options.max_per_host)
              + _opt("--queue-by", options.queue_by.value if options.queue_by else None)
              + _opt("--sitemaps-only-docs", options.documents_only))
    results = run_splits(pool, "generate", options.split, workers, lambda s: ["generate", "--split", s.text(), *common])
    counts = results.merged(GenerateCounts)
    if counts.selected == 0:
        counts.batch_id = None
    return counts, results


def parse_workers(pool: Pool, batch: str, mode: CrawlMode, split: Split, workers: int,
                  wait: bool = False) -> tuple[ParseCounts, WorkerResults]:
    """Run parse as `workers` processes over `split`."""
    results = run_splits(pool, "parse", split, workers, lambda s: [
        "parse", "--batch", batch, "--split", s.text(), "--mode", mode.value, *_opt("--wait", wait)])
    return results.merged(ParseCounts), results


def updatedb_workers(pool: Pool, batch: str, mode: CrawlMode, split: Split, workers: int,
                     wait: bool = False) -> tuple[UpdateCounts, WorkerResults]:
    """Run updatedb as `workers` processes over `split`."""
    results = run_splits(pool, "updatedb", split, workers, lambda s: [
        "updatedb", "--batch", batch, "--split", s.text(), "--mode", mode.value, *_opt("--wait", wait)])
    return results.merged(UpdateCounts), results


def fetch_workers(pool: Pool, options: FetchOptions, settings: Settings,
                  partitions: int) -> tuple[FetchCounts, WorkerResults]:
    """Run fetch as one process per partition of the batch (`fetch --partition K/N`)."""
    common = (["--batch", options.batch_id, "--threads", str(settings.threads), "--threads-per-host",
               str(settings.threads_per_host), "--delay", str(settings.delay),
               "--store-content" if options.store_content else "--no-store-content"]
              + _opt("--time-limit", options.time_limit) + _opt("--wait", options.wait))
    results = pool.run("fetch", [(f"{k}/{partitions}", ["fetch", "--partition", f"{k}/{partitions}", *common])
                                 for k in range(partitions)])
    return results.merged(FetchCounts), results


class WorkerPhases:
    """A crawl round's phases, each as worker processes (`crawl --workers M [--split K/N]`).

    Fetch runs one worker per partition: generate is told `partitions` = M.
    A failed worker stops the crawl with WorkerFailedError after its phase.
    """

    def __init__(self, pool: Pool, settings: Settings, workers: int, split: Split = WHOLE) -> None:
        self.pool = pool
        self.settings = settings
        self.workers = workers
        self.split = split

    def generate(self, options: GenerateOptions) -> GenerateCounts:
        """Run generate's workers for the crawl's split."""
        counts, results = generate_workers(self.pool, _with(options, self.split, self.workers), self.workers)
        raise_failed(results)
        return counts

    def fetch(self, options: FetchOptions) -> FetchCounts:
        """Run one fetch worker per partition."""
        counts, results = fetch_workers(self.pool, options, self.settings, self.workers)
        raise_failed(results)
        return counts

    def parse(self, batch: str, mode: CrawlMode) -> ParseCounts:
        """Run parse's workers."""
        counts, results = parse_workers(self.pool, batch, mode, self.split, self.workers)
        raise_failed(results)
        return counts

    def updatedb(self, batch: str, mode: CrawlMode) -> UpdateCounts:
        """Run updatedb's workers."""
        counts, results = updatedb_workers(self.pool, batch, mode, self.split, self.workers)
        raise_failed(results)
        return counts


def _with(options: GenerateOptions, split: Split, workers: int) -> GenerateOptions:
    """The crawl's generate options for its workers: its split, one partition per worker, a new batch id
    (a split crawl's batch is its own)."""
    batch = options.batch_id or new_batch_id(datetime.now(UTC).replace(microsecond=0))
    return replace(options, split=split, partitions=workers, batch_id=batch)
