"""bench_scale's figure 1d: two versions' inventory crawls in turn, read from each crawl's own round lines.

The figure decides whether a change to the write path is kept (issue 24),
so its stage times must be the crawl's own and its means and pair count
must compare each version's run with the one beside it.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from harness import Run  # noqa: E402
from inventory_writes import PairRun, report_pairs, stage_times  # noqa: E402


def crawl(seconds: float, parse: float, updatedb: float) -> Run:
    """A finished crawl whose stderr holds two round lines, as `crawl` prints them."""
    stderr = (
        "crawl: created table x_webpage (it did not exist)\n"
        "round 1: batch b1: selected 1, fetched 1 (fetched 1), sitemaps parsed 1 (entries 0, child sitemaps 20), "
        "pages parsed 0 (outlinks 0), rows merged 20 (new 20); generate 0.1s, fetch 0.2s, parse 0.5s, updatedb 1.0s\n"
        "round 2: batch b2: selected 20, fetched 20 (fetched 20), sitemaps parsed 20 (entries 1000, child sitemaps "
        f"0), pages parsed 0 (outlinks 0), rows merged 1000 (new 1000); generate 0.1s, fetch 1.0s, "
        f"parse {parse - 0.5:.1f}s, updatedb {updatedb - 1.0:.1f}s\n"
        "crawl: 2 rounds, stopped: nothing due\n")
    return Run(seconds, 100.0, seconds * 0.7, "", stderr)


def test_stage_times_sum_the_round_lines() -> None:
    assert stage_times(crawl(50.0, 20.0, 30.0)) == {"generate": 0.2, "fetch": 1.2, "parse": 20.0, "updatedb": 30.0}


def test_pairs_report_each_crawl_the_means_and_the_ratio_of_the_mean_times() -> None:
    runs = []
    for old, new in ((100.0, 110.0), (120.0, 114.0), (140.0, 154.0)):
        runs.append(PairRun("main", "14:00", crawl(old, 30.0, 60.0), 100.0))
        runs.append(PairRun("this checkout", "14:03", crawl(new, 20.0, 80.0), None))

    lines = report_pairs(runs, 1_000_000)

    assert len(lines) == 2 + 6 + 3
    assert lines[2].split()[:5] == ["14:00", "main", "100.0", "30.0", "60.0"]
    assert lines[3].split()[:6] == ["14:03", "this", "checkout", "110.0", "20.0", "80.0"]
    assert lines[3].split()[7] == "-"  # no HBase folder given for it
    assert lines[8] == "mean main: crawl 120.0 s, parse 30.0 s, updatedb 60.0 s, HBase CPU 100 s"
    assert lines[9] == "mean this checkout: crawl 126.0 s, parse 20.0 s, updatedb 80.0 s"
    assert lines[10] == "this checkout / main: 1.05x the crawl time (slower in 2 of 3 pairs)"
