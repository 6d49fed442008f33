"""The options more than one command takes, each declared once: one `Annotated` alias per meaning.

A command takes `batch: BatchOption` and gets the same flag, help, metavar
and bounds as every other command that takes it. Each alias spells its flag,
so the flag never depends on a parameter's name. Where one flag means two
things (`--host`: origins to check, or a filter; `--split`: a split of the
host buckets, or of a batch's fetch), each meaning has its own alias, named
for it. `tests/unit/test_cli_options.py` fails when a flag is declared twice.
Bounds come from their owners (`BUCKETS`, `MAX_FETCH_SPLITS`, `config.RULES`).
A slice of a phase's work is a *split*, in every command; an old name
(`--partition`, `--partitions`) is a hidden alias that still works, as is
`--threads`, the old name of `--max-connections` (typer cannot hide one name
of an option, so an old name is an option of its own, read with `renamed`).
"""

# No `from __future__ import annotations` here: typer would then eval every
# annotation string (twice) at each start; real annotations are built once.
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from sitemapcrawl.cli.shared import setting
from sitemapcrawl.config import MAX_FETCH_SPLITS, MAX_NUMBER, RULES
from sitemapcrawl.errors import UsageError
from sitemapcrawl.model.splits import BUCKETS
from sitemapcrawl.modes import CrawlMode, QueueBy

T = TypeVar("T")


def setting_range(name: str) -> dict[str, Any]:
    """`min=` and `max=` of an option that sets setting `name`: the range `config.RULES` gives it (no
    upper bound: `MAX_NUMBER`), so a flag and the setting it overrides refuse the same values."""
    rule = RULES[name]
    assert rule.low is not None and not rule.above, name
    return {"min": rule.low, "max": MAX_NUMBER if rule.high is None else rule.high}


# --- output ---------------------------------------------------------------------------------------

JsonlOption = Annotated[bool, typer.Option(
    "--jsonl", help="One JSON object per line on stdout, for scripts.")]
JsonOption = Annotated[bool, typer.Option("--json", help="One JSON object on stdout, for scripts.")]

# --- which rows -----------------------------------------------------------------------------------

HostFilterOption = Annotated[str | None, typer.Option(
    "--host", metavar="HOST", show_default=False, help="Only this host's URLs or sitemaps [default: all hosts].")]
DetectHostOption = Annotated[list[str] | None, typer.Option(
    "--host", metavar="HOST", show_default=False,
    help="Check only this origin, or every origin the table knows of a bare host name (repeatable) "
         "[default: every host].")]
ModeOption = Annotated[CrawlMode | None, typer.Option(
    "--mode", show_default=False, help=f"Which rows are crawled. {setting('crawl_mode')}")]
DocumentsOnlyOption = Annotated[bool, typer.Option(
    "--sitemaps-only-docs",
    help="Sitemap documents alone (an inventory): select and fetch only sitemaps; the URLs they list are "
         "recorded, not fetched.")]

# --- the batch --------------------------------------------------------------------------------------

BatchOption = Annotated[str, typer.Option("--batch", metavar="ID", help="The batch id generate printed.")]
WaitOption = Annotated[bool, typer.Option(
    "--wait", help="If another worker holds this split of the batch, take it over when its lease expires.")]
TopNOption = Annotated[int | None, typer.Option(
    "--topN", min=1, max=MAX_NUMBER, metavar="N", show_default=False,
    help="At most N URLs in a batch (crawl: in each round's) [default: no limit].")]
MaxPerHostOption = Annotated[int | None, typer.Option(
    "--max-per-host", min=1, max=MAX_NUMBER, metavar="N", show_default=False,
    help="At most N URLs per host in a batch (generate: or per domain, see --count-mode) [default: no limit].")]
QueueByOption = Annotated[QueueBy | None, typer.Option(
    "--queue-by", show_default=False,
    help=f"One fetch queue (and fetch split) per host name or per IP. {setting('queue_by')}")]

# --- splits and workers -------------------------------------------------------------------------------

SplitOption = Annotated[str | None, typer.Option(
    "--split", metavar="K/N", show_default=False,
    help="Only split K (0-based) of N: its range of the host buckets; `auto`: K and N from the batch "
         "scheduler (Kubernetes Indexed Job, Slurm array, AWS Batch array, Cloud Run job) [default: all].")]
FetchSplitOption = Annotated[str | None, typer.Option(
    "--split", metavar="K/N", show_default=False,
    help="Only fetch split K (0-based) of N, N the batch's --fetch-splits [default: all].")]
FetchSplitsOption = Annotated[int | None, typer.Option(
    "--fetch-splits", min=1, max=MAX_FETCH_SPLITS, metavar="N", show_default=False,
    help="Split the batch's fetch N ways: hash(politeness key) mod N, so a fetch queue is in one split "
         "(see --queue-by) [default: 1].")]
SplitsOption = Annotated[int | None, typer.Option(
    "--splits", **setting_range("splits"), metavar="N", show_default=False,
    help=f"With --split auto: the task count N, where the scheduler sets none (Kubernetes). {setting('splits')}")]
WorkersOption = Annotated[int, typer.Option(
    "--workers", min=1, max=BUCKETS, metavar="N",
    help="Run N local worker processes (or N Dask tasks), one split each, and merge their counts.")]
DaskOption = Annotated[str | None, typer.Option(
    "--dask", metavar="ADDRESS", show_default=False,
    help="Run the splits as tasks on this Dask scheduler (tcp://HOST:PORT); N: --workers, else its threads. "
         f"{setting('dask_scheduler')}")]

# --- the web ----------------------------------------------------------------------------------------


def _warc_folder(value: str | None) -> str | None:
    """`--warc DIR` as given; an empty or blank DIR is refused: `--warc "$DIR"` with DIR unset would
    otherwise record nothing, without a word."""
    if value is not None and not value.strip():
        raise typer.BadParameter("an empty folder name (an unset variable?): give a folder, or leave --warc out")
    return value


WarcOption = Annotated[str | None, typer.Option(
    "--warc", metavar="DIR", show_default=False, callback=_warc_folder,
    help=f"Also write every request and response as WARC files in DIR. {setting('warc_dir')}")]
MaxConnectionsOption = Annotated[int | None, typer.Option(
    "--max-connections", **setting_range("max_connections"), metavar="N", show_default=False,
    help="Requests in flight at once over all hosts; each host keeps its own pace, so the hosts ready "
         f"decide how many are. {setting('max_connections')}")]
ThreadsPerHostOption = Annotated[int | None, typer.Option(
    "--threads-per-host", **setting_range("threads_per_host"), metavar="N", show_default=False,
    help=f"Requests in flight per host. {setting('threads_per_host')}")]
DelayOption = Annotated[float | None, typer.Option(
    "--delay", **setting_range("delay"), metavar="SECONDS", show_default=False,
    help=f"Pause between requests to a host. {setting('delay')}")]
HeaderOption = Annotated[list[str] | None, typer.Option(
    "--header", metavar="NAME:VALUE", show_default=False,
    help=f"Send this header with every request (repeatable; not User-Agent). {setting('headers')}")]
NetrcOption = Annotated[Path | None, typer.Option(
    "--netrc", metavar="FILE", show_default=False,
    help=f"Basic auth per host from this netrc file (as curl --netrc-file); never stored. {setting('netrc')}")]
ProbeOption = Annotated[bool | None, typer.Option(
    "--probe-known-paths/--no-probe-known-paths", show_default=False,
    help=f"Probe well-known sitemap paths when robots.txt lists none. {setting('probe_known_paths')}")]
StrictOption = Annotated[bool | None, typer.Option(
    "--strict/--no-strict", show_default=False,
    help=f"Drop URLs outside each sitemap's scope. {setting('strict_scope')}")]

# --- old names, hidden: they still work ---------------------------------------------------------------

OldPartitionOption = Annotated[str | None, typer.Option(
    "--partition", metavar="K/N", hidden=True, show_default=False, help="The old name of fetch's --split.")]
OldPartitionsOption = Annotated[int | None, typer.Option(
    "--partitions", min=1, max=MAX_FETCH_SPLITS, metavar="N", hidden=True, show_default=False,
    help="The old name of --fetch-splits.")]
OldThreadsOption = Annotated[int | None, typer.Option(
    "--threads", **setting_range("max_connections"), metavar="N", hidden=True, show_default=False,
    help="The old name of --max-connections.")]


def renamed(value: T | None, old_value: T | None, flag: str, old_flag: str) -> T | None:
    """The value of `flag`, or of `old_flag` (its old, hidden name); UsageError when both are given."""
    if value is not None and old_value is not None:
        raise UsageError(f"{old_flag} is the old name of {flag}: give one of them")
    return old_value if value is None else value
