"""A Dask worker preload (`dask worker --preload tests/dask_killpoint.py`) that SIGKILLs its worker.

With `KILL_PHASE` (fetch or updatedb) and `KILL_AFTER_WRITES` (N) set, the
worker kills itself right after its N-th write to the webpage table while it
runs a task of that phase (`fetch_phase` or `updatedb_phase` of its job's
module, which the tasks name by reference, so the wrapper set here is the one
they call). Writes behind on
another thread count too. With `KILL_ONCE` (a file path) also set, several
workers are armed and the first to get there kills itself, alone: it makes
the file first (the others see it and go on), so one worker dies, whichever
the scheduler gave the work. Without the variables it does nothing.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

from sitemapcrawl.jobs import fetch, updatedb
from sitemapcrawl.model.webpage import WEBPAGE_TABLE
from sitemapcrawl.storage.store import Store

PHASE = os.environ.get("KILL_PHASE", "")
AFTER = int(os.environ.get("KILL_AFTER_WRITES", "0") or 0)
ONCE = os.environ.get("KILL_ONCE", "")
running: list[str] = []
writes = [0]


def dask_setup(worker: object) -> None:
    """Arm the kill in this worker's process (Dask calls it once the worker starts)."""
    if not PHASE:
        return
    module = {"fetch": fetch, "updatedb": updatedb}[PHASE]
    name = f"{PHASE}_phase"
    original_run, original_write = getattr(module, name), Store.write

    def run_phase(*args: Any) -> Any:
        running.append(PHASE)
        try:
            return original_run(*args)
        finally:
            running.remove(PHASE)

    def write(self: Store, table: str, rows: Any) -> Any:
        result = original_write(self, table, rows)
        if table == WEBPAGE_TABLE and result.rows and PHASE in running:
            writes[0] += 1
            if writes[0] == AFTER and _first():
                sys.stderr.write(f"killpoint: {PHASE}\n")
                sys.stderr.flush()
                os.kill(os.getpid(), signal.SIGKILL)
        return result

    setattr(module, name, run_phase)
    Store.write = write  # type: ignore[method-assign]


def _first() -> bool:
    """Is this the worker to die: no KILL_ONCE file, or this one made it first?"""
    if not ONCE:
        return True
    try:
        os.close(os.open(ONCE, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True
