"""Export benchmark: `export` of 1,000,000 rows against a bare happybase scan of the same columns.

Loads two fresh tables of the local HBase (100,000 and 1,000,000 rows over
1,000 hosts, each row with a crawl's columns, a sitemap inlink cell and, for
half of them, a link inlink cell that the export's filter leaves on the
server), then, each in a fresh Python process so peak RSS is its own:

- `happybase floor`: a bare `table.scan` with the same columns, the same
  server filter and the same batch size, counting rows (no decoding);
- `export csv` / `export jsonl` / `export parquet`: the export job and writer the CLI uses,
  writing to /dev/null.

Time and the process's CPU are compared with the floor of the same size in
the same run (the machine is shared, so only ratios travel; CPU moves less
with the load than wall time); memory is compared between 100,000 and
1,000,000 rows (flat means the export streams). Run with the local HBase up:

    .venv/bin/python benchmarks/bench_export.py [--sizes 100000,1000000]
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime

from harness import (
    add_hbase_option,
    bench_parser,
    dropped_at_end,
    python_child,
    require_hbase,
    size_list,
    source_env,
    table_prefix,
)

from sitemapcrawl.config import Settings
from sitemapcrawl.model.cells import encode
from sitemapcrawl.model.codec import format_time
from sitemapcrawl.model.webpage import WEBPAGE_TABLE, ChangeFreq, FetchStatus, WebPage
from sitemapcrawl.storage.store import Store
from sitemapcrawl.web import rowkeys

FLOOR = r"""
import happybase
from sitemapcrawl.jobs.export import EXPORT_FIELDS, sitemap_filter
from sitemapcrawl.model.cells import column_names
from sitemapcrawl.model.webpage import WebPage
host, port, table = sys.argv[1], int(sys.argv[2]), sys.argv[3]
connection = happybase.Connection(host, port, timeout=120_000)
started, cpu_started = time.perf_counter(), time.process_time()
rows = 0
for _key, _cells in connection.table(table).scan(columns=column_names(WebPage, EXPORT_FIELDS), filter=sitemap_filter(),
                                                  batch_size=1000):
    rows += 1
seconds = time.perf_counter() - started
report(rows=rows, seconds=seconds, cpu=time.process_time() - cpu_started, peak_kb=peak_kb())
"""

EXPORT = r"""
from sitemapcrawl.config import Settings
from sitemapcrawl.jobs.export import ExportCounts, ExportOptions, export_rows, write_csv, write_jsonl, write_parquet
from sitemapcrawl.storage.store import Store
hbase, prefix, fmt = sys.argv[1], sys.argv[2], sys.argv[3]
counts = ExportCounts()
with Store(Settings(hbase=hbase, table_prefix=prefix)) as store:
    started, cpu_started = time.perf_counter(), time.process_time()
    rows = export_rows(store, ExportOptions(), counts)
    if fmt == "parquet":
        write_parquet(rows, "/dev/null")
    else:
        with open("/dev/null", "w", encoding="utf-8") as out:
            (write_csv if fmt == "csv" else write_jsonl)(rows, out)
    seconds = time.perf_counter() - started
    cpu = time.process_time() - cpu_started
report(rows=counts.written, seconds=seconds, cpu=cpu, peak_kb=peak_kb())
"""


def load(settings: Settings, size: int) -> None:
    """`size` rows over 1,000 hosts (the loader is not measured).

    Written through `Store.write` (batches of `hbase_batch_size`, retried
    after a reconnect), so a Thrift restart by other work on a shared HBase
    does not end the run.
    """
    now = datetime.now(UTC).replace(microsecond=0)
    fetched = format_time(now)

    def rows() -> Iterator[tuple[bytes, dict[bytes, bytes]]]:
        for i in range(size):
            host = f"host{i % 1000}.example.com"
            url = f"http://{host}/section/{i // 1000}/article-{i}.html"
            sitemap = f"http://{host}/sitemap-{i % 7}.xml"
            yield rowkeys.row_key(url).encode(), encode(WebPage(
                url, status=FetchStatus.FETCHED, http_code=200, content_type="text/html; charset=utf-8",
                fetch_time=now, next_fetch=now, lastmod=now, changefreq=ChangeFreq.DAILY,
                in_sitemap=True, priority=0.5 + (i % 5) / 10, depth=1, radius=0, sitemaps_listing=1,
                link_inlinks=i % 3, canonical=url if i % 4 == 0 else None,
                inlinks={sitemap: f"sitemap pr=0.8 cf=daily lm={fetched} dp=1 ra=0 b=20250101000000-abcd",
                         **({f"http://{host}/": "link dp=1 ra=0 sc=0.1 b=20250101000000-abcd\tHome"}
                            if i % 2 else {})}))

    with Store(settings) as store:
        store.create_tables()
        store.write(WEBPAGE_TABLE, rows())


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--sizes", type=size_list, default="100000,1000000",
                        help="rows of each table, comma-separated [default: %(default)s]")
    parser.add_argument("--formats", default="csv,jsonl,parquet",
                        help="export formats at the last size (the first only at the others) [default: %(default)s]")
    add_hbase_option(parser)
    args = parser.parse_args()
    require_hbase(args.hbase)
    sizes = args.sizes
    formats = args.formats.split(",")
    results: list[tuple[int, str, dict[str, float]]] = []
    env = source_env()
    for size in sizes:
        with dropped_at_end(args.hbase, table_prefix("export")) as prefix:
            settings = Settings(hbase=args.hbase, table_prefix=prefix)
            started = time.perf_counter()
            load(settings, size)
            print(f"  loaded {size:,} rows in {time.perf_counter() - started:.0f}s", file=sys.stderr)
            table = settings.table_prefix + WEBPAGE_TABLE
            results.append((size, "happybase floor", python_child(FLOOR, settings.hbase_gateways[0][0],
                                                                  str(settings.hbase_gateways[0][1]), table, env=env)))
            for fmt in formats if size == sizes[-1] else formats[:1]:
                results.append((size, f"export {fmt}",
                                python_child(EXPORT, settings.hbase, settings.table_prefix, fmt, env=env)))
                print(f"  {size:,} {fmt}: {results[-1][2]['seconds']:.1f}s", file=sys.stderr)
    floors = {size: r for size, name, r in results if name == "happybase floor"}
    first_peak = {name: r["peak_kb"] for size, name, r in results if size == sizes[0]}
    print(f"{'rows':>10} {'what':<16} {'seconds':>8} {'rows/s':>9} {'x floor':>8} {'CPU s':>6} {'CPU x floor':>11} "
          f"{'peak MB':>8} {'peak vs ' + f'{sizes[0]:,}':>15}")
    for size, name, r in results:
        rate = r["rows"] / r["seconds"] if r["seconds"] else 0.0
        peak_ratio = r["peak_kb"] / first_peak[name] if name in first_peak else float("nan")
        floor = floors[size]
        print(f"{int(r['rows']):>10,} {name:<16} {r['seconds']:>8.1f} {rate:>9,.0f} "
              f"{r['seconds'] / floor['seconds']:>7.2f}x {r['cpu']:>6.1f} {r['cpu'] / floor['cpu']:>10.2f}x "
              f"{r['peak_kb'] / 1024:>8.1f} {peak_ratio:>14.2f}x")


if __name__ == "__main__":
    main()
