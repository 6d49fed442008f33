"""The command line: parse options, build the settings once, call a job, print.

No crawl logic lives here. Data goes to stdout, messages to stderr (through
`console`, above the live progress line on a terminal). Every
`SitemapCrawlError` becomes one line on stderr and its exit code in
`core.CommandGroup`; nothing else is caught, so a bug still shows its
traceback.

`app` holds the global options and registers every command, in the order
`--help` lists them; the commands live by kind in `phases`, `results` and
`tools`, what they share in `shared`, the options several take in `options`
(one alias each). A new command follows their pattern: options with an
explicit `metavar` (or an Enum from `modes` for choices) and a visible
default, a docstring with a `\\b`-protected `Example:` line of at
most 80 columns, and its job module imported inside the body.
`tests/unit/test_cli_help.py` and `test_cli_startup.py` check every command.
"""

# No `from __future__ import annotations` here: typer would then eval every
# annotation string (twice) at each start; real annotations are built once.
from pathlib import Path
from typing import Annotated, Any

import typer

from sitemapcrawl import __version__
from sitemapcrawl.cli import phases, results, tools
from sitemapcrawl.cli.console import setup_logging, tune_garbage_collector
from sitemapcrawl.cli.core import HELP_OPTION_NAMES, CommandGroup, HelpGroup
from sitemapcrawl.cli.shared import State, setting
from sitemapcrawl.config import load_settings
from sitemapcrawl.logfields import note
from sitemapcrawl.modes import LogFormat

# Job modules, the store (happybase), the HTTP client (requests), rich and the
# sitemap engine are imported inside the commands that use them: `--help`,
# `--version` and `sitemap parse FILE` start in a fraction of the time
# (measured: benchmarks/results/2026-11-30-cli-startup.md).

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


def _version(value: bool) -> None:
    if value:
        typer.echo(f"sitemapcrawl {__version__}")
        raise typer.Exit()


@app.callback()
def global_options(
    ctx: typer.Context,
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
    log_format: Annotated[
        LogFormat | None, typer.Option(show_default=False,
                                       help="json: every line on stderr and in --log-file one JSON object "
                                            f"(for a log shipper). {setting('log_format')}")
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
    State.messages.json = log_format is LogFormat.JSON  # a bad setting below is said in the format asked for
    note(command=ctx.invoked_subcommand)
    flags: dict[str, Any] = {
        "hbase": hbase,
        "table_prefix": table_prefix,
        "user_agent": user_agent,
        "url_filter": url_filter,
        "sitemap_blacklist": sitemap_blacklist,
        "log_format": log_format,
    }
    State.settings = load_settings(config_file=config, flags=flags)
    setup_logging(State.messages, verbose, quiet, log_file, as_json=State.settings.log_format == LogFormat.JSON)
    State.console = {"verbose": verbose, "quiet": quiet, "log_file": log_file}
    if State.settings.extra:
        import logging

        for key in State.settings.extra:
            logging.getLogger("sitemapcrawl").warning("config file: unknown setting %r ignored", key)


# The commands, in the order `--help` lists them.
app.command()(phases.init)
app.command()(results.readdb)
app.command("inject")(phases.inject_command)
app.command("detect")(phases.detect_command)
sitemap_app.command("parse")(tools.sitemap_parse)
sitemap_app.command("tree")(tools.sitemap_tree)
app.command("generate")(phases.generate_command)
app.command("fetch")(phases.fetch_command)
app.command("parse")(phases.parse_command)
app.command("updatedb")(phases.updatedb_command)
app.command("crawl")(phases.crawl_command)
app.command("batches")(tools.batches_command)
app.command("report")(results.report_command)
app.command("changes")(results.changes_command)
app.command("export")(results.export_command)
app.command("serve")(results.serve_command)
config_app.command("show")(tools.config_show)


def main() -> None:
    """Console entry point (also `python -m sitemapcrawl`, under the same name)."""
    tune_garbage_collector()
    app(prog_name="sitemapcrawl")
