"""The command line: parse options, build the settings once, call a job, print.

No crawl logic lives here. Data goes to stdout, messages to stderr. Every
`SitemapCrawlError` becomes one line on stderr and its exit code in `main`;
nothing else is caught, so a bug still shows its traceback.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from sitemapcrawl import __version__
from sitemapcrawl.config import Settings, load_settings
from sitemapcrawl.errors import SitemapCrawlError



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


def main() -> None:
    """Console entry point."""
    app()
