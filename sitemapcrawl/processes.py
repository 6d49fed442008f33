"""Is a process of this machine still running: what frees what a run that died left behind.

A lease held by a process of this machine that is gone is free
(`batch.leases`), and the `.open` WARC file of a run that died is closed by
the next recorder in its folder (`web.warc`): both ask `pid_alive`, so both
agree on what "gone" means. Imports nothing of ours, so every floor may use it.

Cost: one `kill(pid, 0)` system call a question (no signal is sent).
"""

from __future__ import annotations

import os

__all__ = ["pid_alive"]


def pid_alive(pid: int) -> bool:
    """Is process `pid` of this machine running? True also for one that is not ours to signal (another
    user's): only a process that does not exist is gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # it exists (PermissionError): not ours to signal
    return True
