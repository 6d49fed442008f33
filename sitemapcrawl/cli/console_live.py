"""The rich live display of `console.Messages.stages` (imported only when one is shown).

One line per running stage: spinner, name, bar, done/total, rate, ETA,
errors, elapsed time. Not transient: when the command ends the last stage's
line stays, under the summaries printed above it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text


class RateColumn(ProgressColumn):
    """Items per second over rich's recent samples."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text("-/s" if speed is None else f"{speed:,.1f}/s")


@contextlib.contextmanager
def live_progress(console: Any = None) -> Iterator[Progress]:
    """A running rich Progress on `console` (stderr by default)."""
    columns = (
        SpinnerColumn(),
        TextColumn("{task.description:<9}"),
        BarColumn(bar_width=24),
        MofNCompleteColumn(),
        RateColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        TextColumn("{task.fields[errors]} errors"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console or Console(stderr=True), transient=False) as progress:
        yield progress
