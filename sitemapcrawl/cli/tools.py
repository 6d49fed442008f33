"""The tool commands: `sitemap parse` / `sitemap tree` (no HBase), `batches`, `config show`.

Reading a sitemap document or a site's tree needs no HBase; `batches`
lists and releases the batches of the registry; `config show` prints each
setting and where its value came from. Heavy modules are imported inside
the command bodies so `--help` stays fast (tests/unit/test_cli_startup.py).
"""

# No `from __future__ import annotations` here: typer would then eval every
# annotation string (twice) at each start; real annotations are built once.
import contextlib
import sys
from collections.abc import Iterable, Iterator
from itertools import islice
from pathlib import Path
from typing import Annotated, Any

import typer

from sitemapcrawl.cli.console import EXIT_INTERRUPTED
from sitemapcrawl.cli.options import (
    HeaderOption,
    JsonlOption,
    JsonOption,
    NetrcOption,
    ProbeOption,
    StrictOption,
    setting_range,
)
from sitemapcrawl.cli.shared import (
    State,
    access_flags,
    echo_err,
    http_client,
    open_store,
    setting,
    stage_progress,
)
from sitemapcrawl.config import Settings, with_flags
from sitemapcrawl.errors import SitemapError, UsageError
from sitemapcrawl.urlparts import HTTP_SCHEMES


def _is_url(source: str) -> bool:
    return source.split(":", 1)[0].lower() in HTTP_SCHEMES and "://" in source


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


def sitemap_parse(
    source: Annotated[str, typer.Argument(metavar="URL|FILE", help="A sitemap URL or a local file path.")],
    jsonl: JsonlOption = False,
    strict: StrictOption = None,
    max_urls: Annotated[int | None, typer.Option(**setting_range("max_sitemap_urls"), metavar="N", show_default=False,
                                                 help=f"Entries kept. {setting('max_sitemap_urls')}")] = None,
    max_bytes: Annotated[
        int | None, typer.Option(**setting_range("max_sitemap_bytes"), metavar="N", show_default=False,
                                 help=f"Uncompressed bytes read. {setting('max_sitemap_bytes')}")
    ] = None,
    vouched_by: Annotated[
        list[str] | None,
        typer.Option("--vouched-by", metavar="HOST", show_default=False,
                     help="Read it as the crawl would if HOST vouched for it (its robots.txt lists it): "
                          "any URL on HOST is in scope (repeatable) [default: none, the folder rule].")
    ] = None,
    header: HeaderOption = None,
    netrc: NetrcOption = None,
) -> None:
    """Read one sitemap document (no recursion) and print its entries.

    Any format (XML urlset or index, gzip, zip, text, RSS, Atom), detected from
    the bytes, one entry a line (--jsonl: one JSON object each). Warnings go
    to stderr; the exit code is 0 when the document was read as a sitemap.
    Scope is the folder rule unless --vouched-by names hosts.

    \b
    Example: sitemapcrawl --user-agent 'MyBot/1.0' sitemap parse \\
                 https://example.com/sitemap.xml
    """
    from sitemapcrawl.safetext import printable
    from sitemapcrawl.sitemaps import ScopeContext, SitemapLimits, parse_sitemap, render

    settings = with_flags(State.settings, access_flags(header, netrc))
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


def sitemap_tree(
    url: Annotated[str, typer.Argument(metavar="URL", help="A homepage or a sitemap URL.")],
    jsonl: JsonlOption = False,
    strict: StrictOption = None,
    probe_known_paths: ProbeOption = None,
    entries: Annotated[
        bool, typer.Option("--entries", help="Print every page URL of the sitemaps, not the sitemaps.")
    ] = False,
    header: HeaderOption = None,
    netrc: NetrcOption = None,
) -> None:
    """Find a site's sitemaps as detect does (robots.txt, well-known paths) and follow indexes.

    Prints one line per sitemap, indented by depth, with its type, counts and
    problems (--jsonl: one JSON object per sitemap). Scope is the crawl's. Loops and indexes deeper than
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

    settings = with_flags(State.settings, access_flags(header, netrc))
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


def batches_command(
    resume: Annotated[str | None, typer.Option("--resume", metavar="ID", show_default=False,
                                               help="Finish this batch: fetch, parse and update what is left "
                                                    "[default: none].")] = None,
    release: Annotated[str | None, typer.Option("--release", metavar="ID", show_default=False,
                                                help="Give up this batch: free its rows for generate "
                                                     "[default: none].")] = None,
    force: Annotated[bool, typer.Option("--force", help="With --release: release it even though a worker "
                                                        "holds a lease of it (only for a worker whose machine "
                                                        "died; its later writes are refused).")] = False,
    header: HeaderOption = None,
    netrc: NetrcOption = None,
) -> None:
    """List the unfinished batches (state, rows, leases); finish or release one.

    --release refuses a batch a live worker is working on, naming it (host,
    pid, since when); --force is for a worker on a machine that died.

    A batch is unfinished from generate until updatedb merged it: a crawl
    killed or interrupted, or a fetch stopped by its time limit, leaves one.
    `crawl` finishes them first by itself.

    \b
    Example: sitemapcrawl batches --release 20250101120000-1a2b
    """
    from sitemapcrawl.batch import registry
    from sitemapcrawl.clock import utc_now
    from sitemapcrawl.jobs.crawl import CrawlOptions, finish_batch
    from sitemapcrawl.safetext import printable
    from sitemapcrawl.web.rules import UrlRules

    if resume is not None and release is not None:
        raise UsageError("batches: give --resume ID or --release ID, not both")
    if force and release is None:
        raise UsageError("batches: --force goes with --release ID")
    with open_store() as store:
        if release is not None:
            freed = registry.release(store, release, utc_now(), force=force)
            echo_err(f"batches: released {release}: {freed} rows freed for generate")
            return
        if resume is not None:
            state = registry.read_batch(store, resume)
            if state is None:
                raise UsageError(f"batch {resume!r} is not in the batch registry; `sitemapcrawl batches` lists them")
            settings = with_flags(State.settings, access_flags(header, netrc))
            rules = UrlRules.from_settings(settings)
            options = CrawlOptions(mode=settings.crawl_mode)  # finish_batch takes the batch's own (crawl_mode_of)
            with http_client(settings) as client, stage_progress() as update:
                finished = finish_batch(store, client, rules, state, options, on_stage=update)
            echo_err(f"batches: {finished.line()}")
            if finished.fetch.stopped == "interrupted":
                raise typer.Exit(EXIT_INTERRUPTED)
            return
        listed = registry.unfinished(store)
    for state in listed:
        typer.echo(printable(state.line()))
    if listed:
        echo_err(f"batches: {len(listed)} unfinished; finish one with --resume ID (crawl does it first), "
                 "give one up with --release ID")
    else:
        echo_err("batches: no unfinished batch; nothing to do")


def config_show(
    as_json: JsonOption = False,
) -> None:
    """Print the effective settings and where each came from (default, file, environment, flag).

    The text form is valid TOML (unset settings are commented out), so it can
    start a --config file; --json gives name -> {value, source}.

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
