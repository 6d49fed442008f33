"""WARC benchmark: the `fetch` job with and without `--warc`, on one loopback web.

The web is `bulk_web(hosts, pages)` (50 hosts x 200 pages by default) served
by `python -m sitemapcrawl.testweb serve` in its own process. The fetch job
runs on it `--repeat` times each way, alternating, each run in a fresh
Python process on fresh tables (rows written and a batch generated first,
not timed): `plain` (no WARC, the floor) and `warc` (every request and
response also written as gzipped WARC/1.1 records into a temporary folder).
Prints pages/s, peak memory and, for `warc`, the bytes and records written;
then the WARC cost as the ratio of the best `warc` time to the best `plain`
time. Needs the local HBase and warcio (extra `warc`):

    .venv/bin/python benchmarks/bench_warc.py [--hosts 50] [--pages 200] [--threads 50] [--repeat 2]
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from harness import (
    add_hbase_option,
    bench_parser,
    bulk_web_process,
    commit,
    dropped_at_end,
    load_average,
    python_child,
    require_hbase,
    table_prefix,
)

FETCHER = r"""
from datetime import UTC, datetime, timedelta
from pathlib import Path
from sitemapcrawl.web import rowkeys as keys
from sitemapcrawl.config import Settings
from sitemapcrawl.web.http import PoliteHttpClient
from sitemapcrawl.web.warc import open_recorder
from sitemapcrawl.jobs.fetch import FetchOptions, fetch
from sitemapcrawl.jobs.generate import GenerateOptions, generate
from sitemapcrawl.web.rules import UrlRules
from sitemapcrawl.storage.store import Store
from sitemapcrawl.model.cells import encode
from sitemapcrawl.model.webpage import WEBPAGE_TABLE, FetchStatus, WebPage
urls = json.load(open(sys.argv[1]))
threads, hbase, prefix, warc_dir = int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
settings = Settings(hbase=hbase, table_prefix=prefix, user_agent="BenchBot/1.0", delay=0.0,
                    max_connections=threads, threads_per_host=1, warc_dir=warc_dir)
past = datetime.now(UTC) - timedelta(hours=1)
with Store(settings) as store:
    store.create_tables()
    try:
        store.write(WEBPAGE_TABLE, ((keys.row_key(u).encode(),
                                     encode(WebPage(u, status=FetchStatus.UNFETCHED, next_fetch=past)))
                                    for u in urls))
        rules = UrlRules.from_settings(settings)
        batch = generate(store, rules, GenerateOptions()).batch_id
        recorder = open_recorder(settings)
        client = PoliteHttpClient.from_settings(settings, recorder=recorder)
        baseline = peak_kb()
        started = time.perf_counter()
        counts = fetch(store, client, rules, FetchOptions.from_settings(settings, batch))
        client.close()  # closes the last WARC file: part of the cost
        seconds = time.perf_counter() - started
        peak = peak_kb() - baseline
    finally:
        store.drop_tables()
files = list(Path(warc_dir).iterdir()) if warc_dir else []
report(pages=counts.by_status["fetched"], seconds=seconds, peak_kb=peak, requests=counts.requests,
       warc_bytes=sum(f.stat().st_size for f in files), warc_files=len(files),
       records=recorder.records if recorder else 0)
"""


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--hosts", type=int, default=50)
    parser.add_argument("--pages", type=int, default=200, help="pages per host")
    parser.add_argument("--threads", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=2, help="runs of each way, alternating; the best counts")
    add_hbase_option(parser)
    args = parser.parse_args()
    require_hbase(args.hbase)
    runs: dict[str, list[dict[str, float]]] = {"plain": [], "warc": []}
    with tempfile.TemporaryDirectory() as tmp, bulk_web_process(args.hosts, args.pages, Path(tmp)) as page_urls:
        url_file = Path(tmp) / "urls.json"
        url_file.write_text(json.dumps(page_urls), encoding="utf-8")
        for n in range(args.repeat):
            for way in runs:
                warc_dir = str(Path(tmp) / f"warc-{n}") if way == "warc" else ""
                with dropped_at_end(args.hbase, table_prefix("warc")) as prefix:
                    runs[way].append(python_child(FETCHER, str(url_file), str(args.threads), args.hbase, prefix,
                                                  warc_dir))
    print(f"commit {commit()}, load {load_average()}")
    print(f"{args.hosts} hosts x {args.pages} pages on loopback, {args.threads} threads, delay 0, "
          f"best of {args.repeat}")
    print(f"{'':<8}{'pages':>8}{'requests':>10}{'seconds':>10}{'pages/s':>10}{'peak MiB':>10}"
          f"{'WARC MiB':>10}{'files':>7}{'records':>9}")
    best = {way: min(results, key=lambda r: r["seconds"]) for way, results in runs.items()}
    for way, result in best.items():
        print(f"{way:<8}{result['pages']:>8.0f}{result['requests']:>10.0f}{result['seconds']:>10.2f}"
              f"{result['pages'] / result['seconds']:>10.1f}{result['peak_kb'] / 1024:>10.1f}"
              f"{result['warc_bytes'] / 2**20:>10.1f}{result['warc_files']:>7.0f}{result['records']:>9.0f}")
    print("all runs (seconds): " + "; ".join(
        f"{way} " + ", ".join(f"{r['seconds']:.2f}" for r in results) for way, results in runs.items()))
    print(f"WARC cost: warc / plain time = {best['warc']['seconds'] / best['plain']['seconds']:.2f}x")


if __name__ == "__main__":
    main()
