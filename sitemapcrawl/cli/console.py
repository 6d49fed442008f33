"""What a person (or a log shipper) sees on stderr: messages, the live progress display, the log.

Only the command line uses this module. On a terminal each running stage has
one live line (name, bar, done/total, rate, ETA, errors); messages and log
records are printed above it, so a summary is never erased by the next
redraw. When stderr is not a terminal (or with --quiet) there is no live
display, only the plain message lines. rich is imported only when a live
display is shown, so commands start fast. With `--log-format json` every
line on stderr and in `--log-file` is one JSON object (`json_line`: time,
level, logger, message, and the command, batch and split `logfields` knows),
messages and errors included, and there is no live display.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

from sitemapcrawl import logfields
from sitemapcrawl.clock import precise_now
from sitemapcrawl.errors import SitemapCrawlError, UsageError
from sitemapcrawl.safetext import printable

#: The name every error line starts with.
PROG = "sitemapcrawl"
#: The exit code of a command stopped by Ctrl-C (128 + SIGINT, as shells give).
EXIT_INTERRUPTED = 130
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
LOG_DATE_FORMAT = "%Y-%m-%dT%H:%M:%S"
#: The logger name a message of the command line carries in JSON lines.
CLI_LOGGER = "sitemapcrawl.cli"


def failure(exc: SitemapCrawlError | KeyboardInterrupt) -> tuple[str, int]:
    """The one stderr line and the exit code of a command (or a worker's split) that `exc` stopped."""
    if isinstance(exc, KeyboardInterrupt):
        return f"{PROG}: interrupted", EXIT_INTERRUPTED
    return f"{PROG}: error: {printable(str(exc), limit=500)}", exc.exit_code


def json_line(level: str, logger: str, message: str, at: float | None = None, **more: str) -> str:
    """One log line as a JSON object: `time` (UTC, milliseconds), `level`, `logger`, `message`, the fields
    `logfields` knows (`command`, `batch`, `split`) and `more`. ASCII only: what servers sent is escaped."""
    moment = precise_now().timestamp() if at is None else at
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(moment)) + f".{int(moment % 1 * 1000):03d}Z"
    return json.dumps({"time": stamp, "level": level, "logger": logger, "message": message,
                       **logfields.current(), **more})


class StageUpdate(Protocol):
    """`update(stage, done, total=None, errors=0)`: progress of the running stage."""

    def __call__(self, stage: str, done: int, total: int | None = None, errors: int = 0) -> None: ...


class Messages:
    """stderr for people: plain lines, or lines above the live display while one runs."""

    def __init__(self) -> None:
        self.quiet = False
        self.json = False
        """`--log-format json`: every line a JSON object, no live display."""
        self._live: Any = None  # the rich Progress while a live display runs

    def echo(self, message: str) -> None:
        """Print a message for a person on stderr (never data); nothing with --quiet."""
        if not self.quiet:
            self.say(message)

    def say(self, message: str, level: str = "INFO") -> None:
        """A line of the command line itself: as it is, or in JSON mode as a record of `level`."""
        self.write(json_line(level, CLI_LOGGER, message) if self.json else message)

    def write(self, message: str) -> None:
        """Print a line on stderr, above the live display if one runs; control characters escaped."""
        message = printable(message, keep_newlines=True)  # what servers send must not drive the terminal
        live = self._live
        if live is not None:
            live.refresh()  # the line left under the message shows the current counts
            live.console.print(message, markup=False, highlight=False, emoji=False, soft_wrap=True)
        else:
            try:
                sys.stderr.write(message + "\n")
            except UnicodeEncodeError:  # a surrogate-escaped byte, or a terminal that is not UTF-8
                sys.stderr.write(message.encode("ascii", "backslashreplace").decode("ascii") + "\n")
            sys.stderr.flush()

    @contextlib.contextmanager
    def stages(self, console: Any = None) -> Iterator[StageUpdate]:
        """A live display on a terminal, one line per running stage; yields `update`.

        `console` (a rich Console) is for tests; by default the display is
        shown only when stderr is a terminal and --quiet was not given.
        """
        if console is None and (self.quiet or self.json or not sys.stderr.isatty()):
            yield _ignore
            return
        from sitemapcrawl.cli.console_live import live_progress

        with live_progress(console) as progress:
            self._live = progress
            try:
                tasks: dict[str, Any] = {}

                def update(stage: str, done: int, total: int | None = None, errors: int = 0) -> None:
                    if stage not in tasks:
                        for task in tasks.values():  # one live line: the running stage's
                            progress.remove_task(task)
                        tasks.clear()
                        tasks[stage] = progress.add_task(stage, total=total, errors=0)
                        progress.update(tasks[stage], completed=done, total=total, errors=errors, refresh=True)
                    else:
                        progress.update(tasks[stage], completed=done, total=total, errors=errors)

                yield update
            finally:
                self._live = None


def _ignore(stage: str, done: int, total: int | None = None, errors: int = 0) -> None:
    return None


_INSTALLED = "_sitemapcrawl_handler"
_VERBOSITY = [0]
"""The -v count `setup_logging` was given (for `adopt_library_logs`)."""


def setup_logging(messages: Messages, verbose: int, quiet: bool, log_file: Path | None, as_json: bool = False) -> None:
    """Install the log handlers: time-stamped lines on stderr, and in `log_file` if given.

    -v shows our INFO messages, -vv our DEBUG ones, -vvv also the libraries'
    (happybase, aiohttp, ...). Without -v only warnings and errors are shown;
    --quiet leaves errors only on stderr (the log file keeps what -v chose).
    `as_json`: every record (and every message of `messages`) one JSON object
    a line (`json_line`). Raises UsageError when the log file cannot be
    opened. (logging is imported here, not at start-up: `--help` and
    `--version` never need it.)
    """
    import logging

    messages.json = as_json
    logging.captureWarnings(as_json)  # Python's warnings too become JSON lines, not raw text on stderr

    _VERBOSITY[0] = verbose

    class JsonFormatter(logging.Formatter):
        """A record as one JSON line (`json_line`); an exception's traceback goes in `exception`."""

        def format(self, record: logging.LogRecord) -> str:
            more = {"exception": self.formatException(record.exc_info)} if record.exc_info else {}
            return json_line(record.levelname, record.name, record.getMessage(), record.created, **more)

    class MessageHandler(logging.Handler):
        """Log records to stderr through `Messages`, so they stay above a live display."""

        def emit(self, record: logging.LogRecord) -> None:
            try:
                messages.write(self.format(record))
            except Exception:  # noqa: BLE001 - logging must never break the command
                self.handleError(record)

    root = logging.getLogger()
    for handler in [h for h in root.handlers if getattr(h, _INSTALLED, False)]:
        root.removeHandler(handler)
        handler.close()
    ours = (logging.WARNING, logging.INFO, logging.DEBUG, logging.DEBUG)[min(verbose, 3)]
    logging.getLogger("sitemapcrawl").setLevel(ours)
    root.setLevel(logging.DEBUG if verbose >= 3 else logging.WARNING)
    formatter = JsonFormatter() if as_json else logging.Formatter(LOG_FORMAT, LOG_DATE_FORMAT)
    handlers: list[logging.Handler] = [MessageHandler()]
    handlers[0].setLevel(logging.ERROR if quiet else logging.NOTSET)
    if log_file is not None:
        try:
            handlers.append(logging.FileHandler(log_file, encoding="utf-8"))
        except OSError as exc:
            raise UsageError(f"--log-file {log_file}: {exc.strerror or exc}") from None
    for handler in handlers:
        handler.setFormatter(formatter)
        setattr(handler, _INSTALLED, True)
        root.addHandler(handler)


def adopt_library_logs(name: str) -> None:
    """Take the logger `name` of a library that installs its own stderr handler (Dask's `distributed` does,
    when imported) under ours: its handlers removed, its records passed up to the ones `setup_logging`
    installed; shown with -v (warnings) and -vvv (everything), never at the default, where a command's own
    lines say what went wrong. Call after importing the library."""
    import logging

    level = (logging.CRITICAL + 1, logging.WARNING, logging.WARNING, logging.DEBUG)[min(_VERBOSITY[0], 3)]
    for logger_name in [name] + [other for other in logging.root.manager.loggerDict if other.startswith(name + ".")]:
        logger = logging.getLogger(logger_name)
        for handler in list(logger.handlers):
            logger.removeHandler(handler)
        logger.propagate = True
        logger.setLevel(logging.NOTSET if logger_name != name else level)


#: Net allocations between two young-generation runs of the cycle collector. CPython's default,
#: 700, ran it every few rows of an inventory's merge, full runs walking every object alive, a sixth
#: of the crawl (measured: benchmarks/results/2026-12-01-scale-inventory.md). The jobs' objects (rows, cells,
#: lines) are short-lived and acyclic, so reference counting frees them; the collector only needs
#: to run now and then, for the rare cycle.
GC_YOUNG_THRESHOLD = 100_000


def tune_garbage_collector() -> None:
    """Run the cycle collector rarely, and never over what the imports built (it lives as long as we do)."""
    import gc

    gc.freeze()
    gc.set_threshold(GC_YOUNG_THRESHOLD, 10, 10)
