"""What every command uses: the settings built once, help text, messages, the store, progress, workers.

`State` holds what the global options gave (set by `app.global_options`);
`setting(name)` writes the `[setting ...; env ...; default ...]` help tail;
`echo_err` prints for a person on stderr, above the live display; the rest
opens the store or the HTTP client, reads seed lines, shows a stage's
progress and runs a phase as worker processes. The store, the HTTP client
and the workers are imported inside the functions, to keep start-up light.
"""

# No `from __future__ import annotations` here: typer would then eval every
# annotation string (twice) at each start; real annotations are built once.
import contextlib
import io
import sys
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from sitemapcrawl.cli.console import Messages, StageUpdate
from sitemapcrawl.config import ENV_PREFIX, Settings
from sitemapcrawl.errors import UsageError

if TYPE_CHECKING:
    from sitemapcrawl.batch.workers import Pool
    from sitemapcrawl.storage.store import Store
    from sitemapcrawl.web.http import PoliteHttpClient

# Job modules, the store (happybase), the HTTP client (requests), rich and the
# sitemap engine are imported inside the commands that use them: `--help`,
# `--version` and `sitemap parse FILE` start in a fraction of the time
# (benchmarks/bench_cli.py).


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


def open_store() -> "Store":
    """The store for the configured HBase address and table prefix."""
    from sitemapcrawl.storage.store import Store

    return Store(State.settings)


@contextlib.contextmanager
def stage_progress() -> Iterator[StageUpdate]:
    """The live display of the running stage on a terminal; yields `update(stage, done, total, errors)`.

    In a worker of `--workers N` the updates go to the parent instead (`batch.workers`).
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


SPLIT_HELP = "Only split K (0-based) of N: a share of the host buckets [default: all]."


WORKERS_HELP = "Run N local worker processes, one split each, and merge their counts."


@contextlib.contextmanager
def http_client(settings: Settings, max_bytes: int | None = None,
                record: bool = False) -> "Iterator[PoliteHttpClient]":
    """The polite HTTP client of `settings`, closed after use; UsageError without a user agent.

    `record`: write its exchanges as WARC files when the settings name a folder (`warc_dir`).
    """
    from sitemapcrawl.web.http import PoliteHttpClient
    from sitemapcrawl.web.warc import open_recorder

    recorder = open_recorder(settings) if record else None
    client = PoliteHttpClient.from_settings(settings, max_bytes=max_bytes, recorder=recorder)
    try:
        yield client
    finally:
        client.close()


def seed_lines(seeds: str | None, stack: contextlib.ExitStack) -> Iterable[str]:
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


MODE_HELP = f"Which rows are crawled. {setting('crawl_mode')}"
