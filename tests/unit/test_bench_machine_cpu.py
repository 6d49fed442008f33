"""bench_scale's figure 1 `others CPU s`: the machine's busy CPU from /proc/stat, which it sets against ours.

The reading must count steal (the host running someone else on our virtual
CPUs slows the crawl as surely as a process here does) and must not count
idle or iowait, or a quiet machine would look busy.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from harness import busy_cpu_seconds, machine_busy_seconds  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
#: user nice system idle iowait irq softirq steal guest guest_nice, as Linux prints them.
PROC_STAT = """cpu  1000 20 300 90000 500 4 6 70 0 0
cpu0 500 10 150 45000 250 2 3 35 0 0
cpu1 500 10 150 45000 250 2 3 35 0 0
intr 123 0 0
ctxt 4567
"""


def test_busy_time_is_user_nice_system_irq_softirq_and_steal_of_all_cpus() -> None:
    assert busy_cpu_seconds(PROC_STAT) == pytest.approx((1000 + 20 + 300 + 4 + 6 + 70) / TICK)


def test_an_older_kernel_without_steal_counts_what_it_prints() -> None:
    assert busy_cpu_seconds("cpu  1000 20 300 90000 500 4 6\n") == pytest.approx(1330 / TICK)


def test_text_without_the_aggregate_line_is_an_error() -> None:
    with pytest.raises(ValueError, match="aggregate cpu line"):
        busy_cpu_seconds("cpu0 1 2 3 4\n")


def test_this_machine_reads_and_does_not_go_backwards() -> None:
    first = machine_busy_seconds()
    assert machine_busy_seconds() >= first > 0
