"""Inject benchmark: seeds per second and peak memory from 10,000 to 1,000,000 seeds.

Each size runs in a fresh Python process (so peak RSS is its own) that
injects a generated seed file into fresh tables of the local HBase, through
the same `inject` job the CLI uses. Both numbers should stay flat per row:
inject streams its input in chunks. Run with the local HBase up:

    scripts/hbase-local start
    .venv/bin/python benchmarks/bench_inject.py [--sizes 10000,100000,1000000]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from harness import add_hbase_option, bench_parser, dropped_at_end, python_child, require_hbase, size_list, table_prefix

CHILD = r"""
from sitemapcrawl.config import Settings
from sitemapcrawl.jobs.inject import inject
from sitemapcrawl.web.rules import UrlRules
from sitemapcrawl.storage.store import Store

path, prefix, hbase = sys.argv[1], sys.argv[2], sys.argv[3]
settings = Settings(hbase=hbase, table_prefix=prefix)
with Store(settings) as store:
    store.create_tables()
    rules = UrlRules.from_settings(settings)
    baseline = peak_kb()
    started = time.perf_counter()
    with open(path, encoding="utf-8") as seeds:
        counts = inject(store, seeds, rules)
    seconds = time.perf_counter() - started
    peak = peak_kb()
    store.drop_tables()
report(rows=counts.injected, seconds=seconds, peak_kb=peak, baseline_kb=baseline)
"""


def write_seeds(path: Path, count: int) -> None:
    """`count` distinct seed URLs over 1,000 hosts, some with metadata."""
    with path.open("w", encoding="utf-8") as out:
        for i in range(count):
            extra = "\tdepth=3\tscore=1.5" if i % 10 == 0 else ""
            out.write(f"http://host{i % 1000}.example.com/section/{i // 1000}/page-{i}.html{extra}\n")


def run(size: int, hbase: str, folder: Path) -> dict[str, float]:
    seeds = folder / f"seeds-{size}.txt"
    write_seeds(seeds, size)
    try:
        with dropped_at_end(hbase, table_prefix("inject")) as prefix:
            return python_child(CHILD, str(seeds), prefix, hbase)
    finally:
        seeds.unlink()


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--sizes", type=size_list, default="10000,100000,1000000",
                        help="seed counts, comma-separated [default: %(default)s]")
    add_hbase_option(parser)
    args = parser.parse_args()
    require_hbase(args.hbase)
    sizes = args.sizes
    results = {}
    with tempfile.TemporaryDirectory() as folder:
        for size in sizes:
            results[size] = run(size, args.hbase, Path(folder))
            print(f"  {size:>9,} seeds done in {results[size]['seconds']:.1f}s", file=sys.stderr)
    first = results[sizes[0]]
    first_rate = first["rows"] / first["seconds"]
    print(f"{'seeds':>10} {'seconds':>8} {'rows/s':>9} {'rate vs first':>13} "
          f"{'peak MB':>8} {'growth MB':>9} {'peak vs first':>13}")
    for size in sizes:
        r = results[size]
        rate = r["rows"] / r["seconds"]
        growth = (r["peak_kb"] - r["baseline_kb"]) / 1024
        print(f"{size:>10,} {r['seconds']:>8.1f} {rate:>9,.0f} {rate / first_rate:>12.2f}x "
              f"{r['peak_kb'] / 1024:>8.1f} {growth:>9.1f} {r['peak_kb'] / first['peak_kb']:>12.2f}x")


if __name__ == "__main__":
    main()
