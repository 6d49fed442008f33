"""Waiting in a test for what another thread or process does, by polling: `wait_for(condition)`.

For what has no event to wait on (an access log filling, a row written by
another process). Where there is one (a process' stderr line, a Dask
scheduler's workers), wait on that instead.
"""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_for(condition: Callable[[], bool], seconds: float = 60, what: str = "waited too long") -> None:
    """Return once `condition()` is true, asking every 0.05 s; AssertionError saying `what` after `seconds`."""
    give_up = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < give_up, what
        time.sleep(0.05)
