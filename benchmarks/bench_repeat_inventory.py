"""Repeated inventories on one long-running standalone HBase (issue 27, case 13).

Run from the repository root (about 15 minutes a 1,000,000-URL inventory on
this machine; it starts a standalone HBase of its own unless --hbase names one):

    export PYTHONPATH=$PWD
    .venv/bin/python benchmarks/bench_repeat_inventory.py                 # 3 x 1,000,000 URLs
    .venv/bin/python benchmarks/bench_repeat_inventory.py --urls 50000    # a quick look

A 1,000,000-URL sitemap inventory on a standalone HBase that had served
earlier crawls ran its RegionServer out of heap in the WAL writer, and every
write hung from then on. Here one standalone HBase is started once
(`scripts/hbase-local start` in a temporary folder, free ports: its default
heap, memstore and WAL settings are what is measured) and takes `--runs`
inventories in a row of the loopback test web of `bench_scale.inventory_web` (robots.txt
-> a sitemap index -> gzipped urlsets of 50,000 URLs, served as static files):
`python -m sitemapcrawl crawl SEEDS --mode sitemap-only --sitemaps-only-docs
--delay 0` in a subprocess, timed spawn to exit, its rows counted, its tables
dropped before the next. Printed: each run's seconds, rows and peak memory,
`scripts/hbase-local status` at the end (it names an abort or an
OutOfMemoryError), and the last run's time over the first's. Targets: every
run completes with every URL stored; the last within 1.2x the first.
"""

from __future__ import annotations

import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from bench_scale import count_rows, inventory_web, render_all
from harness import (
    Cluster,
    Run,
    add_hbase_option,
    bench_parser,
    commit,
    drop_prefix,
    load_average,
    require_hbase,
    run_cli,
    table_prefix,
    target_line,
)

from sitemapcrawl.config import Settings
from sitemapcrawl.model.webpage import WEBPAGE_TABLE
from sitemapcrawl.testweb import TestWebServer

#: The last inventory may take at most this many times the first.
RATIO_LIMIT = 1.2


def one_inventory(hbase: str, prefix: str, seeds: Path, timeout: float) -> tuple[Run, int]:
    """One CLI inventory into fresh tables under `prefix`; (the run, rows of its webpage table)."""
    settings = Settings(hbase=hbase, table_prefix=prefix)
    run = run_cli(hbase, prefix, ["crawl", str(seeds), "--mode", "sitemap-only", "--sitemaps-only-docs",
                                  "--delay", "0", "--rounds", "6"], timeout)
    return run, count_rows(settings, prefix + WEBPAGE_TABLE)


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--urls", type=int, default=1_000_000, help="sitemap URLs per inventory [1000000]")
    parser.add_argument("--runs", type=int, default=3, help="inventories in a row [3]")
    parser.add_argument("--timeout", type=float, default=5_400, help="seconds one inventory may take")
    add_hbase_option(parser)
    parser.set_defaults(hbase=None)
    args = parser.parse_args()
    if args.urls < 1 or args.runs < 2:
        parser.error("--urls must be positive and --runs at least 2")
    if args.hbase is not None and not args.hbase.startswith(("127.", "localhost:")):
        parser.error("--hbase must be a loopback address")

    cluster = None
    if args.hbase is None:
        cluster = Cluster(0, "bench_repeat_inventory")
        print(f"[starting a standalone HBase in {cluster.home}] load {load_average()}", file=sys.stderr, flush=True)
        cluster.start()
    hbase = args.hbase or cluster.address  # type: ignore[union-attr]
    require_hbase(hbase)
    base = table_prefix("repeat")
    lines = [f"date {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; commit {commit()}; load average at start "
             f"{load_average()}; {args.runs} inventories of {args.urls:,} URLs on "
             f"{'a standalone HBase started once' if cluster else hbase}; prefix {base}"]
    runs: list[Run] = []
    failed = False
    try:
        with TestWebServer(inventory_web(args.urls, "127.0.2.7"), static=True) as web, \
                tempfile.TemporaryDirectory() as folder:
            render_all(web)
            seeds = Path(folder) / "seeds.txt"
            seeds.write_text("".join(url + "\n" for url in web.truth.seeds()))
            for k in range(1, args.runs + 1):
                prefix = f"{base}{k}_"
                print(f"[inventory {k}/{args.runs}] load {load_average()}", file=sys.stderr, flush=True)
                try:
                    run, rows = one_inventory(hbase, prefix, seeds, args.timeout)
                finally:
                    drop_prefix(hbase, prefix)
                runs.append(run)
                complete = rows >= args.urls
                failed |= not complete
                line = (f"inventory {k}: {run.seconds:.1f} s, {rows:,} rows ({'every URL' if complete else 'MISSING'}"
                        f"), crawler peak {run.peak_mb:.0f} MB")
                print(line, file=sys.stderr, flush=True)
                lines.append(line)
        if cluster is not None:
            status = cluster.local("status")
            failed |= status.returncode != 0
            lines.append(f"hbase-local status (exit {status.returncode}): "
                         + "; ".join(status.stdout.strip().splitlines()))
    finally:
        drop_prefix(hbase, base)
        if cluster is not None:
            cluster.stop()
    ratio = runs[-1].seconds / runs[0].seconds
    lines.append(target_line(f"last inventory / first ({runs[-1].seconds:.1f} s / {runs[0].seconds:.1f} s)",
                             ratio, RATIO_LIMIT))
    lines.append(f"load average at end {load_average()}")
    print("\n".join(lines))
    if failed:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
