"""The command line: parse options, build the settings once, call a job, print.

No crawl logic lives here. Data goes to stdout, messages to stderr. Every
`SitemapCrawlError` becomes one line on stderr and its exit code in `main`;
nothing else is caught, so a bug still shows its traceback.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import sys
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from typer.core import TyperGroup

from sitemapcrawl import __version__
from sitemapcrawl.config import Settings, load_settings
from sitemapcrawl.errors import SitemapCrawlError, SitemapError, UsageError
from sitemapcrawl.http import PoliteHttpClient, open_source
from sitemapcrawl.jobs.crawl import CrawlOptions, crawl
from sitemapcrawl.jobs.detect import HostReport, detect
from sitemapcrawl.jobs.fetch import FetchOptions, FetchProgress, QueueBy, fetch, parse_partition
from sitemapcrawl.jobs.generate import CountMode, GenerateOptions, crawl_mode, generate
from sitemapcrawl.jobs.init import init_tables
from sitemapcrawl.jobs.inject import Rejected, inject
from sitemapcrawl.jobs.parse import SitemapOutcome, parse_batch
from sitemapcrawl.jobs.readdb import collect_stats, read_row, rows_with_prefix
from sitemapcrawl.jobs.rules import UrlRules
from sitemapcrawl.jobs.updatedb import updatedb
from sitemapcrawl.report import build_report, sitemap_outcomes
from sitemapcrawl.report_html import write_report
from sitemapcrawl.report_panels import take_snapshot
from sitemapcrawl.serve import ServeOptions, serve
from sitemapcrawl.sitemaps import ScopeContext, SitemapLimits, parse_sitemap, render
from sitemapcrawl.sitemaps.tree import walk_tree
from sitemapcrawl.store import Store
from sitemapcrawl.urls import CanonicalRules


class _ErrorReportingGroup(TyperGroup):
    """The one place where our errors become a stderr line and an exit code."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except SitemapCrawlError as exc:
            typer.echo(f"sitemapcrawl: error: {exc}", err=True)
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            typer.echo("sitemapcrawl: interrupted", err=True)
            raise typer.Exit(130) from None


app = typer.Typer(
    cls=_ErrorReportingGroup,
    name="sitemapcrawl",
    help="An HBase-backed, sitemap-focused web crawler.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
sitemap_app = typer.Typer(
    help="Read sitemaps without HBase: one document, or a site's whole tree.",
    no_args_is_help=True,
)
app.add_typer(sitemap_app, name="sitemap")

log = logging.getLogger("sitemapcrawl")


class State:
    """What the global options give every command: the settings, built once."""

    settings: Settings = Settings()
    quiet: bool = False


def echo_err(message: str) -> None:
    """Print a message for a person on stderr (never data)."""
    if not State.quiet:
        typer.echo(message, err=True)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"sitemapcrawl {__version__}")
        raise typer.Exit()


@app.callback()
def global_options(
    hbase: Annotated[
        str | None,
        typer.Option(help="HBase Thrift server HOST:PORT [env SITEMAPCRAWL_HBASE; default 127.0.0.1:9090]."),
    ] = None,
    table_prefix: Annotated[
        str | None, typer.Option(help="Prefix for table names, so crawls can share one HBase.")
    ] = None,
    config: Annotated[
        Path | None, typer.Option("--config", help="TOML settings file.")
    ] = None,
    user_agent: Annotated[
        str | None,
        typer.Option(help="User-Agent for every request [env SITEMAPCRAWL_USER_AGENT]."),
    ] = None,
    url_filter: Annotated[
        Path | None, typer.Option(help="File of ordered +regex / -regex URL filter lines.")
    ] = None,
    sitemap_blacklist: Annotated[
        Path | None,
        typer.Option(help="File of hosts, URL prefixes or re:REGEX whose sitemaps are skipped."),
    ] = None,
    verbose: Annotated[int, typer.Option("--verbose", "-v", count=True, help="More logging.")] = 0,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Only errors on stderr.")] = False,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """An HBase-backed, sitemap-focused web crawler.

    Example: sitemapcrawl --hbase 127.0.0.1:9090 init
    """
    level = logging.ERROR if quiet else (logging.WARNING, logging.INFO, logging.DEBUG)[min(verbose, 2)]
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    State.quiet = quiet
    flags: dict[str, Any] = {
        "hbase": hbase,
        "table_prefix": table_prefix,
        "user_agent": user_agent,
        "url_filter": url_filter,
        "sitemap_blacklist": sitemap_blacklist,
    }
    State.settings = load_settings(config_file=config, flags=flags)
    for key in State.settings.extra:
        log.warning("config file: unknown setting %r ignored", key)


def open_store() -> Store:
    """The store for the configured HBase address and table prefix."""
    return Store(State.settings)


@app.command()
def init() -> None:
    """Create the webpage and host tables (as hbase-schema/ describes them).

    Running it again changes nothing and says so.

    Example: sitemapcrawl --table-prefix demo_ init
    """
    with open_store() as store:
        result = init_tables(store)
    for name in result.created:
        echo_err(f"created table {name}")
    if not result.created:
        echo_err(f"tables {', '.join(result.existing)} exist; nothing to do")


@app.command()
def readdb(
    url: Annotated[str | None, typer.Argument(help="The URL whose row to show.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object for URL.")] = False,
    stats: Annotated[bool, typer.Option("--stats", help="Rows by status, sitemap rows, hosts.")] = False,
    prefix: Annotated[
        str | None, typer.Option("--prefix", help="Rows whose URL starts with this prefix.")
    ] = None,
    jsonl: Annotated[bool, typer.Option("--jsonl", help="With --prefix: one JSON object per line.")] = False,
) -> None:
    """Read rows back from HBase, decoded: one URL, a URL prefix, or statistics.

    Example: sitemapcrawl readdb http://127.0.0.2:8000/ --json
    """
    if sum([url is not None, stats, prefix is not None]) != 1:
        raise UsageError("readdb: give exactly one of URL, --stats, --prefix")
    with open_store() as store:
        if url is not None:
            view = read_row(store, url, CanonicalRules.from_settings(State.settings))
            if as_json:
                typer.echo(json.dumps(view.as_json(), ensure_ascii=False))
            else:
                typer.echo(f"{view.url}\n  key  {view.key}")
                for name, value in view.cells.items():
                    typer.echo(f"  {name:<8} {value}")
        elif prefix is not None:
            count = 0
            for view in rows_with_prefix(store, prefix, CanonicalRules.from_settings(State.settings)):
                count += 1
                typer.echo(json.dumps(view.as_json(), ensure_ascii=False) if jsonl else view.url)
            echo_err(f"{count} rows")
        else:
            totals = collect_stats(store)
            typer.echo(f"rows\t{totals.rows}")
            for status, count in sorted(totals.by_status.items()):
                typer.echo(f"status {status}\t{count}")
            typer.echo(f"sitemap rows\t{totals.sitemap_rows}")
            typer.echo(f"found in sitemaps\t{totals.found_in_sitemaps}")
            typer.echo(f"hosts\t{totals.hosts}")
            typer.echo(f"host rows\t{totals.host_rows}")


@contextlib.contextmanager
def progress_bar(*columns: Any) -> Iterator[Progress | None]:
    """A rich progress display on stderr, or None with --quiet or when stderr is no terminal."""
    if State.quiet or not sys.stderr.isatty():
        yield None
        return
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        yield bar


@contextlib.contextmanager
def stage_progress() -> Iterator[Callable[[str, int], None]]:
    """One progress line per stage on stderr; yields `update(stage, done)`."""
    with progress_bar(SpinnerColumn(), TextColumn("{task.description} {task.completed}"),
                      TimeElapsedColumn()) as bar:
        tasks: dict[str, Any] = {}

        def update(stage: str, done: int) -> None:
            if bar is None:
                return
            if stage not in tasks:
                tasks[stage] = bar.add_task(stage)
            bar.update(tasks[stage], completed=done)

        yield update


@contextlib.contextmanager
def progress(description: str) -> Iterator[Callable[[int], None]]:
    """A one-stage progress line on stderr; yields `update(done)`."""
    with stage_progress() as update:
        yield lambda done: update(description, done)


@contextlib.contextmanager
def fetch_progress() -> Iterator[Callable[[FetchProgress], None]]:
    """A fetch progress bar on stderr: pages done/total, pages/s, bytes, errors, active queues."""
    columns = [BarColumn(), TextColumn("{task.completed}/{task.total} pages {task.fields[info]}"),
               TimeElapsedColumn()]
    with progress_bar(*columns) as bar:
        if bar is None:
            yield lambda snapshot: None
            return
        task = bar.add_task("fetch", total=None, info="")

        def show(p: FetchProgress) -> None:
            info = f"{p.pages_per_s:.1f}/s, {p.bytes:,} bytes, {p.errors} errors, {p.active_queues} queues"
            bar.update(task, completed=p.done, total=p.total, info=info)

        yield show


@contextlib.contextmanager
def http_client(settings: Settings, max_bytes: int | None = None) -> Iterator[PoliteHttpClient]:
    """The polite HTTP client of `settings`, closed after use; UsageError without a user agent."""
    client = PoliteHttpClient.from_settings(settings, max_bytes=max_bytes)
    try:
        yield client
    finally:
        client.close()


def _seed_lines(seeds: str | None, stack: contextlib.ExitStack) -> Iterable[str]:
    """The lines of a seed file, of standard input (`-`), or none; the file closes with `stack`."""
    if seeds is None:
        return []
    if seeds == "-":
        return sys.stdin
    try:
        return stack.enter_context(open(seeds, encoding="utf-8", errors="replace"))
    except OSError as exc:
        raise UsageError(f"cannot read seeds {seeds}: {exc.strerror}") from None


@app.command("inject")
def inject_command(
    seeds: Annotated[str, typer.Argument(help="Seed file, or - for standard input.")],
    overwrite_score: Annotated[
        bool, typer.Option(help="Replace the score of rows that exist (kept by default).")
    ] = False,
) -> None:
    """Inject seed URLs: one per line, with optional tab-separated key=value metadata.

    Keys: score, fetchInterval (seconds), depth, radius, sitemap=true,
    sitemaps=URL1 URL2. Bad lines are reported with their number and skipped.

    Example: printf 'http://127.0.0.2:8000/\tdepth=2\n' | sitemapcrawl inject -
    """
    rules = UrlRules.from_settings(State.settings)

    def report(rejected: Rejected) -> None:
        echo_err(f"line {rejected.line}: {rejected.reason}: {rejected.detail}")

    with contextlib.ExitStack() as stack, open_store() as store, progress("seed lines") as update:
        counts = inject(store, _seed_lines(seeds, stack), rules, overwrite_score=overwrite_score,
                        on_reject=report, on_progress=update)
    echo_err(f"inject: {counts.summary()}")


@app.command("detect")
def detect_command(
    host: Annotated[
        list[str] | None, typer.Option("--host", help="Check only this host or origin (repeatable).")
    ] = None,
    probe_known_paths: Annotated[
        bool, typer.Option(help="Probe well-known sitemap paths when robots.txt lists none.")
    ] = False,
) -> None:
    """Read each host's robots.txt; record rules and crawl delay; inject its sitemaps.

    Example: sitemapcrawl --user-agent 'MyBot/1.0' detect --probe-known-paths
    """
    rules = UrlRules.from_settings(State.settings)

    def report(host_report: HostReport) -> None:
        usable = host_report.usable_sitemaps
        line = (f"{host_report.origin}: robots.txt {host_report.robots_status.value}"
                f" (HTTP {host_report.http_code if host_report.http_code is not None else '-'})"
                f", sitemaps {len(usable)}, new {host_report.new_sitemaps}")
        if host_report.error:
            line += f", error: {host_report.error}"
        echo_err(line)

    with http_client(State.settings) as client, open_store() as store:
        counts = detect(store, client, rules, hosts=host or (), probe_known_paths=probe_known_paths,
                        on_host=report)
    echo_err(f"detect: {counts.summary()}")
    if counts.hosts == 0:
        echo_err("detect: no hosts in the table; inject seeds first")


@sitemap_app.command("parse")
def sitemap_parse(
    source: Annotated[str, typer.Argument(help="A sitemap URL or a local file path.")],
    jsonl: Annotated[bool, typer.Option("--jsonl", help="One JSON object per entry.")] = False,
    strict: Annotated[
        bool | None,
        typer.Option("--strict/--no-strict", help="Drop URLs outside the sitemap's scope."),
    ] = None,
    max_urls: Annotated[int | None, typer.Option(min=0, help="Entries kept [50000].")] = None,
    max_bytes: Annotated[
        int | None, typer.Option(min=0, help="Uncompressed bytes read [10000000].")
    ] = None,
) -> None:
    """Read one sitemap document (no recursion) and print its entries.

    Any format (XML urlset or index, gzip, zip, text, RSS, Atom), detected from
    the bytes. Warnings go to stderr; the exit code is 0 when the document was
    read as a sitemap.

    Example: sitemapcrawl --user-agent 'MyBot/1.0' sitemap parse https://example.com/sitemap.xml
    """
    settings = State.settings
    limits = SitemapLimits.from_settings(settings, max_urls=max_urls, max_bytes=max_bytes)
    scope = ScopeContext(strict=settings.strict_scope if strict is None else strict)
    with open_source(source, settings, max_bytes=limits.max_bytes) as doc_source:
        document = parse_sitemap(doc_source.data, doc_source.url, limits=limits, scope=scope)
        if not jsonl:
            typer.echo(render.TABLE_HEADER)
        for entry in document:
            typer.echo(render.json_line(entry) if jsonl else render.table_row(entry))
    for line in render.report_lines(document.report):
        echo_err(line)
    echo_err(render.report_summary(document.kind, document.report))


@sitemap_app.command("tree")
def sitemap_tree(
    url: Annotated[str, typer.Argument(help="A homepage or a sitemap URL.")],
    jsonl: Annotated[bool, typer.Option("--jsonl", help="One JSON object per sitemap.")] = False,
    strict: Annotated[
        bool | None,
        typer.Option("--strict/--no-strict", help="Drop URLs outside each sitemap's scope."),
    ] = None,
) -> None:
    """Find a site's sitemaps (robots.txt, well-known paths) and follow indexes.

    Prints one line per sitemap, indented by depth, with its type, counts and
    problems. Loops and indexes deeper than max_index_depth are not followed.

    Example: sitemapcrawl --user-agent 'MyBot/1.0' sitemap tree https://example.com/
    """
    settings = State.settings
    limits = SitemapLimits.from_settings(settings)
    totals = render.TreeTotals()
    strict = settings.strict_scope if strict is None else strict
    with http_client(settings, max_bytes=limits.max_bytes) as client:
        for node in walk_tree(url, client, limits=limits, strict=strict):
            totals.add(node)
            typer.echo(render.tree_json_line(node) if jsonl else render.tree_line(node))
    echo_err(totals.line())
    if totals.sitemaps == 0:
        raise SitemapError(f"no sitemap could be read for {url}")


@app.command("generate")
def generate_command(
    top_n: Annotated[int | None, typer.Option("--topN", min=1, help="At most this many URLs in the batch.")] = None,
    max_per_host: Annotated[
        int | None, typer.Option(min=1, help="At most this many URLs per host (or domain, see --count-mode).")
    ] = None,
    count_mode: Annotated[CountMode, typer.Option(help="What --max-per-host counts per.")] = CountMode.HOST,
    partitions: Annotated[int, typer.Option(min=1, help="Fetch partitions: hash(host) mod N.")] = 1,
    mode: Annotated[
        str | None, typer.Option(help="sitemap-only, mixed or links-only (setting crawl_mode, default mixed).")
    ] = None,
    batch_id: Annotated[str | None, typer.Option(help="Use this batch id instead of a new one.")] = None,
) -> None:
    """Select the due URLs, best first, and mark them as one batch to fetch.

    Prints the batch id on stdout; counts per partition and the top hosts on stderr.

    Example: sitemapcrawl generate --topN 10000 --max-per-host 500 --partitions 4
    """
    options = GenerateOptions(top_n=top_n, max_per_host=max_per_host, count_mode=count_mode,
                              partitions=partitions, mode=crawl_mode(mode or State.settings.crawl_mode),
                              batch_id=batch_id)
    rules = UrlRules.from_settings(State.settings)
    with open_store() as store, progress("due rows read") as update:
        counts = generate(store, rules, options, on_progress=update)
    if counts.batch_id is None:
        echo_err(f"generate: nothing to fetch; no batch ({counts.summary()})")
        return
    typer.echo(counts.batch_id)
    for part, n in sorted(counts.by_partition.items()):
        echo_err(f"partition {part}/{partitions}: {n} URLs")
    for host, n in counts.by_host.most_common(10):
        echo_err(f"  {host}: {n}")
    echo_err(f"generate: {counts.summary()}")


@app.command("fetch")
def fetch_command(
    batch: Annotated[str, typer.Option("--batch", help="The batch id generate printed.")],
    partition: Annotated[str | None, typer.Option(help="K/N: fetch partition K (0-based) of N only.")] = None,
    threads: Annotated[int | None, typer.Option(min=1, help="Worker threads (setting threads, default 8).")] = None,
    threads_per_host: Annotated[
        int | None, typer.Option(min=1, help="Requests in flight per host (default 1).")
    ] = None,
    delay: Annotated[
        float | None, typer.Option(min=0, help="Seconds between requests to a host (default 1.0).")
    ] = None,
    queue_by: Annotated[QueueBy | None, typer.Option(help="One queue per host name or per IP (default host).")] = None,
    store_content: Annotated[
        bool | None, typer.Option("--store-content/--no-store-content", help="Keep page bodies too.")
    ] = None,
    time_limit: Annotated[float | None, typer.Option(min=0, help="Stop starting URLs after SECONDS.")] = None,
    min_throughput: Annotated[
        float | None, typer.Option(min=0, help="Stop when below PAGES_PER_S after the warm-up.")
    ] = None,
    warmup: Annotated[float, typer.Option(min=0, help="Seconds before --min-throughput is checked.")] = 30.0,
) -> None:
    """Fetch a generated batch politely: one queue per host, robots.txt, crawl delay, conditional GET.

    Rerunning the same batch skips what is done; Ctrl-C stops after writing what finished.

    Example: sitemapcrawl --user-agent 'MyBot/1.0' fetch --batch 20250101120000-1a2b --partition 0/4
    """
    settings = dataclasses.replace(State.settings, threads=threads or State.settings.threads,
                                   delay=State.settings.delay if delay is None else delay)
    options = FetchOptions.from_settings(
        settings, batch, partition=parse_partition(partition) if partition else None,
        threads_per_host=threads_per_host, queue_by=queue_by, store_content=store_content,
        time_limit=time_limit, min_throughput=min_throughput, warmup=warmup)
    rules = UrlRules.from_settings(settings)
    with http_client(settings) as client, open_store() as store, fetch_progress() as show:
        counts = fetch(store, client, rules, options, on_progress=show)
    for line in counts.host_lines():
        echo_err(f"  {line}")
    echo_err(f"fetch: {counts.summary()}")
    if counts.total == 0 and not counts.already_done:
        echo_err(f"fetch: batch {batch} has no URLs{' in this partition' if partition else ''}; nothing to do")
    if counts.stopped == "interrupted":
        raise typer.Exit(130)


@app.command("parse")
def parse_command(
    batch: Annotated[str, typer.Option("--batch", help="The batch id fetch worked on.")],
    mode: Annotated[
        str | None, typer.Option(help="sitemap-only, mixed or links-only (setting crawl_mode, default mixed).")
    ] = None,
) -> None:
    """Parse a fetched batch: sitemaps become entries on their URLs' rows, HTML pages get outlinks.

    Blacklisted sitemaps are never parsed; one bad entry never stops the rest.
    Rerunning skips what is done.

    Example: sitemapcrawl parse --batch 20250101120000-1a2b --mode sitemap-only
    """
    rules = UrlRules.from_settings(State.settings)

    def report(outcome: SitemapOutcome) -> None:
        kind = outcome.kind or "not read"
        echo_err(f"{outcome.url}: {kind}, {outcome.entries} entries"
                 + "".join(f"\n  {problem}" for problem in outcome.problems))

    with open_store() as store, progress("rows parsed") as update:
        counts = parse_batch(store, rules, batch, mode=crawl_mode(mode or State.settings.crawl_mode),
                             on_progress=update, on_sitemap=report)
    echo_err(f"parse: {counts.summary()}")
    if counts.rows == 0:
        echo_err(f"parse: batch {batch} has no fetched rows; nothing to do")


@app.command("updatedb")
def updatedb_command(
    batch: Annotated[str, typer.Option("--batch", help="The batch id parse worked on.")],
    mode: Annotated[
        str | None, typer.Option(help="sitemap-only, mixed or links-only (setting crawl_mode, default mixed).")
    ] = None,
) -> None:
    """Merge a parsed batch: new rows for found URLs, merged hints, depth/radius, next fetch times.

    Existing rows are merged, never clobbered. Rerunning changes nothing more.

    Example: sitemapcrawl updatedb --batch 20250101120000-1a2b
    """
    rules = UrlRules.from_settings(State.settings)
    with open_store() as store, progress("rows merged") as update:
        counts = updatedb(store, rules, batch, mode=crawl_mode(mode or State.settings.crawl_mode),
                          on_progress=update)
    echo_err(f"updatedb: {counts.summary()}")
    if counts.scheduled == 0 and counts.merged == 0:
        echo_err(f"updatedb: batch {batch} has nothing (left) to merge; nothing to do")


@app.command("crawl")
def crawl_command(
    seeds: Annotated[str | None, typer.Argument(help="Seed file, or - for standard input; none: continue.")] = None,
    mode: Annotated[
        str | None, typer.Option(help="sitemap-only, mixed or links-only (setting crawl_mode, default mixed).")
    ] = None,
    rounds: Annotated[int, typer.Option(min=1, help="Rounds of generate, fetch, parse, updatedb.")] = 3,
    top_n: Annotated[int | None, typer.Option("--topN", min=1, help="At most this many URLs per round.")] = None,
    max_per_host: Annotated[int | None, typer.Option(min=1, help="At most this many URLs per host per round.")] = None,
    partitions: Annotated[int, typer.Option(min=1, help="Fetch partitions (host hash).")] = 1,
    threads: Annotated[int | None, typer.Option(min=1, help="Worker threads (default 8).")] = None,
    threads_per_host: Annotated[int | None, typer.Option(min=1, help="Requests in flight per host.")] = None,
    delay: Annotated[float | None, typer.Option(min=0, help="Seconds between requests to a host.")] = None,
    probe_known_paths: Annotated[
        bool, typer.Option(help="Probe well-known sitemap paths when robots.txt lists none.")
    ] = False,
    sitemaps_only_docs: Annotated[
        bool, typer.Option("--sitemaps-only-docs",
                           help="Sitemap-only inventory: fetch sitemap documents alone; record listed URLs unfetched.")
    ] = False,
) -> None:
    """Crawl: inject SEEDS, detect sitemaps, then rounds of generate, fetch, parse and updatedb.

    Stops after --rounds or when nothing is due. A second crawl on the same
    table continues: only due rows are fetched again.

    Example: sitemapcrawl --user-agent 'MyBot/1.0' crawl seeds.txt --mode sitemap-only --rounds 3
    """
    settings = dataclasses.replace(
        State.settings, threads=threads or State.settings.threads,
        threads_per_host=threads_per_host or State.settings.threads_per_host,
        delay=State.settings.delay if delay is None else delay)
    rules = UrlRules.from_settings(settings)
    default_mode = "sitemap-only" if sitemaps_only_docs else settings.crawl_mode
    options = CrawlOptions(mode=crawl_mode(mode or default_mode), rounds=rounds, top_n=top_n,
                           max_per_host=max_per_host, partitions=partitions, probe_known_paths=probe_known_paths,
                           documents_only=sitemaps_only_docs)
    with contextlib.ExitStack() as stack, open_store() as store, stage_progress() as update:
        client = stack.enter_context(http_client(settings))
        result = crawl(store, client, rules, _seed_lines(seeds, stack), options,
                       on_stage=update, on_round=lambda r: echo_err(r.line()),
                       on_reject=lambda r: echo_err(f"line {r.line}: {r.reason}: {r.detail}"))
        final = build_report(store)
    echo_err(f"crawl: {len(result.rounds)} rounds, stopped: {result.stopped}")
    for line in list(final.lines())[:3]:
        echo_err(f"crawl: {line}")
    echo_err("crawl: sitemaps " + ", ".join(f"{k} {n}" for k, n in sorted(sitemap_outcomes(final).items())))
    if result.stopped == "interrupted":
        raise typer.Exit(130)


@app.command("report")
def report_command(
    jsonl: Annotated[bool, typer.Option("--jsonl", help="One JSON object per host, per sitemap, and totals.")] = False,
    html: Annotated[
        Path | None, typer.Option("--html", help="Write one self-contained HTML page (charts inline) to FILE.")
    ] = None,
) -> None:
    """Print what the table says: per host and per sitemap counts and problems, freshness, totals.

    With --html FILE, write the same facts and the sitemaps' quality as one
    self-contained HTML page with charts instead (nothing on stdout).

    Example: sitemapcrawl report --jsonl > report.jsonl; sitemapcrawl report --html report.html
    """
    if html is not None:
        if jsonl:
            raise UsageError("report: give --html FILE or --jsonl, not both")
        with open_store() as store:
            size = write_report(take_snapshot(store, datetime.now(UTC).replace(microsecond=0)), html)
        echo_err(f"report: wrote {html} ({size:,} bytes)")
        return
    with open_store() as store:
        result = build_report(store)
    for line in result.json_lines() if jsonl else result.lines():
        typer.echo(line)


@app.command("serve")
def serve_command(
    bind: Annotated[str, typer.Option(help="Address to listen on (127.0.0.1: this machine only).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on (0: any free port).")] = 8008,
    refresh: Annotated[float, typer.Option(help="Seconds between refreshes from HBase (1 to 3600).")] = 5.0,
) -> None:
    """Serve a read-only monitoring page of the crawl, live from HBase, with a JSON endpoint per panel.

    GET only; /api lists the panels' JSON endpoints. Ctrl-C stops it.

    Example: sitemapcrawl serve --port 8008   # then open http://127.0.0.1:8008/
    """
    with open_store() as store:
        serve(store, ServeOptions(bind=bind, port=port, refresh=refresh),
              on_ready=lambda url: echo_err(f"serve: {url} (Ctrl-C stops)"))
    echo_err("serve: stopped")


def main() -> None:
    """Console entry point."""
    app()
