"""`--dask tcp://HOST:PORT`: run the splits of a phase as tasks on a Dask cluster the user runs.

Each `SplitTask` becomes one task, its plain `call` (a job on one split, in
the Dask worker's process, with its own HBase connections), named
`PHASE-K/N-BATCH` so the dashboard shows which split runs where. Counts come
back as task results and merge as the local workers' do; progress comes as
Dask events (`TaskProgress`), summed into our live line. A worker lost
mid-task: the scheduler runs the task again elsewhere, and a task that
raised is retried `RETRIES` times; the rerun takes the split's lease over and
skips what is done. Ctrl-C cancels the tasks not started. In full:
docs/cluster.md, Dask. `distributed` is the extra `sitemapcrawl[dask]`,
imported only here.

Cost: one task per split; a progress event per task per quarter second.
"""

from __future__ import annotations

import re
import secrets
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sitemapcrawl.batch.workers import SplitTask, StageUpdate, WorkerResults
from sitemapcrawl.errors import UsageError

if TYPE_CHECKING:
    from distributed import Client

RETRIES = 2
"""Reruns of a task that raised (a lost worker's task is rerun by the scheduler on its own)."""

_PROGRESS_EVERY = 0.25

SIDE_BY_SIDE = frozenset({"updatedb"})
"""Phases whose splits wait for each other (updatedb's barrier): all must hold a thread at once."""

THREADS_WAIT = 60.0
"""Seconds a side-by-side phase waits for enough threads before it gives up."""

INSTALL_HINT = "--dask needs the Dask client: pip install 'sitemapcrawl[dask]'"


SCHEMES = ("tcp", "tls", "ws", "wss", "ucx")
"""The address schemes of a Dask scheduler in another process (`inproc://` lives inside one process)."""

_PORT = re.compile(r"[0-9]{1,5}")
_HOST = re.compile(r"[A-Za-z0-9._~%-]+")


def check_address(address: str) -> str:
    """`address` stripped when it is a Dask scheduler address `[SCHEME://]HOST[:PORT]` (SCHEMES; IPv6 in
    brackets; no port: Dask's 8786); UsageError, one line, otherwise. No network, no import of Dask: a
    bad address is answered at once, not after a connection timeout."""
    text = address.strip()
    shown = repr(text if len(text) <= 80 else text[:77] + "...")
    scheme, sep, rest = text.partition("://")
    if not sep:
        scheme, rest = "tcp", text
    if scheme.lower() not in SCHEMES:
        raise UsageError(f"--dask {shown}: unknown scheme {scheme[:20]!r}: a Dask scheduler address is "
                         f"tcp://HOST:PORT (or {', '.join(s + '://' for s in SCHEMES[1:])})")
    if rest.startswith("["):  # [IPv6]:PORT
        host, closed, after = rest[1:].partition("]")
        ok = bool(closed) and bool(host) and all(c in "0123456789abcdefABCDEF:." for c in host)
    else:
        host, colon, port = rest.partition(":")
        after = colon + port
        ok = bool(_HOST.fullmatch(host))
    if after:  # a port: ':' and 1..65535
        port = after[1:]
        ok = ok and after.startswith(":") and bool(_PORT.fullmatch(port)) and 0 < int(port) < 65_536
    if not ok:
        raise UsageError(f"--dask {shown}: expected {scheme}://HOST:PORT (an IPv6 host in brackets: "
                         f"{scheme}://[::1]:8786)")
    return text


def connect(address: str) -> Client:
    """A client of the Dask scheduler at `address`; UsageError (one line) for an address that is not one
    (`check_address`), when `distributed` is not installed, or when the scheduler does not answer within 10 s."""
    address = check_address(address)
    try:
        from distributed import Client
    except ImportError:
        raise UsageError(INSTALL_HINT) from None
    try:
        return Client(address, timeout=10, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        raise UsageError(f"--dask {address}: no Dask scheduler answers ({exc})") from None


class TaskProgress:
    """A task's progress callback: throttled Dask events on `topic` (picklable; runs on the worker)."""

    def __init__(self, topic: str, label: str) -> None:
        self.topic = topic
        self.label = label
        self._last = 0.0

    def __call__(self, stage: str, done: int, total: int | None = None, errors: int = 0) -> None:
        now = time.monotonic()
        if now - self._last < _PROGRESS_EVERY:
            return
        self._last = now
        from distributed import get_worker

        get_worker().log_event(self.topic, {"label": self.label, "stage": stage, "done": done, "total": total,
                                            "errors": errors})


class DaskRunner:
    """The `Runner` that submits a phase's splits to a Dask cluster (see the module docstring)."""

    def __init__(self, client: Client, on_stage: StageUpdate) -> None:
        self.client = client
        self.on_stage = on_stage
        self._lock = threading.Lock()

    def threads(self) -> int:
        """Threads of the cluster's workers now: how many splits can run side by side."""
        workers = self.client.scheduler_info().get("workers", {})
        return sum(int(info.get("nthreads", 1)) for info in workers.values())

    def _wait_for_threads(self, phase: str, needed: int) -> None:
        """Wait up to THREADS_WAIT seconds for `needed` threads (a lost worker's replacement joining);
        UsageError naming what is missing after that."""
        deadline = time.monotonic() + THREADS_WAIT
        while (threads := self.threads()) < needed:
            if time.monotonic() > deadline:
                raise UsageError(f"{phase}: {needed} splits wait for each other, but the Dask cluster has "
                                 f"{threads} threads: give --workers {threads} or fewer, or add workers")
            time.sleep(0.5)

    def run(self, phase: str, batch: str, tasks: Sequence[SplitTask]) -> WorkerResults:
        """Submit one task per split, wait for all, return their counts; cancel them on KeyboardInterrupt."""
        if phase in SIDE_BY_SIDE:
            self._wait_for_threads(phase, len(tasks))
        topic = f"sitemapcrawl-{phase}-{secrets.token_hex(4)}"
        seen: dict[str, dict[str, tuple[int, int | None, int]]] = {}

        def heard(event: Any) -> None:
            message = event[1] if isinstance(event, tuple) else event
            stage = str(message.get("stage", "?"))
            with self._lock:
                seen.setdefault(stage, {})[str(message.get("label"))] = (
                    int(message.get("done") or 0), message.get("total"), int(message.get("errors") or 0))
                shown = list(seen[stage].values())
                totals = [t for _d, t, _e in shown]
                total = sum(t for t in totals if t is not None) if None not in totals else None
                self.on_stage(f"{stage} x{len(tasks)}", sum(d for d, _t, _e in shown), total,
                              sum(e for _d, _t, e in shown))

        self.client.subscribe_topic(topic, heard)
        futures = [self.client.submit(task.call, TaskProgress(topic, task.label), key=f"{phase}-{task.label}-{batch}",
                                      retries=RETRIES, pure=False) for task in tasks]
        counts: list[dict[str, Any]] = []
        failed: list[str] = []
        try:
            for future in futures:
                try:
                    counts.append(future.result())
                except Exception as exc:  # noqa: BLE001 -- a task's failure is a line, as a worker's exit code is
                    failed.append(f"{phase} task {future.key} failed: {type(exc).__name__}: {exc}")
        except BaseException:
            self.client.cancel(futures)
            raise
        finally:
            self.client.unsubscribe_topic(topic)
        return WorkerResults(counts, failed)

    def close(self) -> None:
        """Close the client (the cluster keeps running)."""
        self.client.close()
