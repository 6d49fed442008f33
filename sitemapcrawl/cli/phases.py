"""The commands of the crawl phases: init, inject, detect, generate, fetch, parse, updatedb, crawl.

Each parses its options, builds the settings, calls its job and prints the
summary; `--split K/N` and `--workers N` run one split of a phase, or all of
it as worker processes. The job modules are imported inside the command
bodies so `--help` stays fast (tests/unit/test_cli_startup.py).
"""

# No `from __future__ import annotations` here: typer would then eval every
# annotation string (twice) at each start; real annotations are built once.
import contextlib
import sys
from pathlib import Path
from typing import Annotated

import typer

from sitemapcrawl import logfields
from sitemapcrawl.cli.console import EXIT_INTERRUPTED
from sitemapcrawl.cli.options import (
    BatchOption,
    DaskOption,
    DelayOption,
    DetectHostOption,
    DocumentsOnlyOption,
    FetchSplitOption,
    FetchSplitsOption,
    HeaderOption,
    MaxConnectionsOption,
    MaxPerHostOption,
    ModeOption,
    NetrcOption,
    OldPartitionOption,
    OldPartitionsOption,
    OldThreadsOption,
    ProbeOption,
    QueueByOption,
    SplitOption,
    SplitsOption,
    ThreadsPerHostOption,
    TopNOption,
    WaitOption,
    WarcOption,
    WorkersOption,
    renamed,
)
from sitemapcrawl.cli.shared import (
    State,
    access_flags,
    chosen_split,
    dask_address,
    echo_err,
    http_client,
    open_store,
    seed_lines,
    setting,
    split_count,
    split_runner,
    stage_progress,
)
from sitemapcrawl.config import MAX_NUMBER, TEN_YEARS, with_flags
from sitemapcrawl.errors import UsageError
from sitemapcrawl.modes import Compression, CountMode, CrawlMode, UpdateStep


def init(
    print_schema: Annotated[bool, typer.Option(
        "--print-schema", help="Print the HBase shell script for these options; create nothing.")] = False,
    split_keys: Annotated[Path | None, typer.Option(
        metavar="FILE", show_default=False,
        help="Pre-split webpage at these row keys, one a line [default: one region].")] = None,
    split_from_seeds: Annotated[Path | None, typer.Option(
        metavar="FILE", show_default=False,
        help="Pre-split webpage from a seed file: --regions shares of its hosts [default: none].")] = None,
    regions: Annotated[int, typer.Option(
        metavar="N", min=1, max=10_000, help="Regions for --split-from-seeds.")] = 8,
    compression: Annotated[Compression, typer.Option(
        help="Block compression of every family (the cluster must support it).")] = Compression.NONE,
    hbase_shell: Annotated[str | None, typer.Option(
        metavar="CMD", show_default=False,
        help=f"Runs a shell script (pre-split, namespace). {setting('hbase_shell')}")] = None,
) -> None:
    """Create the webpage, host, batch, history and batchrow tables (as hbase-schema/ describes them).

    Running it again changes nothing and says so. A table prefix `ns:` puts
    the tables in namespace ns. Pre-splitting and creating a namespace need
    the HBase shell (Thrift1 cannot): set hbase_shell, or print the script.

    \b
    Example: sitemapcrawl --table-prefix demo_ init
    Example: sitemapcrawl init --split-from-seeds seeds.txt --regions 16 \\
                 --compression gz --print-schema > schema.hbase
    """
    from sitemapcrawl.jobs.init import init_tables
    from sitemapcrawl.storage import schema

    settings = with_flags(State.settings, {"hbase_shell": hbase_shell})
    if split_keys is not None and split_from_seeds is not None:
        raise UsageError("give --split-keys or --split-from-seeds, not both")
    keys: tuple[str, ...] = ()
    if split_keys is not None:
        keys = schema.read_split_keys(split_keys)
    elif split_from_seeds is not None:
        keys = schema.split_keys_from_urls(schema.seed_urls(split_from_seeds), regions)
        if len(keys) < regions - 1:
            echo_err(f"init: the seeds name too few hosts for {regions} regions: {len(keys) + 1} regions")
    layout = schema.Layout(settings.table_prefix, compression, keys)
    if print_schema:
        sys.stdout.write(schema.shell_script(layout))
        return
    with open_store() as store:
        result = init_tables(store, layout, settings.hbase_shell)
    for name in result.created:
        shown = f" ({result.regions} regions)" if result.regions and name.endswith("webpage") else ""
        echo_err(f"created table {name}{shown}")
    for note in result.notes:
        echo_err(f"init: {note}")
    if not result.created:
        echo_err(f"tables {', '.join(result.existing)} exist; nothing to do")


def inject_command(
    seeds: Annotated[str, typer.Argument(metavar="FILE", help="Seed file, or - for standard input.")],
    overwrite_score: Annotated[
        bool, typer.Option(help="Replace the score of rows that exist (kept by default).")
    ] = False,
) -> None:
    """Inject seed URLs: one per line, with optional tab-separated key=value metadata.

    Keys: score, fetchInterval (seconds), depth, radius, sitemap=true,
    sitemaps=URL1 URL2. Bad lines are reported with their number and skipped.

    \b
    Example: printf 'http://127.0.0.2:8000/\\tdepth=2\\n' | sitemapcrawl inject -
    """
    from sitemapcrawl.jobs.inject import Rejected, inject
    from sitemapcrawl.web.rules import UrlRules

    rules = UrlRules.from_settings(State.settings)

    def report(rejected: Rejected) -> None:
        echo_err(f"line {rejected.line}: {rejected.reason}: {rejected.detail}")

    with contextlib.ExitStack() as stack, open_store() as store, stage_progress() as update:
        counts = inject(store, seed_lines(seeds, stack), rules, overwrite_score=overwrite_score,
                        on_reject=report, on_progress=lambda done: update("seed lines", done))
    echo_err(f"inject: {counts.summary()}")


def detect_command(
    host: DetectHostOption = None,
    probe_known_paths: ProbeOption = None,
    warc: WarcOption = None,
    max_connections: MaxConnectionsOption = None,
    header: HeaderOption = None,
    netrc: NetrcOption = None,
    old_max_connections: OldThreadsOption = None,
) -> None:
    """Read each host's robots.txt; record rules and crawl delay; inject its sitemaps.

    \b
    Example: sitemapcrawl --user-agent 'MyBot/1.0' detect --probe-known-paths
    """
    from sitemapcrawl.jobs.detect import detect
    from sitemapcrawl.web.robots_txt import HostReport
    from sitemapcrawl.web.rules import UrlRules

    max_connections = renamed(max_connections, old_max_connections, "--max-connections", "--threads")
    settings = with_flags(State.settings, {"warc_dir": warc, "max_connections": max_connections,
                                           **access_flags(header, netrc)})
    rules = UrlRules.from_settings(settings)

    def report(host_report: HostReport) -> None:
        usable = host_report.usable_sitemaps
        line = (f"{host_report.origin}: robots.txt {host_report.robots_status.value}"
                f" (HTTP {host_report.http_code if host_report.http_code is not None else '-'})"
                f", sitemaps {len(usable)}, new {host_report.new_sitemaps}")
        if host_report.error:
            line += f", error: {host_report.error}"
        echo_err(line)

    with http_client(settings, record=True) as client, open_store() as store:
        probe = settings.probe_known_paths if probe_known_paths is None else probe_known_paths
        counts = detect(store, client, rules, hosts=host or (), probe_known_paths=probe, on_host=report)
    echo_err(f"detect: {counts.summary()}")
    if counts.hosts == 0:
        echo_err("detect: no hosts in the table; inject seeds first")


def generate_command(
    top_n: TopNOption = None,
    max_per_host: MaxPerHostOption = None,
    count_mode: Annotated[CountMode, typer.Option(help="What --max-per-host counts per.")] = CountMode.HOST,
    fetch_splits: FetchSplitsOption = None,
    mode: ModeOption = None,
    batch_id: Annotated[str | None, typer.Option(metavar="ID", show_default=False,
                                                 help="Use this batch id [default: a new one].")] = None,
    queue_by: QueueByOption = None,
    split: SplitOption = None,
    splits: SplitsOption = None,
    workers: WorkersOption = 1,
    dask: DaskOption = None,
    sitemaps_only_docs: DocumentsOnlyOption = False,
    rescan: Annotated[bool, typer.Option("--rescan",
                                         help="Find the due URLs by a full scan of the table, not through the "
                                              "due index, and rebuild the index from it (a repair).")] = False,
    old_fetch_splits: OldPartitionsOption = None,
) -> None:
    """Select the due URLs, best first, and mark them as one batch to fetch.

    Prints the batch id on stdout; counts per fetch split and the top hosts on
    stderr. With --split K/N, N generates (the same --batch-id, which --split
    needs) make one batch; per-host caps hold exactly (a host's rows are in
    one split) and --topN is the batch's total, each split taking its part.
    Due URLs are read through the due index; --rescan rebuilds it.

    \b
    Example: sitemapcrawl generate --topN 10000 --max-per-host 500 \\
                 --fetch-splits 4
    Example: sitemapcrawl generate --split 0/2 --batch-id b1 --topN 10000
    """
    from sitemapcrawl.batch.workers import raise_failed, top_n_of_split
    from sitemapcrawl.jobs.generate import GenerateOptions, generate
    from sitemapcrawl.web.rules import UrlRules

    part = chosen_split(split, splits)
    fetch_splits = renamed(fetch_splits, old_fetch_splits, "--fetch-splits", "--partitions") or 1
    logfields.note(batch=batch_id, split=None if part.whole else part.text())
    options = GenerateOptions(top_n=top_n, max_per_host=max_per_host, count_mode=count_mode,
                              fetch_splits=fetch_splits, mode=mode or State.settings.crawl_mode,
                              batch_id=batch_id, queue_by=queue_by, split=part, documents_only=sitemaps_only_docs,
                              rescan=rescan)
    rules = UrlRules.from_settings(State.settings)
    results = None
    engine = dask_address(dask)
    if workers > 1 or engine:
        from sitemapcrawl.jobs.crawl import generate_workers

        with stage_progress() as update, split_runner(update, engine) as runner:
            counts, results = generate_workers(runner, State.settings, options, split_count(runner, workers))
    else:
        import dataclasses

        options = dataclasses.replace(options, top_n=top_n_of_split(top_n, part))
        with open_store() as store, stage_progress() as update:
            counts = generate(store, rules, options, on_progress=lambda done: update("due rows read", done))
    for line in counts.held_lines():
        echo_err(f"generate: warning: {line}")
    if counts.batch_id is None:
        echo_err(f"generate: nothing to fetch; no batch ({counts.summary()})")
        if results is not None:
            raise_failed(results)
        return
    typer.echo(counts.batch_id)
    for number, n in sorted(counts.by_fetch_split.items()):
        echo_err(f"fetch split {number}/{fetch_splits}: {n} URLs")
    for host, n in counts.by_host.most_common(10):
        echo_err(f"  {host}: {n}")
    echo_err(f"generate: {counts.summary()}")
    if results is not None:
        raise_failed(results)


def fetch_command(
    batch: BatchOption,
    split: FetchSplitOption = None,
    max_connections: MaxConnectionsOption = None,
    threads_per_host: ThreadsPerHostOption = None,
    delay: DelayOption = None,
    queue_by: QueueByOption = None,
    store_content: Annotated[
        bool | None, typer.Option("--store-content/--no-store-content", show_default=False,
                                  help=f"Keep page bodies too. {setting('store_content')}")
    ] = None,
    time_limit: Annotated[float | None, typer.Option(min=0, max=TEN_YEARS, metavar="SECONDS", show_default=False,
                                                     help="Stop starting URLs after SECONDS [default: none].")] = None,
    min_throughput: Annotated[
        float | None, typer.Option(min=0, max=MAX_NUMBER, metavar="PAGES_PER_S", show_default=False,
                                   help="Stop when below PAGES_PER_S after the warm-up [default: none].")
    ] = None,
    warmup: Annotated[float, typer.Option(min=0, max=TEN_YEARS, metavar="SECONDS",
                                          help="Seconds before --min-throughput is checked.")] = 30.0,
    wait: WaitOption = False,
    warc: WarcOption = None,
    header: HeaderOption = None,
    netrc: NetrcOption = None,
    old_split: OldPartitionOption = None,
    old_max_connections: OldThreadsOption = None,
) -> None:
    """Fetch a generated batch politely: one queue per host, robots.txt, crawl delay, conditional GET.

    Rerunning the same batch skips what is done; Ctrl-C stops after writing what finished.
    One worker per fetch split (--split K/N): a second one on the same split
    stops, naming the holder.

    \b
    Example: sitemapcrawl --user-agent 'MyBot/1.0' fetch --split 0/4 \\
                 --batch 20250101120000-1a2b
    """
    from sitemapcrawl.fetcher.model import FetchOptions, FetchProgress, parse_split
    from sitemapcrawl.jobs.fetch import fetch
    from sitemapcrawl.web.rules import UrlRules

    flag = "--partition" if old_split is not None else "--split"
    split = renamed(split, old_split, "--split", "--partition")
    max_connections = renamed(max_connections, old_max_connections, "--max-connections", "--threads")
    logfields.note(batch=batch, split=split)
    settings = with_flags(State.settings, {"max_connections": max_connections, "threads_per_host": threads_per_host,
                                           "delay": delay, "queue_by": queue_by, "store_content": store_content,
                                           "warc_dir": warc, **access_flags(header, netrc)})
    options = FetchOptions.from_settings(
        settings, batch, fetch_split=parse_split(split, flag) if split else None,
        time_limit=time_limit, min_throughput=min_throughput, warmup=warmup, wait=wait)
    rules = UrlRules.from_settings(settings)
    with http_client(settings, record=True) as client, open_store() as store, stage_progress() as update:

        def show(p: FetchProgress) -> None:
            update("fetch", p.done, p.total, p.errors)

        counts = fetch(store, client, rules, options, on_progress=show)
    for line in counts.host_lines():
        echo_err(f"  {line}")
    echo_err(f"fetch: {counts.summary()}")
    if counts.total == 0 and not counts.already_done:
        echo_err(f"fetch: batch {batch} has no URLs{' in this split' if split else ''}; nothing to do")
    if counts.stopped == "interrupted":
        raise typer.Exit(EXIT_INTERRUPTED)


def parse_command(
    batch: BatchOption,
    mode: ModeOption = None,
    wait: WaitOption = False,
    split: SplitOption = None,
    splits: SplitsOption = None,
    workers: WorkersOption = 1,
    dask: DaskOption = None,
) -> None:
    """Parse a fetched batch: sitemaps become entries on their URLs' rows, HTML pages get outlinks.

    Blacklisted sitemaps are never parsed; one bad entry never stops the rest.
    Rerunning skips what is done. One worker per batch, or per split (--split K/N):
    the batch is parsed when every split is.

    \b
    Example: sitemapcrawl parse --batch 20250101120000-1a2b --mode sitemap-only
    Example: sitemapcrawl parse --batch 20250101120000-1a2b --workers 4
    """
    from sitemapcrawl.jobs.parse import SitemapOutcome, parse_batch
    from sitemapcrawl.web.rules import UrlRules

    part = chosen_split(split, splits)
    logfields.note(batch=batch, split=None if part.whole else part.text())
    crawl_mode_value = mode or State.settings.crawl_mode
    engine = dask_address(dask)
    if workers > 1 or engine:
        from sitemapcrawl.batch.workers import raise_failed
        from sitemapcrawl.jobs.crawl import parse_workers

        with stage_progress() as update, split_runner(update, engine) as runner:
            merged, results = parse_workers(runner, State.settings, batch, crawl_mode_value, part,
                                            split_count(runner, workers), wait)
        echo_err(f"parse: {merged.summary()}")
        raise_failed(results)
        return
    rules = UrlRules.from_settings(State.settings)

    def report(outcome: SitemapOutcome) -> None:
        kind = outcome.kind or "not read"
        echo_err(f"{outcome.url}: {kind}, {outcome.entries} entries"
                 + "".join(f"\n  {problem}" for problem in outcome.problems)
                 + "".join(f"\n  lenient read: {warning}" for warning in outcome.warnings))

    with open_store() as store, stage_progress() as update:
        counts = parse_batch(store, rules, batch, mode=crawl_mode_value,
                             on_progress=lambda done: update("rows parsed", done), on_sitemap=report, wait=wait,
                             split=part)
    echo_err(f"parse: {counts.summary()}")
    if counts.rows == 0:
        echo_err(f"parse: batch {batch} has no fetched rows; nothing to do")


def updatedb_command(
    batch: BatchOption,
    mode: ModeOption = None,
    wait: WaitOption = False,
    split: SplitOption = None,
    splits: SplitsOption = None,
    workers: WorkersOption = 1,
    dask: DaskOption = None,
    rescore: Annotated[bool, typer.Option("--rescore", help="Score every sitemap from scratch (a repair: "
                                                            "after changing pins or thresholds) instead of "
                                                            "the sitemaps the batch touched.")] = False,
    step: Annotated[UpdateStep, typer.Option(help="Only spread this split's links, or only merge (once every "
                                                  "split spread): two phases, no split waiting for another.")
                    ] = UpdateStep.ALL,
) -> None:
    """Merge a parsed batch: new rows for found URLs, merged hints, depth/radius, next fetch times.

    Existing rows are merged, never clobbered. Rerunning changes nothing more.
    One worker per batch, or per split (--split K/N): splits merge once every
    split has spread its links (a split waits for the others, or run every
    split's --step spread, then every split's --step merge), and the last one
    runs the quality step.

    \b
    Example: sitemapcrawl updatedb --batch 20250101120000-1a2b
    Example: sitemapcrawl updatedb --batch 20250101120000-1a2b --split 1/2
    Example: sitemapcrawl updatedb --batch 20250101120000-1a2b --split 1/2 \\
                 --step spread
    Example: sitemapcrawl updatedb --batch 20250101120000-1a2b --rescore
    """
    from sitemapcrawl.jobs.updatedb import updatedb
    from sitemapcrawl.web.rules import UrlRules

    part = chosen_split(split, splits)
    logfields.note(batch=batch, split=None if part.whole else part.text())
    crawl_mode_value = mode or State.settings.crawl_mode
    engine = dask_address(dask)
    if workers > 1 or engine:
        if rescore:
            raise UsageError("--rescore runs in one process: leave out --workers and --dask")
        if step is not UpdateStep.ALL:
            raise UsageError("--step is one split's: leave out --workers and --dask (their tasks run both steps)")
        from sitemapcrawl.batch.workers import raise_failed
        from sitemapcrawl.jobs.crawl import updatedb_workers

        with stage_progress() as update, split_runner(update, engine) as runner:
            merged, results = updatedb_workers(runner, State.settings, batch, crawl_mode_value, part,
                                               split_count(runner, workers), wait)
        echo_err(f"updatedb: {merged.summary()}")
        raise_failed(results)
        return
    rules = UrlRules.from_settings(State.settings)
    with open_store() as store, stage_progress() as update:
        counts = updatedb(store, rules, batch, mode=crawl_mode_value,
                          on_progress=lambda done: update("rows merged", done), wait=wait, split=part,
                          rescore=rescore, step=step)
    echo_err(f"updatedb: {counts.summary()}")
    if counts.scheduled == 0 and counts.merged == 0:
        echo_err(f"updatedb: batch {batch} has nothing (left) to merge; nothing to do")


def crawl_command(
    seeds: Annotated[str | None, typer.Argument(metavar="FILE", show_default=False,
                                                help="Seed file, or - for standard input; none: continue.")] = None,
    mode: ModeOption = None,
    rounds: Annotated[int, typer.Option(min=1, max=MAX_NUMBER, metavar="N",
                                        help="Rounds of generate, fetch, parse, updatedb.")] = 3,
    top_n: TopNOption = None,
    max_per_host: MaxPerHostOption = None,
    fetch_splits: FetchSplitsOption = None,
    max_connections: MaxConnectionsOption = None,
    threads_per_host: ThreadsPerHostOption = None,
    delay: DelayOption = None,
    probe_known_paths: ProbeOption = None,
    sitemaps_only_docs: DocumentsOnlyOption = False,
    workers: WorkersOption = 1,
    dask: DaskOption = None,
    split: SplitOption = None,
    splits: SplitsOption = None,
    warc: WarcOption = None,
    header: HeaderOption = None,
    netrc: NetrcOption = None,
    old_fetch_splits: OldPartitionsOption = None,
    old_max_connections: OldThreadsOption = None,
) -> None:
    """Crawl: inject SEEDS, detect sitemaps, then rounds of generate, fetch, parse and updatedb.

    Stops after --rounds or when nothing is due. A second crawl on the same
    table continues: it first finishes any batch an earlier run left
    unfinished (killed, interrupted, stopped by a time limit), then fetches
    only due rows. Missing tables are created first (as `init` would), and
    said so on stderr. The closing totals come from the counters updatedb
    keeps (as `serve` shows them); `report` counts every row.
    --workers N runs each phase as N local processes or Dask tasks (fetch
    as N fetch splits); --split K/N is this machine's split of N machines.

    \b
    Example: sitemapcrawl --user-agent 'MyBot/1.0' crawl seeds.txt \\
                 --mode sitemap-only --rounds 3
    Example: sitemapcrawl --user-agent 'MyBot/1.0' crawl --workers 4 --split 0/2
    Example: sitemapcrawl crawl seeds.txt --split auto --splits 8
    Example: sitemapcrawl --user-agent 'MyBot/1.0' crawl --workers 8 \\
                 --dask tcp://scheduler:8786
    Example: sitemapcrawl --user-agent 'MyBot/1.0' crawl seeds.txt \\
                 --netrc ~/.netrc --header 'Accept-Language: de'
    """
    from sitemapcrawl.clock import utc_now
    from sitemapcrawl.jobs.crawl import CrawlOptions, crawl
    from sitemapcrawl.jobs.init import init_tables
    from sitemapcrawl.report.panels import take_counted_snapshot
    from sitemapcrawl.report.text import sitemap_outcomes
    from sitemapcrawl.web.rules import UrlRules

    max_connections = renamed(max_connections, old_max_connections, "--max-connections", "--threads")
    settings = with_flags(State.settings, {"max_connections": max_connections, "threads_per_host": threads_per_host,
                                           "delay": delay, "warc_dir": warc, **access_flags(header, netrc)})
    rules = UrlRules.from_settings(settings)
    default_mode = CrawlMode.SITEMAP_ONLY if sitemaps_only_docs else settings.crawl_mode
    options = CrawlOptions(mode=mode or default_mode, rounds=rounds, top_n=top_n,
                           max_per_host=max_per_host,
                           fetch_splits=renamed(fetch_splits, old_fetch_splits, "--fetch-splits",
                                                "--partitions") or 1,
                           probe_known_paths=settings.probe_known_paths if probe_known_paths is None
                           else probe_known_paths,
                           documents_only=sitemaps_only_docs,
                           split=chosen_split(split, splits))
    logfields.note(split=None if options.split.whole else options.split.text())
    engine = dask_address(dask)
    if workers > 1 or split is not None:
        from sitemapcrawl.batch.workers import sub_splits

        sub_splits(options.split, workers)  # UsageError before anything is done, for too many splits
    with contextlib.ExitStack() as stack:
        # The inputs first (seed file, user agent, WARC folder): one that fails leaves no table behind.
        lines = seed_lines(seeds, stack)
        client = stack.enter_context(http_client(settings, record=True))
        store = stack.enter_context(open_store())
        for name in init_tables(store).created:
            echo_err(f"crawl: created table {name} (it did not exist)")
        update = stack.enter_context(stage_progress())
        phases = None
        if workers > 1 or split is not None or engine:
            from sitemapcrawl.jobs.crawl import Splits

            runner = stack.enter_context(split_runner(update, engine, quiet=True))
            phases = Splits(runner, settings, split_count(runner, workers), options.split)
        result = crawl(store, client, rules, lines, options,
                       on_stage=update, on_round=lambda r: echo_err(r.line()),
                       on_reject=lambda r: echo_err(f"line {r.line}: {r.reason}: {r.detail}"),
                       on_resume=lambda line: echo_err(f"crawl: {line}"), phases=phases)
        # From the counters updatedb keeps (the host table), not a scan of every row: flat in the table's size.
        final = take_counted_snapshot(store, utc_now()).report
    echo_err(f"crawl: {len(result.rounds)} rounds, stopped: {result.stopped}")
    for line in list(final.lines())[:3]:
        echo_err(f"crawl: {line}")
    echo_err("crawl: sitemaps " + ", ".join(f"{k} {n}" for k, n in sorted(sitemap_outcomes(final).items())))
    if result.stopped == "interrupted":
        raise typer.Exit(EXIT_INTERRUPTED)
