"""The runner of a phase's splits (`Runner`), and its local back end: `--workers N` as N processes.

A phase runs as `SplitTask`s (`batch.calls`), one per split (or fetch
split): the same picklable call for every back end. A `Runner` submits
them all, gathers their counts (`WorkerResults`) and, on Ctrl-C, cancels
them. Two back ends: `Pool` (local processes, each in its own session, its
task pickled on its stdin, writing progress and counts as JSON lines on the
pipe that `SITEMAPCRAWL_WORKER_FD` names; their stderr relayed line by line
with its split, `on_line(split, line)`) and `batch.dask_runner.DaskRunner`.
`merge_counts` makes one count of many. The protocol, and why processes
rather than a Dask `LocalCluster`: docs/cluster.md, One runner, two back ends.

Cost: N processes (each its own HBase connections and, for fetch, its own
threads); the parent only relays lines and sums numbers.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import pickle
import signal
import subprocess
import threading
import time
import types
import typing
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import IO, Any, Protocol, TypeVar

from sitemapcrawl.batch.calls import SplitTask, StageUpdate, as_dict
from sitemapcrawl.errors import UsageError, WorkerFailedError
from sitemapcrawl.model.splits import BUCKETS, Split

log = logging.getLogger(__name__)

WORKER_FD_ENV = "SITEMAPCRAWL_WORKER_FD"
"""The environment variable naming a worker's pipe to its parent (a file descriptor number)."""

PROGRESS_EVERY = 0.25
"""Seconds between two progress updates of a split (a worker's lines, a Dask task's events)."""

T = TypeVar("T")


class Runner(Protocol):
    """Runs the splits of one phase side by side: `Pool` (local processes) or `DaskRunner`."""

    reruns: bool
    """Whether a lost task is run again (its rerun must then wait for the lease the lost run held)."""

    def run(self, phase: str, batch: str, tasks: Sequence[SplitTask[Any]]) -> WorkerResults:
        """Submit every task, wait for all, return their counts and failures; on KeyboardInterrupt
        cancel what runs, then let the interrupt go on."""


def tasks_wait(runner: Runner, asked: bool) -> bool:
    """Whether the runner's tasks wait for a lease a live holder keeps: when asked (`--wait`), or when
    the runner reruns a lost task (the rerun starts while the lost run's lease has not yet expired)."""
    return asked or runner.reruns


# ------------------------------------------------------------ worker side --

class Throttle:
    """Says yes at most once per `every` seconds: what paces a split's progress updates, for every back end
    (picklable: a Dask task carries its own)."""

    def __init__(self, every: float = PROGRESS_EVERY) -> None:
        self.every = every
        self._last = 0.0

    def __call__(self) -> bool:
        """Is it time for an update? When yes, the next one waits `every` seconds."""
        tick = time.monotonic()
        if tick - self._last < self.every:
            return False
        self._last = tick
        return True


class Channel:
    """A worker's pipe to its parent: progress lines and the final counts (see the module docstring)."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._lock = threading.Lock()
        self._throttle = Throttle()

    @classmethod
    def from_env(cls) -> Channel | None:
        """The channel named by SITEMAPCRAWL_WORKER_FD, or None when this process is no worker."""
        fd = os.environ.get(WORKER_FD_ENV, "")
        if not fd.isdigit():
            return None
        try:
            return cls(os.fdopen(int(fd), "w", buffering=1, encoding="utf-8"))
        except OSError:
            return None

    def _send(self, message: dict[str, Any]) -> None:
        with self._lock, contextlib.suppress(OSError, ValueError):
            self._stream.write(json.dumps(message, default=str) + "\n")

    def progress(self, stage: str, done: int, total: int | None = None, errors: int = 0) -> None:
        """Tell the parent how far this worker is (throttled)."""
        if self._throttle():
            self._send({"stage": stage, "done": done, "total": total, "errors": errors})

    def counts(self, counts: object) -> None:
        """Send the job's counts dataclass at the end of the command (always sent)."""
        self._send({"counts": as_dict(counts)})


# ---------------------------------------------------------------- merging --

def _hint_types(hint: Any) -> tuple[Any, bool]:
    """(the type inside `X | None`, whether None is allowed)."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        return (args[0] if len(args) == 1 else hint), True
    return hint, False


def _merge_value(hint: Any, name: str, values: list[Any]) -> Any:
    inner, optional = _hint_types(hint)
    present = [v for v in values if v is not None]
    if not present:
        return None if optional else _empty(inner)
    origin = typing.get_origin(inner) or inner
    if dataclasses.is_dataclass(inner) and isinstance(inner, type):
        return merge_counts(inner, present)
    if origin is Counter:
        key_type = (typing.get_args(inner) or (str,))[0]
        total: Counter[Any] = Counter()
        for value in present:  # JSON made every key text: give int keys back their type
            total.update({key_type(k) if key_type is int else k: n for k, n in value.items()})
        return total
    if origin is dict:
        value_type = typing.get_args(inner)[1] if typing.get_args(inner) else Any
        keys = {key for value in present for key in value}
        return {key: _merge_value(value_type, name, [v.get(key) for v in present]) for key in keys}
    if origin in (int, float) and not isinstance(present[0], bool):
        return max(present) if name == "seconds" else sum(present)
    return present[0]


def _empty(hint: Any) -> Any:
    origin = typing.get_origin(hint) or hint
    if origin is Counter:
        return Counter()
    if origin is dict:
        return {}
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return hint()
    return None


def merge_counts(cls: type[T], parts: Sequence[dict[str, Any]]) -> T:
    """One counts dataclass from the dicts of N workers: numbers and counters add, `seconds` takes
    the longest (the workers ran side by side), text (batch id, why stopped) the first given.

    Raises TypeError for a class that is not a dataclass. Pure.
    """
    if not (dataclasses.is_dataclass(cls) and isinstance(cls, type)):
        raise TypeError(f"{cls!r} is not a dataclass")
    hints = typing.get_type_hints(cls)
    values = {f.name: _merge_value(hints[f.name], f.name, [part.get(f.name) for part in parts])
              for f in dataclasses.fields(cls) if f.init}
    return cls(**{k: v for k, v in values.items() if v is not None or _hint_types(hints[k])[1]})


def top_n_of_split(total: int | None, split: Split) -> int | None:
    """Split K's share of a limit over N splits (the shares add up to `total`; None stays None). Pure."""
    if total is None:
        return None
    return total * (split.index + 1) // split.count - total * split.index // split.count


def check_workers(workers: int) -> None:
    """UsageError unless 1 <= workers <= BUCKETS."""
    if not 1 <= workers <= BUCKETS:
        raise UsageError(f"--workers {workers}: need 1 to {BUCKETS}")


# ------------------------------------------------------------ parent side --

@dataclass
class _Worker:
    label: str
    process: subprocess.Popen[bytes]
    reader: IO[str]
    progress: dict[str, tuple[int, int | None, int]] = field(default_factory=dict)
    counts: dict[str, Any] | None = None
    last_line: str = ""
    threads: list[threading.Thread] = field(default_factory=list)


@dataclass(frozen=True)
class WorkerResults:
    """What the workers of one phase sent: their counts, one dict each (finished workers only)."""

    counts: list[dict[str, Any]]
    failed: list[str]
    """One line per worker that exited non-zero."""

    def merged(self, cls: type[T]) -> T:
        """The counts of every finished worker as one (see `merge_counts`)."""
        return merge_counts(cls, self.counts)


class Pool:
    """Runs one phase as N worker processes (see the module docstring).

    `command` starts a worker (`python -m sitemapcrawl.cli.worker`); `console` is
    what it needs besides its task to speak as the parent does (verbosity, log
    file), pickled with the task on its stdin: never in its argv or a file.
    """

    reruns = False

    def __init__(self, command: Sequence[str], console: object, on_stage: StageUpdate,
                 on_line: Callable[[str, str], None]) -> None:
        self.command = list(command)
        self.console = console
        self.on_stage = on_stage
        self.on_line = on_line
        self._lock = threading.Lock()

    def _start(self, task: SplitTask[Any]) -> _Worker:
        call = pickle.dumps((self.console, task), protocol=pickle.HIGHEST_PROTOCOL)  # a bad task fails here
        read_fd, write_fd = os.pipe()
        env = dict(os.environ, **{WORKER_FD_ENV: str(write_fd)})
        try:
            process = subprocess.Popen(
                self.command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                env=env, pass_fds=(write_fd,), start_new_session=True)
        finally:
            os.close(write_fd)
        assert process.stdin is not None
        with contextlib.suppress(BrokenPipeError):  # a worker that died at once says why on stderr
            process.stdin.write(call)
        with contextlib.suppress(BrokenPipeError):
            process.stdin.close()
        return _Worker(task.label, process, os.fdopen(read_fd, "r", encoding="utf-8"))

    def _relay_stderr(self, worker: _Worker) -> None:
        assert worker.process.stderr is not None
        for raw in worker.process.stderr:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            if line.strip():
                worker.last_line = line
                self.on_line(worker.label, line)

    def _read_pipe(self, worker: _Worker, everyone: list[_Worker]) -> None:
        for line in worker.reader:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if "counts" in message:
                worker.counts = message["counts"]
                continue
            stage = str(message.get("stage", "?"))
            with self._lock:
                worker.progress[stage] = (int(message.get("done") or 0), message.get("total"),
                                          int(message.get("errors") or 0))
                self._show(stage, everyone)

    def _show(self, stage: str, everyone: list[_Worker]) -> None:
        shown = [w.progress[stage] for w in everyone if stage in w.progress]
        totals = [t for _d, t, _e in shown]
        total = sum(t for t in totals if t is not None) if all(t is not None for t in totals) else None
        self.on_stage(f"{stage} x{len(everyone)}", sum(d for d, _t, _e in shown), total,
                      sum(e for _d, _t, e in shown))

    def run(self, phase: str, batch: str, tasks: Sequence[SplitTask[Any]]) -> WorkerResults:
        """Run one worker process per task side by side; wait for all; return what they sent.

        On KeyboardInterrupt every running worker gets one SIGINT and is waited
        for (SIGKILL after 60 s), then the interrupt goes on.
        """
        everyone: list[_Worker] = []
        try:
            for task in tasks:
                worker = self._start(task)
                everyone.append(worker)
            for worker in everyone:
                worker.threads = [threading.Thread(target=self._relay_stderr, args=(worker,), daemon=True),
                                  threading.Thread(target=self._read_pipe, args=(worker, everyone), daemon=True)]
                for thread in worker.threads:
                    thread.start()
            for worker in everyone:
                worker.process.wait()
        except BaseException:
            _stop(everyone)
            raise
        finally:
            for worker in everyone:
                for thread in worker.threads:
                    thread.join(timeout=5)
                worker.reader.close()
        failed = [f"{phase} worker {w.label} (pid {w.process.pid}) failed with exit code {w.process.returncode}"
                  + (f": {w.last_line}" if w.last_line else "") for w in everyone if w.process.returncode != 0]
        return WorkerResults([w.counts for w in everyone if w.counts is not None and w.process.returncode == 0],
                             failed)


def _stop(everyone: list[_Worker]) -> None:
    running = [w for w in everyone if w.process.poll() is None]
    for worker in running:
        with contextlib.suppress(ProcessLookupError):
            worker.process.send_signal(signal.SIGINT)
    deadline = time.monotonic() + 60
    for worker in running:
        try:
            worker.process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            worker.process.kill()
            worker.process.wait()


def raise_failed(results: WorkerResults) -> None:
    """WorkerFailedError naming every failed worker in one line, if any failed."""
    if results.failed:
        raise WorkerFailedError("; ".join(results.failed))


def sub_splits(split: Split, workers: int) -> list[Split]:
    """The splits M workers of split K/N take: K*M+j of N*M for j < M, which cover exactly the
    buckets of K/N (`Split.buckets` is a floor of K*BUCKETS/N). UsageError beyond BUCKETS splits."""
    check_workers(workers)
    if split.count * workers > BUCKETS:
        raise UsageError(f"--split {split.text()} with --workers {workers}: at most {BUCKETS} splits in all")
    return [Split(split.index * workers + j, split.count * workers) for j in range(workers)]


def run_splits(runner: Runner, phase: str, batch: str, split: Split, workers: int,
               task_for: Callable[[Split], SplitTask[Any]]) -> WorkerResults:
    """Run `phase` as `workers` tasks over the sub-splits of `split` (see `sub_splits`)."""
    return runner.run(phase, batch, [task_for(s) for s in sub_splits(split, workers)])
