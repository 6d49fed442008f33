"""Overlap HBase and Python: a job's writes run behind it, its next chunk is read ahead of it.

A job that reads, works and writes chunks waits for HBase about as long as it
computes; on two cores the waits can overlap the work. `WriteBehind.submit`
queues a write call and returns at once (waiting while `depth` calls are
queued or running); the calls run one at a time in the order submitted, so
what a job writes first lands first. With `workers` above one, calls run at
once and may land out of order: only for disjoint rows whose order does not
matter. A failed call stops the queued calls not yet started; its error is
raised at the next `submit` or at `close`. Use it only where a chunk's
writes are not read back before the pass ends (close it between passes).
`read_ahead(chunks)` iterates `chunks` on a thread, one chunk ahead of the
job; its errors reach the job when it gets to that chunk. `side_by_side`
runs a call per item on a few threads, the results in order (work that is
mostly round trips: one small sitemap's parse).

Cost: a thread per `WriteBehind` worker (none for a single write, made at `close`) and per
`read_ahead`; memory: `depth` chunks.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType
from typing import Any, TypeVar

__all__ = ["WriteBehind", "read_ahead", "side_by_side"]

log = logging.getLogger(__name__)
T = TypeVar("T")
R = TypeVar("R")


class WriteBehind:
    """Background write calls, at most `depth` queued or running, on `workers` threads (see the module docstring)."""

    def __init__(self, depth: int = 2, workers: int = 1) -> None:
        self._depth = max(1, depth)
        self._workers = max(1, workers)
        self._pool: ThreadPoolExecutor | None = None
        self._held: tuple[Callable[..., Any], tuple[Any, ...]] | None = None
        self._queued: deque[Future[Any]] = deque()
        self._failed = threading.Event()

    def submit(self, write: Callable[..., Any], *args: Any) -> None:
        """Queue `write(*args)`; raise the error of an earlier call that failed.

        The first call is held until a second comes: a job that writes one chunk (a small sitemap's
        entries, most of a parse's) writes it at `close` on its own thread and starts no thread.
        """
        if self._pool is None:
            if self._held is None:
                self._held = (write, args)
                return
            self._pool = ThreadPoolExecutor(max_workers=self._workers, thread_name_prefix="write-behind")
            held, self._held = self._held, None
            self._queued.append(self._pool.submit(self._run, *held))
        self._wait_until(self._depth - 1)
        self._queued.append(self._pool.submit(self._run, write, args))

    def _run(self, write: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        if self._failed.is_set():
            return None  # an earlier write failed: nothing after it is written
        try:
            return write(*args)
        except BaseException:
            self._failed.set()
            raise

    def _wait_until(self, queued: int) -> None:
        """Wait until at most `queued` calls are waiting; raise the first error met."""
        while len(self._queued) > queued:
            self._queued.popleft().result()

    def close(self) -> None:
        """Wait for every queued call (or make the one held); raise the first error among them."""
        if self._held is not None:
            write, args = self._held
            self._held = None
            write(*args)
            return
        if self._pool is None:
            return
        try:
            self._wait_until(0)
        finally:
            self._pool.shutdown(wait=True)

    def __enter__(self) -> WriteBehind:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if kind is None:
            self.close()
            return
        # The job failed (or was interrupted): let what it queued land, then let its error go on.
        try:
            self.close()
        except Exception as exc:  # the job's own error is the one to report
            log.warning("a queued write failed too: %s: %s", type(exc).__name__, exc)


def read_ahead(chunks: Iterable[T]) -> Iterator[T]:
    """`chunks`, each read on a background thread while the caller works on the one before.

    At most one chunk waits beyond the one the caller holds. When the
    caller stops early (break, error), the thread finishes the chunk it is
    reading and stops. Errors of `chunks` are raised to the caller in order.
    """
    source = iter(chunks)
    done = object()

    def pull() -> Any:
        return next(source, done)

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="read-ahead") as pool:
        pending = pool.submit(pull)
        while True:
            item = pending.result()
            if item is done:
                return
            pending = pool.submit(pull)
            yield item


def side_by_side(items: list[T], work: Callable[[T], R], threads: int) -> Iterator[R]:
    """`work(item)` for each of `items`, up to `threads` at once; the results in the order of `items`.

    An error is raised when its item's turn comes; the items not started then are not run.
    """
    with ThreadPoolExecutor(max_workers=max(1, threads), thread_name_prefix="side-by-side") as pool:
        futures = [pool.submit(work, item) for item in items]
        try:
            for future in futures:
                yield future.result()
        finally:
            for future in futures:
                future.cancel()
