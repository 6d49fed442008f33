"""bench_scale's figure 1 report: what it prints beside the ratio.

The issue asks for cells, bytes and HBase CPU per listed URL side by side,
and a run that warmed HBase first must say so, with what the warm-up took.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from harness import Run  # noqa: E402
from inventory_writes import Inventory, report_inventory  # noqa: E402


def run(seconds: float) -> Run:
    return Run(seconds, 50.0, seconds, "", "")


def test_figure_1_prints_cpu_per_listed_url_and_the_warm_up() -> None:
    activity = {"RPC": 60.0, "compactions": 30.0}
    floor_activity = {"RPC": 40.0, "compactions": 20.0}
    result = Inventory(1_000_000, run(90.0), {"parse": 20.0, "updatedb": 67.0}, 1_000, 50.0, 52.0, 560_000_000,
                       1_000_000, 1_000_000, {"webpage": {"put_rows": 1_000_000, "put_cells": 11_000_000}},
                       counted_seconds=95.0, slower_seconds=93.0, hbase_activity=activity,
                       floor_hbase_activity=floor_activity, floor_client_cpu=15.0, warm_up=(100_000, 9.5, 5.0))
    lines = report_inventory([result])
    assert ("CPU per listed URL (the kept crawl and floor): HBase 90 µs against the floor's 60 µs (1.50x); "
            "the crawler 90 µs against the floor client's 15 µs") in lines
    assert any(line.endswith("100,000 URLs of the same shape crawled in 9.5 s and put in 5.0 s") for line in lines)
    assert any(line.startswith("target: N=1,000,000 time vs put floor: 1.80x") for line in lines)
