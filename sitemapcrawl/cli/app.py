"""The command line: parse options, build the settings once, call a job, print.

No crawl logic lives here. Data goes to stdout, messages to stderr (through
`console`, above the live progress line on a terminal). Every
`SitemapCrawlError` becomes one line on stderr and its exit code in
`cli_core.CommandGroup`; nothing else is caught, so a bug still shows its
traceback.

A new command follows the pattern below: options with an explicit `metavar`
(or an Enum from `modes` for choices) and a visible default, a docstring
with a `\\b`-protected `Example:` line of at most 80 columns, and its job
module imported inside the body. `tests/unit/test_cli_help.py` and
`test_cli_startup.py` check every command for these.
"""

# No `from __future__ import annotations` here: typer would then eval every
# annotation string (twice) at each start; real annotations are built once.
import contextlib
import gc
import io
import sys
from collections.abc import Iterable, Iterator
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from sitemapcrawl import __version__
from sitemapcrawl.cli.console import Messages, StageUpdate, setup_logging
from sitemapcrawl.cli.core import HELP_OPTION_NAMES, CommandGroup, HelpGroup
from sitemapcrawl.config import ENV_PREFIX, Settings, load_settings, with_flags
from sitemapcrawl.errors import SitemapError, UsageError
from sitemapcrawl.modes import Compression, CountMode, CrawlMode, ExportFormat, QueueBy, crawl_mode

if TYPE_CHECKING:
    from sitemapcrawl.batch.workers import Pool
    from sitemapcrawl.storage.store import Store
    from sitemapcrawl.web.http import PoliteHttpClient

# Job modules, the store (happybase), the HTTP client (requests), rich and the
# sitemap engine are imported inside the commands that use them: `--help`,
# `--version` and `sitemap parse FILE` start in a fraction of the time
# (benchmarks/bench_cli.py).

_CONTEXT = {"help_option_names": HELP_OPTION_NAMES}
app = typer.Typer(
    cls=CommandGroup,
    name="sitemapcrawl",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain click help: fast, nothing cut, [default/env] kept as written
    context_settings=_CONTEXT,
)
sitemap_app = typer.Typer(
    cls=HelpGroup,
    help="Read sitemaps without HBase: one document, or a site's whole tree.",
    no_args_is_help=True,
    rich_markup_mode=None,
    context_settings=_CONTEXT,
)
app.add_typer(sitemap_app, name="sitemap")
config_app = typer.Typer(
    cls=HelpGroup,
    help="Look at the settings: their values and where each came from.",
    no_args_is_help=True,
    rich_markup_mode=None,
    context_settings=_CONTEXT,
)
app.add_typer(config_app, name="config")

_DEFAULTS = Settings()


def setting(name: str) -> str:
    """Help text naming setting `name`: its environment variable and default."""
    default = getattr(_DEFAULTS, name)
    shown = "none" if default is None else '""' if default == "" else default
    return f"[setting {name}; env {ENV_PREFIX}{name.upper()}; default: {shown}]"


class State:
    """What the global options give every command: the settings, built once."""

    settings: Settings = _DEFAULTS
    messages = Messages()
    global_args: list[str] = []
    """The global options as given, for the worker processes of `--workers N`."""


def echo_err(message: str) -> None:
    """Print a message for a person on stderr (never data), above any live display."""
    State.messages.echo(message)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"sitemapcrawl {__version__}")
        raise typer.Exit()


@app.callback()
def global_options(
    hbase: Annotated[
        str | None,
        typer.Option(metavar="HOST:PORT", show_default=False,
                     help=f"HBase Thrift server. {setting('hbase')}"),
    ] = None,
    table_prefix: Annotated[
        str | None, typer.Option(metavar="PREFIX", show_default=False,
                                 help=f"Prefix for table names, so crawls can share one HBase. "
                                      f"{setting('table_prefix')}")
    ] = None,
    config: Annotated[
        Path | None, typer.Option("--config", metavar="FILE", show_default=False,
                                  help="TOML settings file (see `sitemapcrawl config show`) [default: none].")
    ] = None,
    user_agent: Annotated[
        str | None,
        typer.Option(metavar="AGENT", show_default=False,
                     help=f"User-Agent for every request. {setting('user_agent')}"),
    ] = None,
    url_filter: Annotated[
        Path | None, typer.Option(metavar="FILE", show_default=False,
                                  help=f"File of ordered +regex / -regex URL filter lines. {setting('url_filter')}")
    ] = None,
    sitemap_blacklist: Annotated[
        Path | None,
        typer.Option(metavar="FILE", show_default=False,
                     help=f"File of hosts, URL prefixes or re:REGEX whose sitemaps are skipped. "
                          f"{setting('sitemap_blacklist')}"),
    ] = None,
    verbose: Annotated[int, typer.Option(
        "--verbose", "-v", count=True, show_default=False,
        help="More logging: -v our progress messages, -vv our debug lines, -vvv also the libraries'.")] = 0,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Only errors on stderr.")] = False,
    log_file: Annotated[
        Path | None, typer.Option(metavar="FILE", show_default=False,
                                  help="Also append the log, time-stamped, to FILE, at the level -v chose "
                                       "[default: none].")
    ] = None,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """An HBase-backed, sitemap-focused web crawler.

    Global options go before the command. Settings come from defaults < the
    --config file < SITEMAPCRAWL_* environment variables < options.

    \b
    Example: sitemapcrawl --hbase 127.0.0.1:9090 init
    """
    State.messages.quiet = quiet
    setup_logging(State.messages, verbose, quiet, log_file)
    flags: dict[str, Any] = {
        "hbase": hbase,
        "table_prefix": table_prefix,
        "user_agent": user_agent,
        "url_filter": url_filter,
        "sitemap_blacklist": sitemap_blacklist,
    }
    State.settings = load_settings(config_file=config, flags=flags)
    State.global_args = _global_args({**flags, "config": config, "log_file": log_file}, verbose, quiet)
    if State.settings.extra:
        import logging

        for key in State.settings.extra:
            logging.getLogger("sitemapcrawl").warning("config file: unknown setting %r ignored", key)


def _global_args(values: dict[str, Any], verbose: int, quiet: bool) -> list[str]:
    """The global options again, as a worker process's command line takes them."""
    args = [item for name, value in values.items() if value is not None
            for item in (f"--{name.replace('_', '-')}", str(value))]
    return args + ["-v"] * verbose + (["-q"] if quiet else [])


def open_store() -> "Store":
    """The store for the configured HBase address and table prefix."""
    from sitemapcrawl.storage.store import Store

    return Store(State.settings)


@app.command()
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


@app.command()
def readdb(
    url: Annotated[str | None, typer.Argument(metavar="URL", show_default=False,
                                              help="The URL whose row to show.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object for URL.")] = False,
    stats: Annotated[bool, typer.Option("--stats", help="Rows by status, sitemap rows, hosts.")] = False,
    prefix: Annotated[
        str | None, typer.Option("--prefix", metavar="URL", show_default=False,
                                 help="Rows whose URL starts with this prefix [default: none].")
    ] = None,
    jsonl: Annotated[bool, typer.Option("--jsonl", help="With --prefix: one JSON object per line.")] = False,
) -> None:
    """Read rows back from HBase, decoded: one URL, a URL prefix, or statistics.

    \b
    Example: sitemapcrawl readdb http://127.0.0.2:8000/ --json
    """
    from sitemapcrawl.jobs.readdb import collect_stats, read_row, rows_with_prefix
    from sitemapcrawl.safetext import printable, printable_json
    from sitemapcrawl.web.urls import CanonicalRules

    if sum([url is not None, stats, prefix is not None]) != 1:
        raise UsageError("readdb: give exactly one of URL, --stats, --prefix")
    with open_store() as store:
        if url is not None:
            view = read_row(store, url, CanonicalRules.from_settings(State.settings))
            if as_json:
                typer.echo(printable_json(view.as_json()))
            else:
                typer.echo(f"{printable(view.url)}\n  key  {printable(view.key)}")
                for name, value in view.cells.items():
                    typer.echo(f"  {name:<8} {printable(str(value))}")
        elif prefix is not None:
            count = 0
            for view in rows_with_prefix(store, prefix, CanonicalRules.from_settings(State.settings)):
                count += 1
                typer.echo(printable_json(view.as_json()) if jsonl else printable(view.url))
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
            typer.echo(f"unreadable rows\t{totals.unreadable.rows}")


@contextlib.contextmanager
def stage_progress() -> Iterator[StageUpdate]:
    """The live display of the running stage on a terminal; yields `update(stage, done, total, errors)`.

    In a worker of `--workers N` the updates go to the parent instead (`jobs.workers`).
    """
    from sitemapcrawl.batch.workers import worker_channel

    channel = worker_channel()
    if channel is not None:
        yield channel.progress
        return
    with State.messages.stages() as update:
        yield update


def to_parent(counts: object) -> None:
    """In a worker of `--workers N`, send the job's counts to the parent (nothing otherwise)."""
    from sitemapcrawl.batch.workers import worker_channel

    channel = worker_channel()
    if channel is not None:
        channel.counts(counts)


def worker_pool(update: StageUpdate, quiet: bool = False) -> "Pool":
    """The pool that runs a phase as worker processes with these global options (`quiet`: workers
    print their errors only)."""
    from sitemapcrawl.batch.workers import Pool

    return Pool(State.global_args + (["-q"] if quiet else []), on_stage=update, on_line=echo_err)


_SPLIT_HELP = "Only split K (0-based) of N: a share of the host buckets [default: all]."
_WORKERS_HELP = "Run N local worker processes, one split each, and merge their counts."


@contextlib.contextmanager
def http_client(settings: Settings, max_bytes: int | None = None) -> "Iterator[PoliteHttpClient]":
    """The polite HTTP client of `settings`, closed after use; UsageError without a user agent."""
    from sitemapcrawl.web.http import PoliteHttpClient

    client = PoliteHttpClient.from_settings(settings, max_bytes=max_bytes)
    try:
        yield client
    finally:
        client.close()


def _seed_lines(seeds: str | None, stack: contextlib.ExitStack) -> Iterable[str]:
    """The lines of a seed file, of standard input (`-`), or none; the file closes with `stack`."""
    # surrogateescape: a line that is not UTF-8 reaches inject as it was, which refuses it by number.
    if seeds is None:
        return []
    if seeds == "-":
        return io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="surrogateescape")
    try:
        return stack.enter_context(open(seeds, encoding="utf-8", errors="surrogateescape"))
    except OSError as exc:
        raise UsageError(f"cannot read seeds {seeds}: {exc.strerror}") from None


@app.command("inject")
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
        counts = inject(store, _seed_lines(seeds, stack), rules, overwrite_score=overwrite_score,
                        on_reject=report, on_progress=lambda done: update("seed lines", done))
    echo_err(f"inject: {counts.summary()}")


@app.command("detect")
def detect_command(
    host: Annotated[
        list[str] | None, typer.Option("--host", metavar="HOST", show_default=False,
                                       help="Check only this origin, or every origin the table knows of a bare "
                                            "host name (repeatable) [default: every host].")
    ] = None,
    probe_known_paths: Annotated[
        bool | None, typer.Option("--probe-known-paths/--no-probe-known-paths", show_default=False,
                                  help="Probe well-known sitemap paths when robots.txt lists none. "
                                       f"{setting('probe_known_paths')}")
    ] = None,
) -> None:
    """Read each host's robots.txt; record rules and crawl delay; inject its sitemaps.

    \b
    Example: sitemapcrawl --user-agent 'MyBot/1.0' detect --probe-known-paths
    """
    from sitemapcrawl.jobs.detect import detect
    from sitemapcrawl.web.robots_txt import HostReport
    from sitemapcrawl.web.rules import UrlRules

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
        probe = State.settings.probe_known_paths if probe_known_paths is None else probe_known_paths
        counts = detect(store, client, rules, hosts=host or (), probe_known_paths=probe, on_host=report)
    echo_err(f"detect: {counts.summary()}")
    if counts.hosts == 0:
        echo_err("detect: no hosts in the table; inject seeds first")


def _is_url(source: str) -> bool:
    return source.split(":", 1)[0].lower() in ("http", "https") and "://" in source


@contextlib.contextmanager
def _open_sitemap_source(source: str, settings: Settings, max_bytes: int) -> Iterator[Any]:
    """A URL through the polite HTTP client; a local file opened directly (no requests import)."""
    if _is_url(source):
        from sitemapcrawl.web.http import fetch_document

        url, body = fetch_document(source, settings, max_bytes=max_bytes)
        yield body, url
        return
    path = Path(source).expanduser()
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise UsageError(f"cannot read {source}: {exc.strerror or exc}") from None
    with handle:
        yield handle, path.resolve().as_uri()


_OUTPUT_CHUNK = 2_000


def _vouching_hosts(hosts: Iterable[str]) -> tuple[str, ...]:
    """The `--vouched-by` values as hosts; UsageError naming a value that is no host name."""
    from sitemapcrawl.sitemaps.scope import host_of

    found = []
    for text in hosts:
        host = host_of(text)
        if host is None:
            raise UsageError(f"--vouched-by {text!r}: not a host name (like example.com or 127.0.0.2:8700)")
        found.append(host)
    return tuple(found)


@sitemap_app.command("parse")
def sitemap_parse(
    source: Annotated[str, typer.Argument(metavar="URL|FILE", help="A sitemap URL or a local file path.")],
    jsonl: Annotated[bool, typer.Option("--jsonl", help="One JSON object per entry.")] = False,
    strict: Annotated[
        bool | None,
        typer.Option("--strict/--no-strict", show_default=False,
                     help=f"Drop URLs outside the sitemap's scope. {setting('strict_scope')}"),
    ] = None,
    max_urls: Annotated[int | None, typer.Option(min=0, metavar="N", show_default=False,
                                                 help=f"Entries kept. {setting('max_sitemap_urls')}")] = None,
    max_bytes: Annotated[
        int | None, typer.Option(min=0, metavar="N", show_default=False,
                                 help=f"Uncompressed bytes read. {setting('max_sitemap_bytes')}")
    ] = None,
    vouched_by: Annotated[
        list[str] | None,
        typer.Option("--vouched-by", metavar="HOST", show_default=False,
                     help="Read it as the crawl would if HOST vouched for it (its robots.txt lists it): "
                          "any URL on HOST is in scope (repeatable) [default: none, the folder rule].")
    ] = None,
) -> None:
    """Read one sitemap document (no recursion) and print its entries.

    Any format (XML urlset or index, gzip, zip, text, RSS, Atom), detected from
    the bytes. Warnings go to stderr; the exit code is 0 when the document was
    read as a sitemap. Scope is the folder rule unless --vouched-by names hosts.

    \b
    Example: sitemapcrawl --user-agent 'MyBot/1.0' sitemap parse \\
                 https://example.com/sitemap.xml
    """
    from sitemapcrawl.safetext import printable
    from sitemapcrawl.sitemaps import ScopeContext, SitemapLimits, parse_sitemap, render

    settings = State.settings
    limits = SitemapLimits.from_settings(settings, max_urls=max_urls, max_bytes=max_bytes)
    scope = ScopeContext(strict=settings.strict_scope if strict is None else strict,
                         vouched_by=_vouching_hosts(vouched_by or ()))
    line_of = render.json_line if jsonl else (lambda entry: printable(render.table_row(entry)))
    out = sys.stdout
    with _open_sitemap_source(source, settings, limits.max_bytes) as (data, url):
        document = parse_sitemap(data, url, limits=limits, scope=scope)
        if not jsonl:
            out.write(render.TABLE_HEADER + "\n")
        entries = iter(document)
        while lines := [line_of(entry) for entry in islice(entries, _OUTPUT_CHUNK)]:
            lines.append("")  # written in chunks: no flush per line
            out.write("\n".join(lines))
        out.flush()
    for line in render.report_lines(document.report):
        echo_err(line)
    echo_err(render.report_summary(document.kind, document.report))


@sitemap_app.command("tree")
def sitemap_tree(
    url: Annotated[str, typer.Argument(metavar="URL", help="A homepage or a sitemap URL.")],
    jsonl: Annotated[bool, typer.Option("--jsonl", help="One JSON object per sitemap (or entry).")] = False,
    strict: Annotated[
        bool | None,
        typer.Option("--strict/--no-strict", show_default=False,
                     help=f"Drop URLs outside each sitemap's scope. {setting('strict_scope')}"),
    ] = None,
    probe_known_paths: Annotated[
        bool | None, typer.Option("--probe-known-paths/--no-probe-known-paths", show_default=False,
                                  help="Probe well-known sitemap paths when robots.txt lists none. "
                                       f"{setting('probe_known_paths')}")
    ] = None,
    entries: Annotated[
        bool, typer.Option("--entries", help="Print every page URL of the sitemaps, not the sitemaps.")
    ] = False,
) -> None:
    """Find a site's sitemaps as detect does (robots.txt, well-known paths) and follow indexes.

    Prints one line per sitemap, indented by depth, with its type, counts and
    problems. Scope is the crawl's. Loops and indexes deeper than
    max_index_depth are not followed.
    With --entries, every page URL of every sitemap instead (with --jsonl:
    sitemap, loc, lastmod, changefreq, priority...): an inventory, no HBase.

    \b
    Example: sitemapcrawl --user-agent 'MyBot/1.0' sitemap tree \\
                 https://example.com/
    Example: sitemapcrawl --user-agent 'MyBot/1.0' sitemap tree \\
                 https://example.com/ --entries --jsonl > inventory.jsonl
    """
    from sitemapcrawl.safetext import printable
    from sitemapcrawl.sitemaps import SitemapLimits, render
    from sitemapcrawl.web.discover import site_tree
    from sitemapcrawl.web.rules import UrlRules

    settings = State.settings
    limits = SitemapLimits.from_settings(settings)
    totals = render.TreeTotals()
    strict = settings.strict_scope if strict is None else strict
    probe = settings.probe_known_paths if probe_known_paths is None else probe_known_paths
    rules = UrlRules.from_settings(settings)

    def entry_line(sitemap: str, entry: Any) -> None:
        typer.echo(render.entry_json_line(sitemap, entry) if jsonl else printable(render.table_row(entry)))

    with http_client(settings, max_bytes=limits.max_bytes) as client:
        if entries and not jsonl:
            typer.echo(render.TABLE_HEADER)
        for node in site_tree(url, client, settings, canonical=rules.canonical, blacklist=rules.blacklist,
                              probe=probe, strict=strict, on_entry=entry_line if entries else None):
            totals.add(node)
            if entries:
                if node.error is not None:
                    echo_err(f"warning: {node.url}: {node.error}")
                continue
            typer.echo(render.tree_json_line(node) if jsonl else printable(render.tree_line(node)))
    echo_err(totals.line())
    if totals.sitemaps == 0:
        raise SitemapError(f"no sitemap could be read for {url}")


_MODE_HELP = f"Which rows are crawled. {setting('crawl_mode')}"


@app.command("generate")
def generate_command(
    top_n: Annotated[int | None, typer.Option("--topN", min=1, metavar="N", show_default=False,
                                              help="At most N URLs in the batch [default: no limit].")] = None,
    max_per_host: Annotated[
        int | None, typer.Option(min=1, metavar="N", show_default=False,
                                 help="At most N URLs per host (or domain, see --count-mode) [default: no limit].")
    ] = None,
    count_mode: Annotated[CountMode, typer.Option(help="What --max-per-host counts per.")] = CountMode.HOST,
    partitions: Annotated[int, typer.Option(min=1, metavar="N",
                                            help="Fetch partitions: hash(politeness key) mod N.")] = 1,
    mode: Annotated[CrawlMode | None, typer.Option(show_default=False, help=_MODE_HELP)] = None,
    batch_id: Annotated[str | None, typer.Option(metavar="ID", show_default=False,
                                                 help="Use this batch id [default: a new one].")] = None,
    queue_by: Annotated[QueueBy | None, typer.Option(show_default=False,
                                                     help="Partition by host name or by IP (as fetch queues). "
                                                          f"{setting('queue_by')}")] = None,
    split: Annotated[str | None, typer.Option(metavar="K/N", show_default=False,
                                              help=_SPLIT_HELP + " Needs --batch-id.")] = None,
    workers: Annotated[int, typer.Option(min=1, max=256, metavar="N", help=_WORKERS_HELP)] = 1,
    sitemaps_only_docs: Annotated[bool, typer.Option(
        "--sitemaps-only-docs", help="Select sitemap documents alone (crawl --sitemaps-only-docs).")] = False,
    rescan: Annotated[bool, typer.Option("--rescan",
                                         help="Find the due URLs by a full scan of the table, not through the "
                                              "due index, and rebuild the index from it (a repair).")] = False,
) -> None:
    """Select the due URLs, best first, and mark them as one batch to fetch.

    Prints the batch id on stdout; counts per partition and the top hosts on stderr.
    With --split K/N, N generates (same --batch-id) make one batch; per-host caps
    hold exactly (a host's rows are in one split) and --topN is the batch's
    total, each split taking its share.
    Due URLs are read through the due index; --rescan rebuilds it.

    \b
    Example: sitemapcrawl generate --topN 10000 --max-per-host 500 --partitions 4
    Example: sitemapcrawl generate --split 0/2 --batch-id b1 --topN 10000
    """
    from sitemapcrawl.batch.workers import raise_failed, split_share
    from sitemapcrawl.jobs.generate import GenerateOptions, generate
    from sitemapcrawl.model.splits import WHOLE, Split
    from sitemapcrawl.web.rules import UrlRules

    part = Split.parse(split) if split is not None else WHOLE
    options = GenerateOptions(top_n=top_n, max_per_host=max_per_host, count_mode=count_mode,
                              partitions=partitions, mode=crawl_mode(mode or State.settings.crawl_mode),
                              batch_id=batch_id, queue_by=queue_by, split=part, documents_only=sitemaps_only_docs,
                              rescan=rescan)
    rules = UrlRules.from_settings(State.settings)
    results = None
    if workers > 1:
        from sitemapcrawl.jobs.crawl import generate_workers

        with stage_progress() as update:
            counts, results = generate_workers(worker_pool(update), options, workers)
    else:
        import dataclasses

        options = dataclasses.replace(options, top_n=split_share(top_n, part))
        with open_store() as store, stage_progress() as update:
            counts = generate(store, rules, options, on_progress=lambda done: update("due rows read", done))
        to_parent(counts)
    for line in counts.held_lines():
        echo_err(f"generate: warning: {line}")
    if counts.batch_id is None:
        echo_err(f"generate: nothing to fetch; no batch ({counts.summary()})")
        if results is not None:
            raise_failed(results)
        return
    typer.echo(counts.batch_id)
    for number, n in sorted(counts.by_partition.items()):
        echo_err(f"partition {number}/{partitions}: {n} URLs")
    for host, n in counts.by_host.most_common(10):
        echo_err(f"  {host}: {n}")
    echo_err(f"generate: {counts.summary()}")
    if results is not None:
        raise_failed(results)


@app.command("fetch")
def fetch_command(
    batch: Annotated[str, typer.Option("--batch", metavar="ID", help="The batch id generate printed.")],
    partition: Annotated[str | None, typer.Option(metavar="K/N", show_default=False,
                                                  help="Fetch partition K (0-based) of N only [default: all].")] = None,
    threads: Annotated[int | None, typer.Option(min=1, metavar="N", show_default=False,
                                                help=f"Worker threads. {setting('threads')}")] = None,
    threads_per_host: Annotated[
        int | None, typer.Option(min=1, metavar="N", show_default=False,
                                 help=f"Requests in flight per host. {setting('threads_per_host')}")
    ] = None,
    delay: Annotated[
        float | None, typer.Option(min=0, metavar="SECONDS", show_default=False,
                                   help=f"Pause between requests to a host. {setting('delay')}")
    ] = None,
    queue_by: Annotated[QueueBy | None, typer.Option(show_default=False,
                                                     help=f"One queue per host name or per IP. "
                                                          f"{setting('queue_by')}")] = None,
    store_content: Annotated[
        bool | None, typer.Option("--store-content/--no-store-content", show_default=False,
                                  help=f"Keep page bodies too. {setting('store_content')}")
    ] = None,
    time_limit: Annotated[float | None, typer.Option(min=0, metavar="SECONDS", show_default=False,
                                                     help="Stop starting URLs after SECONDS [default: none].")] = None,
    min_throughput: Annotated[
        float | None, typer.Option(min=0, metavar="PAGES_PER_S", show_default=False,
                                   help="Stop when below PAGES_PER_S after the warm-up [default: none].")
    ] = None,
    warmup: Annotated[float, typer.Option(min=0, metavar="SECONDS",
                                          help="Seconds before --min-throughput is checked.")] = 30.0,
    wait: Annotated[bool, typer.Option("--wait", help="If another worker holds this share, take it over "
                                                      "when its lease expires.")] = False,
) -> None:
    """Fetch a generated batch politely: one queue per host, robots.txt, crawl delay, conditional GET.

    Rerunning the same batch skips what is done; Ctrl-C stops after writing what finished.
    One worker per partition: a second one on the same share stops, naming the holder.

    \b
    Example: sitemapcrawl --user-agent 'MyBot/1.0' fetch --partition 0/4 \\
                 --batch 20250101120000-1a2b
    """
    from sitemapcrawl.jobs.fetch import FetchOptions, FetchProgress, fetch, parse_partition
    from sitemapcrawl.web.rules import UrlRules

    settings = with_flags(State.settings, {"threads": threads, "threads_per_host": threads_per_host,
                                           "delay": delay, "queue_by": queue_by, "store_content": store_content})
    options = FetchOptions.from_settings(
        settings, batch, partition=parse_partition(partition) if partition else None,
        time_limit=time_limit, min_throughput=min_throughput, warmup=warmup, wait=wait)
    rules = UrlRules.from_settings(settings)
    with http_client(settings) as client, open_store() as store, stage_progress() as update:

        def show(p: FetchProgress) -> None:
            update("fetch", p.done, p.total, p.errors)

        counts = fetch(store, client, rules, options, on_progress=show)
    to_parent(counts)
    for line in counts.host_lines():
        echo_err(f"  {line}")
    echo_err(f"fetch: {counts.summary()}")
    if counts.total == 0 and not counts.already_done:
        echo_err(f"fetch: batch {batch} has no URLs{' in this partition' if partition else ''}; nothing to do")
    if counts.stopped == "interrupted":
        raise typer.Exit(130)


@app.command("parse")
def parse_command(
    batch: Annotated[str, typer.Option("--batch", metavar="ID", help="The batch id fetch worked on.")],
    mode: Annotated[CrawlMode | None, typer.Option(show_default=False, help=_MODE_HELP)] = None,
    wait: Annotated[bool, typer.Option("--wait", help="If another worker parses this batch, take over "
                                                      "when its lease expires.")] = False,
    split: Annotated[str | None, typer.Option(metavar="K/N", show_default=False, help=_SPLIT_HELP)] = None,
    workers: Annotated[int, typer.Option(min=1, max=256, metavar="N", help=_WORKERS_HELP)] = 1,
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
    from sitemapcrawl.model.splits import WHOLE, Split
    from sitemapcrawl.web.rules import UrlRules

    part = Split.parse(split) if split is not None else WHOLE
    crawl_mode_value = crawl_mode(mode or State.settings.crawl_mode)
    if workers > 1:
        from sitemapcrawl.batch.workers import raise_failed
        from sitemapcrawl.jobs.crawl import parse_workers

        with stage_progress() as update:
            merged, results = parse_workers(worker_pool(update), batch, crawl_mode_value, part, workers, wait)
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
    to_parent(counts)
    echo_err(f"parse: {counts.summary()}")
    if counts.rows == 0:
        echo_err(f"parse: batch {batch} has no fetched rows; nothing to do")


@app.command("updatedb")
def updatedb_command(
    batch: Annotated[str, typer.Option("--batch", metavar="ID", help="The batch id parse worked on.")],
    mode: Annotated[CrawlMode | None, typer.Option(show_default=False, help=_MODE_HELP)] = None,
    wait: Annotated[bool, typer.Option("--wait", help="If another worker updates this batch, take over "
                                                      "when its lease expires.")] = False,
    split: Annotated[str | None, typer.Option(metavar="K/N", show_default=False, help=_SPLIT_HELP)] = None,
    workers: Annotated[int, typer.Option(min=1, max=256, metavar="N", help=_WORKERS_HELP)] = 1,
    rescore: Annotated[bool, typer.Option("--rescore", help="Score every sitemap from scratch (a repair: "
                                                            "after changing pins or thresholds) instead of "
                                                            "the sitemaps the batch touched.")] = False,
) -> None:
    """Merge a parsed batch: new rows for found URLs, merged hints, depth/radius, next fetch times.

    Existing rows are merged, never clobbered. Rerunning changes nothing more.
    One worker per batch, or per split (--split K/N): splits merge once every
    split has spread its links, and the last one runs the quality step.

    \b
    Example: sitemapcrawl updatedb --batch 20250101120000-1a2b
    Example: sitemapcrawl updatedb --batch 20250101120000-1a2b --split 1/2
    Example: sitemapcrawl updatedb --batch 20250101120000-1a2b --rescore
    """
    from sitemapcrawl.jobs.updatedb import updatedb
    from sitemapcrawl.model.splits import WHOLE, Split
    from sitemapcrawl.web.rules import UrlRules

    part = Split.parse(split) if split is not None else WHOLE
    crawl_mode_value = crawl_mode(mode or State.settings.crawl_mode)
    if workers > 1:
        if rescore:
            raise UsageError("--rescore runs in one process: leave out --workers")
        from sitemapcrawl.batch.workers import raise_failed
        from sitemapcrawl.jobs.crawl import updatedb_workers

        with stage_progress() as update:
            merged, results = updatedb_workers(worker_pool(update), batch, crawl_mode_value, part, workers, wait)
        echo_err(f"updatedb: {merged.summary()}")
        raise_failed(results)
        return
    rules = UrlRules.from_settings(State.settings)
    with open_store() as store, stage_progress() as update:
        counts = updatedb(store, rules, batch, mode=crawl_mode_value,
                          on_progress=lambda done: update("rows merged", done), wait=wait, split=part,
                          rescore=rescore)
    to_parent(counts)
    echo_err(f"updatedb: {counts.summary()}")
    if counts.scheduled == 0 and counts.merged == 0:
        echo_err(f"updatedb: batch {batch} has nothing (left) to merge; nothing to do")


@app.command("crawl")
def crawl_command(
    seeds: Annotated[str | None, typer.Argument(metavar="FILE", show_default=False,
                                                help="Seed file, or - for standard input; none: continue.")] = None,
    mode: Annotated[CrawlMode | None, typer.Option(show_default=False, help=_MODE_HELP)] = None,
    rounds: Annotated[int, typer.Option(min=1, metavar="N",
                                        help="Rounds of generate, fetch, parse, updatedb.")] = 3,
    top_n: Annotated[int | None, typer.Option("--topN", min=1, metavar="N", show_default=False,
                                              help="At most N URLs per round [default: no limit].")] = None,
    max_per_host: Annotated[int | None, typer.Option(min=1, metavar="N", show_default=False,
                                                     help="At most N URLs per host per round "
                                                          "[default: no limit].")] = None,
    partitions: Annotated[int, typer.Option(min=1, metavar="N", help="Fetch partitions (host hash).")] = 1,
    threads: Annotated[int | None, typer.Option(min=1, metavar="N", show_default=False,
                                                help=f"Worker threads. {setting('threads')}")] = None,
    threads_per_host: Annotated[int | None, typer.Option(
        min=1, metavar="N", show_default=False,
        help=f"Requests in flight per host. {setting('threads_per_host')}")] = None,
    delay: Annotated[float | None, typer.Option(min=0, metavar="SECONDS", show_default=False,
                                                help=f"Pause between requests to a host. {setting('delay')}")] = None,
    probe_known_paths: Annotated[
        bool | None, typer.Option("--probe-known-paths/--no-probe-known-paths", show_default=False,
                                  help="Probe well-known sitemap paths when robots.txt lists none. "
                                       f"{setting('probe_known_paths')}")
    ] = None,
    sitemaps_only_docs: Annotated[
        bool, typer.Option("--sitemaps-only-docs",
                           help="Sitemap-only inventory: fetch sitemap documents alone; record listed URLs unfetched.")
    ] = False,
    workers: Annotated[int, typer.Option(min=1, max=256, metavar="N",
                                         help="Run each phase as N local processes (fetch: N partitions).")] = 1,
    split: Annotated[str | None, typer.Option(metavar="K/N", show_default=False,
                                              help="This machine's share (K of N machines) of the host buckets "
                                                   "[default: all].")] = None,
) -> None:
    """Crawl: inject SEEDS, detect sitemaps, then rounds of generate, fetch, parse and updatedb.

    Stops after --rounds or when nothing is due. A second crawl on the same
    table continues: it first finishes any batch an earlier run left
    unfinished (killed, interrupted, stopped by a time limit), then fetches
    only due rows. Missing tables are created first (as `init` would), and
    said so on stderr. The closing totals come from the counters updatedb
    keeps (as `serve` shows them); `report` counts every row.

    \b
    Example: sitemapcrawl --user-agent 'MyBot/1.0' crawl seeds.txt \\
                 --mode sitemap-only --rounds 3
    Example: sitemapcrawl --user-agent 'MyBot/1.0' crawl --workers 4 --split 0/2
    """
    from datetime import UTC, datetime

    from sitemapcrawl.jobs.crawl import CrawlOptions, crawl
    from sitemapcrawl.jobs.init import init_tables
    from sitemapcrawl.model.splits import WHOLE, Split
    from sitemapcrawl.report.panels import take_counted_snapshot
    from sitemapcrawl.report.text import sitemap_outcomes
    from sitemapcrawl.web.rules import UrlRules

    settings = with_flags(State.settings, {"threads": threads, "threads_per_host": threads_per_host,
                                           "delay": delay})
    rules = UrlRules.from_settings(settings)
    default_mode = "sitemap-only" if sitemaps_only_docs else settings.crawl_mode
    options = CrawlOptions(mode=crawl_mode(mode or default_mode), rounds=rounds, top_n=top_n,
                           max_per_host=max_per_host, partitions=partitions,
                           probe_known_paths=settings.probe_known_paths if probe_known_paths is None
                           else probe_known_paths,
                           documents_only=sitemaps_only_docs,
                           split=Split.parse(split) if split is not None else WHOLE)
    if workers > 1 or split is not None:
        from sitemapcrawl.batch.workers import sub_splits

        sub_splits(options.split, workers)  # UsageError before anything is done, for too many splits
    with contextlib.ExitStack() as stack, open_store() as store:
        for name in init_tables(store).created:
            echo_err(f"crawl: created table {name} (it did not exist)")
        client = stack.enter_context(http_client(settings))
        update = stack.enter_context(stage_progress())
        phases = None
        if workers > 1 or split is not None:
            from sitemapcrawl.jobs.crawl import WorkerPhases

            phases = WorkerPhases(worker_pool(update, quiet=True), settings, workers, options.split)
        result = crawl(store, client, rules, _seed_lines(seeds, stack), options,
                       on_stage=update, on_round=lambda r: echo_err(r.line()),
                       on_reject=lambda r: echo_err(f"line {r.line}: {r.reason}: {r.detail}"),
                       on_resume=lambda line: echo_err(f"crawl: {line}"), phases=phases)
        # From the counters updatedb keeps (the host table), not a scan of every row: flat in the table's size.
        final = take_counted_snapshot(store, datetime.now(UTC).replace(microsecond=0)).report
    echo_err(f"crawl: {len(result.rounds)} rounds, stopped: {result.stopped}")
    for line in list(final.lines())[:3]:
        echo_err(f"crawl: {line}")
    echo_err("crawl: sitemaps " + ", ".join(f"{k} {n}" for k, n in sorted(sitemap_outcomes(final).items())))
    if result.stopped == "interrupted":
        raise typer.Exit(130)


@app.command("batches")
def batches_command(
    resume: Annotated[str | None, typer.Option("--resume", metavar="ID", show_default=False,
                                               help="Finish this batch: fetch, parse and update what is left "
                                                    "[default: none].")] = None,
    release: Annotated[str | None, typer.Option("--release", metavar="ID", show_default=False,
                                                help="Give up this batch: free its rows for generate "
                                                     "[default: none].")] = None,
) -> None:
    """List the unfinished batches (state, rows, leases); finish or release one.

    A batch is unfinished from generate until updatedb merged it: a crawl
    killed or interrupted, or a fetch stopped by its time limit, leaves one.
    `crawl` finishes them first by itself.

    \b
    Example: sitemapcrawl batches --release 20250101120000-1a2b
    """
    from datetime import UTC, datetime

    from sitemapcrawl.batch import registry
    from sitemapcrawl.jobs.crawl import CrawlOptions, finish_batch
    from sitemapcrawl.safetext import printable
    from sitemapcrawl.web.rules import UrlRules

    if resume is not None and release is not None:
        raise UsageError("batches: give --resume ID or --release ID, not both")
    with open_store() as store:
        if release is not None:
            freed = registry.release(store, release, datetime.now(UTC).replace(microsecond=0))
            echo_err(f"batches: released {release}: {freed} rows freed for generate")
            return
        if resume is not None:
            state = registry.read_batch(store, resume)
            if state is None:
                raise UsageError(f"batch {resume!r} is not in the batch registry; `sitemapcrawl batches` lists them")
            rules = UrlRules.from_settings(State.settings)
            options = CrawlOptions(mode=crawl_mode(state.mode or State.settings.crawl_mode))
            with http_client(State.settings) as client, stage_progress() as update:
                finished = finish_batch(store, client, rules, state, options, on_stage=update)
            echo_err(f"batches: {finished.line()}")
            if finished.fetch.stopped == "interrupted":
                raise typer.Exit(130)
            return
        listed = registry.unfinished(store)
    for state in listed:
        typer.echo(printable(state.line()))
    if listed:
        echo_err(f"batches: {len(listed)} unfinished; finish one with --resume ID (crawl does it first), "
                 "give one up with --release ID")
    else:
        echo_err("batches: no unfinished batch; nothing to do")


@app.command("report")
def report_command(
    jsonl: Annotated[bool, typer.Option("--jsonl", help="One JSON object per host, per sitemap, and totals.")] = False,
    html: Annotated[
        Path | None, typer.Option("--html", metavar="FILE", show_default=False,
                                  help="Write one self-contained HTML page (charts inline) to FILE [default: none].")
    ] = None,
) -> None:
    """Print what the table says: per host and per sitemap counts and problems, freshness, totals.

    --jsonl adds the audit lists, lastmod by month and each sitemap's history.
    With --html FILE, write the same facts and the sitemaps' quality as one
    self-contained HTML page with charts instead (nothing on stdout).

    \b
    Example: sitemapcrawl report --jsonl > report.jsonl
    Example: sitemapcrawl report --html report.html
    """
    from sitemapcrawl.report.text import build_report

    if html is not None:
        if jsonl:
            raise UsageError("report: give --html FILE or --jsonl, not both")
        from datetime import UTC, datetime

        from sitemapcrawl.report.html import write_report
        from sitemapcrawl.report.panels import take_snapshot

        with open_store() as store:
            size = write_report(take_snapshot(store, datetime.now(UTC).replace(microsecond=0)), html)
        echo_err(f"report: wrote {html} ({size:,} bytes)")
        return
    if jsonl:
        from datetime import UTC, datetime

        from sitemapcrawl.report.panels import json_lines, take_snapshot

        with open_store() as store:
            snapshot = take_snapshot(store, datetime.now(UTC).replace(microsecond=0))
        for line in json_lines(snapshot):
            typer.echo(line)
        return
    with open_store() as store:
        result = build_report(store)
    from sitemapcrawl.safetext import printable

    for line in result.lines():
        typer.echo(printable(line))


@app.command("changes")
def changes_command(
    sitemap: Annotated[
        str | None, typer.Option("--sitemap", metavar="URL", show_default=False,
                                 help="Only this sitemap's changes [default: all sitemaps].")
    ] = None,
    host: Annotated[
        str | None, typer.Option("--host", metavar="HOST", show_default=False,
                                 help="Only the sitemaps of this host [default: all hosts].")
    ] = None,
    since: Annotated[
        str | None,
        typer.Option("--since", metavar="ISO_TIME", show_default=False,
                     help="Only parses at or after this time, UTC if no zone [default: all kept].")
    ] = None,
    jsonl: Annotated[bool, typer.Option("--jsonl", help="One JSON object per change.")] = False,
) -> None:
    """What each sitemap added, removed or changed between its parses (the history table).

    Text groups by sitemap, its counts first; --jsonl gives one record per
    change: sitemap, url, change, old, new, at. No scan of the webpage table.

    \b
    Example: sitemapcrawl changes --host 127.0.0.2 --since 2024-06-01 --jsonl
    """
    from sitemapcrawl.storage.history import ChangesCounts, change_output, parse_since
    from sitemapcrawl.web.urls import CanonicalRules

    counts = ChangesCounts()
    rules = CanonicalRules.from_settings(State.settings)
    with open_store() as store:
        for line in change_output(store, counts, sitemap=sitemap, host=host,
                                  since=parse_since(since) if since else None, jsonl=jsonl, rules=rules):
            typer.echo(line)
    echo_err(f"changes: {counts.summary()}")


@app.command("export")
def export_command(
    fmt: Annotated[
        ExportFormat, typer.Option("--format", help="Output format (parquet needs pyarrow).")
    ] = ExportFormat.CSV,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", metavar="FILE", show_default=False,
                                  help="Write here [default: stdout].")
    ] = None,
    host: Annotated[str | None, typer.Option("--host", metavar="HOST", show_default=False,
                                             help="Only this host's URLs [default: all].")] = None,
    status: Annotated[
        str | None,
        typer.Option("--status", metavar="STATUS", show_default=False, help=(
            "Only rows with this fetch status: unfetched, fetched, not_modified, redirect, gone, retry, "
            "blocked_robots, too_large or deferred [default: any].")),
    ] = None,
    in_sitemaps: Annotated[
        bool | None,
        typer.Option("--in-sitemaps/--not-in-sitemaps", show_default=False,
                     help="Only URLs some sitemap lists / none lists [default: all]."),
    ] = None,
    orphans: Annotated[
        bool, typer.Option("--orphans", help="Only sitemap URLs no crawled page links to.")
    ] = False,
    unlisted: Annotated[bool, typer.Option("--unlisted", help="Only URLs found by links, in no sitemap.")] = False,
) -> None:
    """Export one flat row per URL (url, status, sitemaps, hints, quality...).

    A deliberate full scan of the webpage table (or one host's rows),
    streamed: memory stays flat. Columns: see the README.

    \b
    Example: sitemapcrawl export > urls.csv
    Example: sitemapcrawl export --format parquet -o urls.parquet --in-sitemaps
    """
    from sitemapcrawl.jobs.export import ExportCounts, ExportOptions, export
    from sitemapcrawl.web.urls import CanonicalRules

    options = ExportOptions.from_flags(fmt, host=host, status=status, in_sitemaps=in_sitemaps, orphans=orphans,
                                       unlisted=unlisted)
    counts = ExportCounts()
    with open_store() as store, stage_progress() as update:
        export(store, options, output, counts, CanonicalRules.from_settings(State.settings),
               on_progress=lambda done: update("rows read", done))
    echo_err(f"export: {counts.summary()}")


@app.command("serve")
def serve_command(
    bind: Annotated[str, typer.Option(metavar="ADDRESS",
                                      help="Address to listen on (127.0.0.1: this machine only).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65_535, metavar="PORT",
                                      help="Port to listen on (0: any free port).")] = 8008,
    refresh: Annotated[float, typer.Option(metavar="SECONDS",
                                           help="Seconds between refreshes from HBase (1 to 3600).")] = 5.0,
) -> None:
    """Serve a read-only monitoring page of the crawl, live from HBase, with a JSON endpoint per panel.

    GET only; /api lists the panels' JSON endpoints. Ctrl-C stops it.

    \b
    Example: sitemapcrawl serve --port 8008   # then open http://127.0.0.1:8008/
    """
    from sitemapcrawl.report.serve import ServeOptions, serve

    with open_store() as store:
        serve(store, ServeOptions(bind=bind, port=port, refresh=refresh),
              on_ready=lambda url: echo_err(f"serve: {url} (Ctrl-C stops)"))
    echo_err("serve: stopped")


@config_app.command("show")
def config_show(
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object: name -> {value, source}.")] = False,
) -> None:
    """Print the effective settings and where each came from (default, file, environment, flag).

    The text form is valid TOML (unset settings are commented out), so it can
    start a --config file.

    \b
    Example: sitemapcrawl --config crawl.toml config show --json
    """
    import json

    from sitemapcrawl.config import effective

    rows = effective(State.settings)
    if as_json:
        typer.echo(json.dumps({name: {"value": value, "source": source} for name, value, source in rows},
                              ensure_ascii=False, indent=2))
        return
    for name, value, source in rows:
        text = f"{name} = {json.dumps(value, ensure_ascii=False)}" if value is not None else f"# {name} = (not set)"
        typer.echo(f"{text:<48} # {source}")


#: Net allocations between two young-generation runs of the cycle collector. CPython's default,
#: 700, ran it every few rows of an inventory's merge: 56,000 runs (463 of them full, walking every
#: object alive) took ~21 s of a 1,000,000-URL inventory's ~125 s. The jobs' objects (rows, cells,
#: lines) are short-lived and acyclic, so reference counting frees them; the collector only needs
#: to run now and then, for the rare cycle.
GC_YOUNG_THRESHOLD = 100_000


def tune_garbage_collector() -> None:
    """Run the cycle collector rarely, and never over what the imports built (it lives as long as we do)."""
    gc.freeze()
    gc.set_threshold(GC_YOUNG_THRESHOLD, 10, 10)


def main() -> None:
    """Console entry point (also `python -m sitemapcrawl`, under the same name)."""
    tune_garbage_collector()
    app(prog_name="sitemapcrawl")
