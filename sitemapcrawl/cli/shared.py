"""What every command uses: the settings built once, help text, messages, the store, progress, workers.

`State` holds what the global options gave (set by `app.global_options`);
`setting(name)` writes the `[setting ...; env ...; default ...]` help tail;
`echo_err` prints for a person on stderr, above the live display; the rest
opens the store or the HTTP client, reads seed lines, shows a stage's
progress and runs a phase's splits (local processes or Dask tasks). The store, the HTTP client
and the workers are imported inside the functions, to keep start-up light.
"""

import contextlib
import io
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sitemapcrawl.cli.console import Messages, StageUpdate
from sitemapcrawl.config import ENV_PREFIX, Settings
from sitemapcrawl.errors import UsageError

if TYPE_CHECKING:
    from sitemapcrawl.batch.workers import Runner
    from sitemapcrawl.model.splits import Split
    from sitemapcrawl.storage.store import Store
    from sitemapcrawl.web.http import PoliteHttpClient

# Job modules, the store (happybase), the HTTP client (requests), rich and the
# sitemap engine are imported inside the commands that use them: `--help`,
# `--version` and `sitemap parse FILE` start in a fraction of the time
# (measured: benchmarks/results/2026-11-30-cli-startup.md).


_DEFAULTS = Settings()


def setting(name: str) -> str:
    """Help text naming setting `name`: its environment variable and default."""
    default = getattr(_DEFAULTS, name)
    shown = "none" if default is None or default == () else '""' if default == "" else default
    return f"[setting {name}; env {ENV_PREFIX}{name.upper()}; default: {shown}]"


class State:
    """What the global options give every command: the settings, built once."""

    settings: Settings = _DEFAULTS
    messages = Messages()
    console: dict[str, Any] = {}
    """The global console options (verbose, quiet, log file), for the worker processes of `--workers N`."""


def echo_err(message: str) -> None:
    """Print a message for a person on stderr (never data), above any live display."""
    State.messages.echo(message)


def worker_line(split: str, line: str) -> None:
    """A line a worker process wrote on its stderr, relayed: `[K/N] line`, or with `--log-format json` its
    JSON object with `split` added (a line that is none is wrapped in one)."""
    if not State.messages.json:
        echo_err(f"[{split}] {line}")
        return
    import json

    try:
        record = json.loads(line)
    except ValueError:
        record = None
    if isinstance(record, dict):
        State.messages.write(json.dumps({**record, "split": record.get("split") or split}))
    else:
        from sitemapcrawl.cli.console import CLI_LOGGER, json_line

        State.messages.write(json_line("INFO", CLI_LOGGER, line, split=split))


def open_store() -> "Store":
    """The store for the configured HBase address and table prefix."""
    from sitemapcrawl.storage.store import Store

    return Store(State.settings)


@contextlib.contextmanager
def stage_progress() -> Iterator[StageUpdate]:
    """The live display of the running stage on a terminal; yields `update(stage, done, total, errors)`."""
    with State.messages.stages() as update:
        yield update


def dask_address(flag: str | None) -> str | None:
    """The Dask scheduler to run splits on: `--dask`, else the `dask_scheduler` setting (None: local);
    UsageError, one line, for one that is no Dask address (checked before anything is done)."""
    address = flag or State.settings.dask_scheduler or None
    if address is None:
        return None
    from sitemapcrawl.batch.dask_runner import check_address

    return check_address(address)


@contextlib.contextmanager
def split_runner(update: StageUpdate, dask: str | None = None, quiet: bool = False) -> "Iterator[Runner]":
    """The runner of a phase's splits: tasks on the Dask scheduler `dask`, or else local worker
    processes (`cli.worker`) with this console (`quiet`: workers print their errors only)."""
    if dask is None:
        from sitemapcrawl.batch.workers import Pool

        console = {**State.console, "quiet": quiet or State.console.get("quiet", False)}
        yield Pool([sys.executable, "-m", "sitemapcrawl.cli.worker"], console, on_stage=update, on_line=worker_line)
        return
    from sitemapcrawl.batch.dask_runner import INSTALL_HINT, DaskRunner, connect
    from sitemapcrawl.cli.console import adopt_library_logs

    try:
        import distributed  # noqa: F401 -- imported first: it installs its own log handlers, taken under ours
    except ImportError:
        raise UsageError(INSTALL_HINT) from None
    for library in ("distributed", "tornado", "bokeh"):
        adopt_library_logs(library)
    runner = DaskRunner(connect(dask), on_stage=update, address=dask,
                        reconnect_wait=State.settings.dask_reconnect_wait)
    try:
        yield runner
    finally:
        runner.close()


def split_count(runner: "Runner", workers: int) -> int:
    """How many splits a phase runs as: `--workers N`, or on Dask without it, the cluster's threads."""
    from sitemapcrawl.batch.dask_runner import DaskRunner
    from sitemapcrawl.model.splits import BUCKETS

    if workers > 1 or not isinstance(runner, DaskRunner):
        return workers
    return max(1, min(runner.threads(), BUCKETS))


def chosen_split(split: str | None, splits: int | None) -> "Split":
    """The split `--split` names: `K/N`, `auto` (from the batch scheduler's variables), or none (the whole).

    `splits` is the `--splits` flag (None: the `splits` setting). UsageError, one line, for a bad K/N,
    for scheduler variables that give no consistent K/N, or for --splits without --split auto.
    """
    from sitemapcrawl.model.splits import WHOLE, Split

    if split is not None and split.strip().lower() == "auto":
        import os

        from sitemapcrawl.model.taskindex import split_from_scheduler

        return split_from_scheduler(os.environ, State.settings.splits if splits is None else splits)
    if splits is not None:
        raise UsageError("--splits N goes with --split auto (with --split K/N, N is given)")
    return Split.parse(split) if split is not None else WHOLE


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


def access_flags(header: list[str] | None, netrc: Path | None) -> dict[str, Any]:
    """The settings `--header` and `--netrc` give, for `config.with_flags` (None: not given)."""
    return {"headers": tuple(header) if header else None, "netrc": netrc}
