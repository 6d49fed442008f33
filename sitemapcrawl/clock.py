"""The one clock: every wall-clock reading of the package comes from here.

A job takes `clock: Clock` (default `utc_now`, the system clock) and reads
it when it needs the time; a function that works on one moment takes
`now: datetime`. So a test hands a job a fixed clock (`lambda: NOW`) and
the rows it writes carry known times. Two readings, one source: `utc_now`
to the second (what rows stamp: the codec writes seconds) and
`precise_now` to the microsecond (politeness compared across processes,
request times, file and history stamps). Durations and timeouts are not
the clock: they use `time.monotonic`, which never jumps when the system
clock is set. Imports nothing of ours, so every floor may use it.

Cost: one system call per reading.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

__all__ = ["Clock", "epoch_microseconds", "precise_now", "utc_now"]

Clock = Callable[[], datetime]
"""A source of the time now: an aware UTC datetime, to the second (`utc_now`, or a test's fixed time)."""

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def precise_now() -> datetime:
    """The time now, aware UTC, to the microsecond: the one place the package reads the system clock."""
    return datetime.now(UTC)


def utc_now() -> datetime:
    """The time now, aware UTC, to the second: the system `Clock`, what every job stamps."""
    return precise_now().replace(microsecond=0)


def epoch_microseconds(moment: datetime) -> int:
    """Whole microseconds from the Unix epoch to aware `moment`, exactly (no float rounding)."""
    return (moment - _EPOCH) // timedelta(microseconds=1)
