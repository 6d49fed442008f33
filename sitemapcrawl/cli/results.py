"""The commands that read results: readdb, report, changes, export, serve.

Data goes to stdout (`--json`/`--jsonl` where a script reads it), messages
to stderr. The job modules are imported inside the command bodies so
`--help` stays fast (tests/unit/test_cli_startup.py).
"""

# No `from __future__ import annotations` here: typer would then eval every
# annotation string (twice) at each start; real annotations are built once.
from pathlib import Path
from typing import Annotated

import typer

from sitemapcrawl.cli.options import HostFilterOption, JsonlOption, JsonOption
from sitemapcrawl.cli.shared import State, echo_err, open_store, stage_progress
from sitemapcrawl.errors import UsageError
from sitemapcrawl.modes import AuditList, ExportFormat


def readdb(
    url: Annotated[str | None, typer.Argument(metavar="URL", show_default=False,
                                              help="The URL whose row to show.")] = None,
    as_json: JsonOption = False,
    stats: Annotated[bool, typer.Option("--stats", help="Rows by status, sitemap rows, hosts.")] = False,
    prefix: Annotated[
        str | None, typer.Option("--prefix", metavar="URL", show_default=False,
                                 help="Rows whose URL starts with this prefix [default: none].")
    ] = None,
    jsonl: JsonlOption = False,
) -> None:
    """Read rows back from HBase, decoded: one URL, a URL prefix, or statistics.

    --json goes with URL (its row as one object), --jsonl with --prefix (one
    object per row; without it, their URLs).

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


def report_command(
    jsonl: JsonlOption = False,
    html: Annotated[
        Path | None, typer.Option("--html", metavar="FILE", show_default=False,
                                  help="Write one self-contained HTML page (charts inline) to FILE [default: none].")
    ] = None,
) -> None:
    """Print what the table says: per host and per sitemap counts and problems, freshness, totals.

    --jsonl: one object per host, per sitemap, and the totals, with the audit
    lists, lastmod by month and each sitemap's history added.
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
        from sitemapcrawl.clock import utc_now
        from sitemapcrawl.report.html import write_report
        from sitemapcrawl.report.panels import take_snapshot

        with open_store() as store:
            size = write_report(take_snapshot(store, utc_now()), html)
        echo_err(f"report: wrote {html} ({size:,} bytes)")
        return
    if jsonl:
        from sitemapcrawl.clock import utc_now
        from sitemapcrawl.report.panels import json_lines, take_snapshot

        with open_store() as store:
            snapshot = take_snapshot(store, utc_now())
        for line in json_lines(snapshot):
            typer.echo(line)
        return
    with open_store() as store:
        result = build_report(store)
    from sitemapcrawl.safetext import printable

    for line in result.lines():
        typer.echo(printable(line))


def changes_command(
    sitemap: Annotated[
        str | None, typer.Option("--sitemap", metavar="URL", show_default=False,
                                 help="Only this sitemap's changes [default: all sitemaps].")
    ] = None,
    host: HostFilterOption = None,
    since: Annotated[
        str | None,
        typer.Option("--since", metavar="ISO_TIME", show_default=False,
                     help="Only parses at or after this time, UTC if no zone [default: all kept].")
    ] = None,
    jsonl: JsonlOption = False,
    fail_on_removed: Annotated[
        float | None, typer.Option("--fail-on-removed", metavar="PCT", min=0, max=100, show_default=False,
                                   help="Exit 1 when a sitemap's latest parse removed more than PCT percent of "
                                        "its entries, naming it [default: no such alert].")
    ] = None,
    fail_on_error: Annotated[
        bool, typer.Option("--fail-on-error", help="Exit 1 when a sitemap that parsed before fails now "
                                                   "(its fetch or its parse), naming it.")
    ] = False,
) -> None:
    """What each sitemap added, removed or changed between its parses (the history table).

    Text groups by sitemap, its counts first; --jsonl gives one record per
    change: sitemap, url, change, old, new, at. No scan of the webpage table.
    --fail-on-removed and --fail-on-error turn it into a check for a nightly
    job: exit 1 (one line naming each sitemap and why) or 0.

    \b
    Example: sitemapcrawl changes --host 127.0.0.2 --since 2024-06-01 --jsonl
    Example: sitemapcrawl changes --fail-on-removed 30 --fail-on-error
    """
    from sitemapcrawl.errors import AlertError
    from sitemapcrawl.storage.history import ChangesCounts, change_output, parse_since
    from sitemapcrawl.web.urls import CanonicalRules

    counts = ChangesCounts()
    rules = CanonicalRules.from_settings(State.settings)
    with open_store() as store:
        for line in change_output(store, counts, sitemap=sitemap, host=host,
                                  since=parse_since(since) if since else None, jsonl=jsonl, rules=rules,
                                  fail_on_removed=fail_on_removed, fail_on_error=fail_on_error):
            typer.echo(line)
    echo_err(f"changes: {counts.summary()}")
    for alert in counts.alerts:  # one line each: a long list is never cut short
        echo_err(f"changes: alert: {alert}")
    if counts.alerts:
        more = f" (and {len(counts.alerts) - 1} more, above)" if len(counts.alerts) > 1 else ""
        raise AlertError(f"changes: {counts.alerts[0]}{more}")


def export_command(
    fmt: Annotated[
        ExportFormat, typer.Option("--format", help="Output format (parquet needs pyarrow).")
    ] = ExportFormat.CSV,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", metavar="FILE", show_default=False,
                                  help="Write here [default: stdout].")
    ] = None,
    host: HostFilterOption = None,
    status: Annotated[
        str | None,
        typer.Option("--status", metavar="STATUS", show_default=False, help=(
            "Only rows with this fetch status: unfetched, fetched, not_modified, redirect, gone, retry, "
            "blocked_robots, too_large or deferred [default: any].")),
    ] = None,
    in_sitemaps: Annotated[bool, typer.Option("--in-sitemaps", help="Only URLs some sitemap lists.")] = False,
    not_in_sitemaps: Annotated[bool, typer.Option("--not-in-sitemaps", help="Only URLs no sitemap lists.")] = False,
    orphans: Annotated[
        bool, typer.Option("--orphans", help="Only sitemap URLs no crawled page links to.")
    ] = False,
    unlisted: Annotated[bool, typer.Option("--unlisted", help="Only URLs found by links, in no sitemap.")] = False,
    audit: Annotated[
        str | None, typer.Option("--audit", metavar="LIST", show_default=False, help=(
            "Only the URLs on this list of the audit: " + ", ".join(AuditList) + " [default: all]."))
    ] = None,
) -> None:
    """Export one flat row per URL (url, status, sitemaps, hints, quality...).

    A deliberate full scan of the webpage table (or one host's rows),
    streamed: memory stays flat. Columns: see docs/commands.md, export.

    \b
    Example: sitemapcrawl export > urls.csv
    Example: sitemapcrawl export --format parquet -o urls.parquet --in-sitemaps
    Example: sitemapcrawl export --audit lastmod-suspect --format jsonl
    """
    from sitemapcrawl.jobs.export import ExportCounts, ExportOptions, export
    from sitemapcrawl.web.urls import CanonicalRules

    options = ExportOptions.from_flags(fmt, host=host, status=status, in_sitemaps=in_sitemaps,
                                       not_in_sitemaps=not_in_sitemaps, orphans=orphans, unlisted=unlisted,
                                       audit=audit)
    counts = ExportCounts()
    with open_store() as store, stage_progress() as update:
        export(store, options, output, counts, CanonicalRules.from_settings(State.settings),
               on_progress=lambda done: update("rows read", done))
    echo_err(f"export: {counts.summary()}")


def serve_command(
    bind: Annotated[str, typer.Option(metavar="ADDRESS",
                                      help="Address to listen on (127.0.0.1: this machine only).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65_535, metavar="PORT",
                                      help="Port to listen on (0: any free port).")] = 8008,
    refresh: Annotated[float, typer.Option(metavar="SECONDS",
                                           help="Seconds between refreshes from HBase (1 to 3600).")] = 5.0,
) -> None:
    """Serve a read-only monitoring page of the crawl, live from HBase, with a JSON endpoint per panel.

    GET only; /api lists the panels' JSON endpoints; /metrics answers Prometheus
    (with the `metrics` extra: pip install 'sitemapcrawl[metrics]'). Ctrl-C stops it.

    \b
    Example: sitemapcrawl serve --port 8008   # then open http://127.0.0.1:8008/
    """
    from sitemapcrawl.report.serve import ServeOptions, serve

    with open_store() as store:
        serve(store, ServeOptions(bind=bind, port=port, refresh=refresh),
              on_ready=lambda url: echo_err(f"serve: {url} (Ctrl-C stops)"))
    echo_err("serve: stopped")
