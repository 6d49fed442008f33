"""A local worker process of `--workers N`: one split of one phase, its call read from stdin.

`batch.workers.Pool` starts `python -m sitemapcrawl.cli.worker` and writes on
its stdin, pickled, the parent's console (verbosity, quiet, log file) and the
`batch.calls.SplitTask` a Dask task would receive: the settings as the parent
resolved them, credentials included, never in argv or a file. Here the
console is set up as the parent's, the call runs, its progress and counts go
to the parent on the pipe `SITEMAPCRAWL_WORKER_FD` names, its summary and log
lines on stderr (the parent relays them), and an error is one line and an
exit code, the command line's (`console.failure`).
"""

from __future__ import annotations

import pickle
import sys
from typing import Any

from sitemapcrawl import logfields
from sitemapcrawl.batch.calls import SplitTask
from sitemapcrawl.batch.workers import Channel
from sitemapcrawl.cli.console import EXIT_INTERRUPTED, Messages, failure, setup_logging, tune_garbage_collector
from sitemapcrawl.errors import SitemapCrawlError
from sitemapcrawl.modes import LogFormat


def run(console: dict[str, Any], task: SplitTask[Any], channel: Channel | None) -> int:
    """Run `task` as the parent's console would show it; return the exit code."""
    messages = Messages()
    messages.quiet = bool(console.get("quiet"))
    logfields.note(command=task.phase, batch=getattr(task.options, "batch_id", None), split=task.label)
    try:
        setup_logging(messages, int(console.get("verbose") or 0), messages.quiet, console.get("log_file"),
                      as_json=task.settings.log_format == LogFormat.JSON)
        counts = task.run(channel.progress if channel is not None else lambda stage, done, total, errors: None)
    except (SitemapCrawlError, KeyboardInterrupt) as exc:
        line, code = failure(exc)
        messages.say(line, level="ERROR")
        return code
    if channel is not None:
        channel.counts(counts)
    messages.echo(f"{task.phase}: {counts.summary()}")
    return EXIT_INTERRUPTED if getattr(counts, "stopped", "") == "interrupted" else 0


def main() -> None:
    """Read (console, task) from stdin, run it, exit with its code."""
    tune_garbage_collector()
    console, task = pickle.load(sys.stdin.buffer)
    sys.exit(run(console, task, Channel.from_env()))


if __name__ == "__main__":
    main()
