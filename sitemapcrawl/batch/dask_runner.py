"""`--dask tcp://HOST:PORT`: run the splits of a phase as tasks on a Dask cluster the user runs.

Each `SplitTask` (`batch.calls`) becomes one task, that very call (a job on
one split, in the Dask worker's process, with its own HBase connections), named
`PHASE-K/N-BATCH` so the dashboard shows which split runs where. Counts come
back as task results and merge as the local workers' do; progress comes as
Dask events (`TaskProgress`), summed into our live line. No task waits for
another (a phase that needs a barrier runs as two phases, the crawl holding
it between them), so any number of workers runs a phase, one is enough, and
a cluster that shrinks or grows only changes the speed. A lost task is run
again: the scheduler reruns one whose worker died, a task that raised is
retried `RETRIES` times, and this runner submits again a task Dask gave up on
(`KilledWorker`) or lost with its scheduler, once the scheduler answers again
(`reconnect_wait`; else `EngineUnavailableError`, one line saying what to
do). The rerun takes the split's lease over and skips what is done. Ctrl-C
cancels the tasks not started. In full: docs/cluster.md, Dask. `distributed`
is the extra `sitemapcrawl[dask]`, imported only here.

Cost: one task per split (more for the lost); a progress event per task per quarter second.
"""

from __future__ import annotations

import contextlib
import logging
import re
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import CancelledError
from typing import TYPE_CHECKING, Any

from sitemapcrawl.batch.calls import SplitTask, StageUpdate
from sitemapcrawl.batch.workers import Throttle, WorkerResults
from sitemapcrawl.errors import EngineUnavailableError, UsageError

if TYPE_CHECKING:
    from distributed import Client

log = logging.getLogger(__name__)

RETRIES = 2
"""Reruns of a task that raised (a lost worker's task is rerun by the scheduler on its own)."""

RESUBMITS = 3
"""Times this runner submits a task again that Dask lost (KilledWorker, or its scheduler went away)."""

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
        raise EngineUnavailableError(f"--dask {address}: no Dask scheduler answers ({exc})") from None


class TaskProgress:
    """A task's progress callback: throttled Dask events on `topic` (picklable; runs on the worker)."""

    def __init__(self, topic: str, label: str) -> None:
        self.topic = topic
        self.label = label
        self._throttle = Throttle()

    def __call__(self, stage: str, done: int, total: int | None = None, errors: int = 0) -> None:
        if not self._throttle():
            return
        from distributed import get_worker

        try:
            get_worker().log_event(self.topic, {"label": self.label, "stage": stage, "done": done, "total": total,
                                                "errors": errors})
        except Exception:  # noqa: BLE001 -- progress is for the eye: a scheduler gone must not fail the task
            return


class DaskRunner:
    """The `Runner` that submits a phase's splits to a Dask cluster (see the module docstring)."""

    reruns = True

    def __init__(self, client: Client, on_stage: StageUpdate, address: str = "", reconnect_wait: float = 120.0) -> None:
        self.client = client
        self.on_stage = on_stage
        self.address = address or str(client.scheduler.address if client.scheduler is not None else "")
        self.reconnect_wait = reconnect_wait
        self._lock = threading.Lock()

    def threads(self) -> int:
        """Threads of the cluster's workers now (at least 1): how many splits a phase runs as, by default."""
        workers = self.client.scheduler_info().get("workers", {})
        return max(1, sum(int(info.get("nthreads", 1)) for info in workers.values()))

    def run(self, phase: str, batch: str, tasks: Sequence[SplitTask[Any]]) -> WorkerResults:
        """Submit one task per split, wait for all, return their counts; submit again those Dask lost (see the
        module docstring); cancel them on KeyboardInterrupt."""
        from distributed import KilledWorker
        from distributed.comm.core import CommClosedError

        topic = f"sitemapcrawl-{phase}-{secrets.token_hex(4)}"
        heard = self._progress(len(tasks))
        pending = {task.label: task for task in tasks}
        lost: dict[str, int] = {}
        counts: list[dict[str, Any]] = []
        failed: list[str] = []
        while pending:
            self._reconnected(phase, batch)  # a task submitted while the client reconnects is never run
            self.client.subscribe_topic(topic, heard)
            futures = {label: self.client.submit(
                task, TaskProgress(topic, label), retries=RETRIES, pure=False,
                key=f"{phase}-{label}-{batch}" + (f"-again{lost[label]}" if lost.get(label) else ""))
                for label, task in pending.items()}
            try:
                for label, future in futures.items():
                    try:
                        counts.append(future.result())
                    # The worker or the scheduler went away (CommClosedError: while the result was on its way).
                    except (KilledWorker, CancelledError, CommClosedError) as exc:
                        lost[label] = lost.get(label, 0) + 1
                        if lost[label] <= RESUBMITS:
                            log.info("%s task %s was lost (%s); it runs again once the scheduler answers",
                                     phase, future.key, type(exc).__name__)
                            continue
                        failed.append(f"{phase} task {future.key} was lost {lost[label]} times: {type(exc).__name__}")
                    except Exception as exc:  # noqa: BLE001 -- a task's failure is a line, as a worker's exit code is
                        failed.append(f"{phase} task {future.key} failed: {type(exc).__name__}: {exc}")
                    del pending[label]
            except BaseException:
                self.client.cancel(list(futures.values()))
                raise
            finally:
                with contextlib.suppress(Exception):  # a client whose scheduler went away cannot unsubscribe
                    self.client.unsubscribe_topic(topic)
        return WorkerResults(counts, failed)

    def _progress(self, splits: int) -> Callable[[Any], None]:
        """The handler of the tasks' progress events: their sum on the live line."""
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
                self.on_stage(f"{stage} x{splits}", sum(d for d, _t, _e in shown), total,
                              sum(e for _d, _t, e in shown))

        return heard

    def _reconnected(self, phase: str, batch: str) -> None:
        """Return once the client talks to a scheduler again (its own reconnection, or a new client once
        it gave up); EngineUnavailableError, one line saying what to do, after `reconnect_wait` seconds."""
        deadline = time.monotonic() + self.reconnect_wait
        while self.client.status != "running":
            if self.client.status in ("closing", "closed", "failed"):
                with contextlib.suppress(Exception):  # the client that gave up: its threads and comms go
                    self.client.close()
                with contextlib.suppress(EngineUnavailableError):
                    self.client = connect(self.address)
                    continue
            if time.monotonic() > deadline:
                then = "" if phase == "generate" else f": it finishes batch {batch} first"
                raise EngineUnavailableError(
                    f"{phase}: the Dask scheduler at {self.address} went away and did not answer again within "
                    f"{self.reconnect_wait:g} s (dask_reconnect_wait); start it and its workers, then run the "
                    f"crawl again{then}")
            time.sleep(0.5)

    def close(self) -> None:
        """Close the client (the cluster keeps running)."""
        self.client.close()
