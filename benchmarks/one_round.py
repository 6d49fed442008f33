"""A 100-URL round as a user runs it, and what generate read to choose it (issue 24).

`generate --topN 100 --mode sitemap-only`, `fetch`, `parse` and `updatedb`,
each a CLI process timed start to exit, on tables that already hold what is
due; generate's summary line says how many queue entries and rows it read.
bench_frontier runs it on tables filled by direct puts (any size, quickly),
bench_scale's figure 4 on the tables a real inventory crawl left. Several
tables take turns, a round each, `ROUNDS` times, and each phase's fastest
run is kept: the first round may meet HBase still flushing what filled the
table, and the shared machine slows any one run.
Cost: four CLI processes per round; generate reads about the batch.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime

from harness import Run, run_cli, target_line

#: URLs per round (`generate --topN`).
BATCH = 100
#: Rounds per table; each phase's fastest is kept, and the most generate read in any of them.
ROUNDS = 3
PHASES = ("generate", "fetch", "parse", "updatedb")
READ_LINE = re.compile(r"selected (\d+).*read (\d+) queue entries and (\d+) rows")
#: What the issue allows: the round on the large table against the small, generate's reads against the batch.
ROUND_LIMIT = 1.5
READS_LIMIT = 3.0


@dataclass
class TableRounds:
    """The rounds run on one set of tables (`prefix`) holding `due` due URLs."""

    due: int
    prefix: str
    setup_seconds: float
    """What it took to fill the tables (direct puts, or the inventory crawl)."""
    phases: dict[str, Run] = field(default_factory=dict)
    selected: int = 0
    entries_read: int = 0
    rows_read: int = 0
    summaries: dict[str, str] = field(default_factory=dict)
    """Each phase's last line of output, from its kept run (what it did: selected, fetched, merged)."""

    @property
    def round_seconds(self) -> float:
        return sum(run.seconds for run in self.phases.values())

    @property
    def reads_per_selected(self) -> float:
        return (self.entries_read + self.rows_read) / max(1, self.selected)


def run_round(cost: TableRounds, hbase: str, number: int, timeout: float) -> None:
    """One 100-URL round on `cost`'s tables, keeping each phase's fastest run so far; raise SystemExit when
    generate prints no read counts."""
    batch = f"{datetime.now(UTC):%Y%m%d%H%M%S}-r{cost.due % 4096:03x}{number}"
    commands = {
        "generate": ["generate", "--topN", str(BATCH), "--mode", "sitemap-only", "--batch-id", batch],
        "fetch": ["fetch", "--batch", batch, "--delay", "0"],
        "parse": ["parse", "--batch", batch, "--mode", "sitemap-only"],
        "updatedb": ["updatedb", "--batch", batch, "--mode", "sitemap-only"],
    }
    for phase, args in commands.items():
        run = run_cli(hbase, cost.prefix, args, timeout)
        if phase not in cost.phases or run.seconds < cost.phases[phase].seconds:
            cost.phases[phase] = run
            cost.summaries[phase] = run.last_line()
        if phase == "generate":
            found = READ_LINE.search(run.stderr + run.stdout)
            if found is None:
                raise SystemExit(f"generate printed no read counts: {run.stderr[-400:]}")
            selected, entries, rows = (int(n) for n in found.groups())
            cost.selected, cost.entries_read = max(cost.selected, selected), max(cost.entries_read, entries)
            cost.rows_read = max(cost.rows_read, rows)


def run_rounds(costs: list[TableRounds], hbase: str, timeout: float, say: str = "due") -> None:
    """`ROUNDS` rounds on each of `costs`, the tables taking turns (so the machine's spells fall on each)."""
    for number in range(ROUNDS):
        for cost in costs:
            run_round(cost, hbase, number, timeout)
            print(f"[{say} {cost.due:,}: round {number + 1} done]", file=sys.stderr, flush=True)


def report_table_rounds(costs: list[TableRounds], setup: str = "fill s") -> list[str]:
    """The rounds' table (each phase's fastest, the round, its ratio to the first size, generate's reads) and
    the two target lines for the last size against the first; `setup` heads the column of `setup_seconds`."""
    small, big = costs[0], costs[-1]
    lines = [f"| due | {setup} | generate s | fetch s | parse s | updatedb s | round s | round / smallest "
             "| entries read | rows read | selected | reads / batch |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for cost in costs:
        seconds = " | ".join(f"{cost.phases[phase].seconds:.2f}" for phase in PHASES)
        lines.append(f"| {cost.due:,} | {cost.setup_seconds:.1f} | {seconds} | {cost.round_seconds:.2f} "
                     f"| {cost.round_seconds / small.round_seconds:.2f}x | {cost.entries_read:,} "
                     f"| {cost.rows_read:,} | {cost.selected:,} | {cost.reads_per_selected:.2f}x |")
    lines += ["", *(f"  {cost.due:,} {phase}: {cost.summaries.get(phase, '')}" for cost in costs for phase in PHASES),
              "", target_line(f"round at {big.due:,} due / {small.due:,}", big.round_seconds / small.round_seconds,
                              ROUND_LIMIT),
              target_line(f"generate's reads at {big.due:,} due / batch", big.reads_per_selected, READS_LIMIT)]
    return lines
