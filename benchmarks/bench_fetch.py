"""Fetch benchmark: this fetcher against plain `requests` loops, on one loopback web.

The web is `bulk_web(hosts, pages)` (50 hosts x 200 pages by default) served
by `python -m sitemapcrawl.testweb serve` in its own process. Three ways of
getting every page, each in a fresh Python process (so its peak RSS is its
own), all in the same run against the same server:

- `sequential`: one `requests.Session`, one URL after the other;
- `threadpool`: a pool of `--threads` threads, a session each, no politeness
  at all: the floor a polite fetcher is measured against;
- `fetcher`: the `fetch` job (rows written and a batch generated first, not
  timed), `--threads` workers, one request in flight per host, delay 0,
  robots.txt fetched per host, every outcome written to HBase.

Prints pages/s and peak memory (RSS above the process's start) for each, and
the fetcher's ratio to the thread-pool floor (target: at least 0.7). Needs the
local HBase (`scripts/hbase-local start`):

    .venv/bin/python benchmarks/bench_fetch.py [--hosts 50] [--pages 200] [--threads 50]
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from harness import (
    add_hbase_option,
    bench_parser,
    bulk_web_process,
    dropped_at_end,
    python_child,
    require_hbase,
    table_prefix,
)

COMMON = r"""
urls = json.load(open(sys.argv[1]))
threads = int(sys.argv[2])
"""

SEQUENTIAL = COMMON + r"""
import requests
baseline = peak_kb()
session = requests.Session()
session.trust_env = False
started = time.perf_counter()
ok = 0
for url in urls:
    ok += session.get(url, timeout=(10, 30)).status_code == 200
seconds = time.perf_counter() - started
report(pages=ok, seconds=seconds, peak_kb=peak_kb() - baseline)
"""

THREADPOOL = COMMON + r"""
import threading
from concurrent.futures import ThreadPoolExecutor
import requests
baseline = peak_kb()
local = threading.local()
def get(url):
    session = getattr(local, "session", None)
    if session is None:
        session = local.session = requests.Session()
        session.trust_env = False
    return session.get(url, timeout=(10, 30)).status_code == 200
started = time.perf_counter()
with ThreadPoolExecutor(max_workers=threads) as pool:
    ok = sum(pool.map(get, urls, chunksize=16))
seconds = time.perf_counter() - started
report(pages=ok, seconds=seconds, peak_kb=peak_kb() - baseline)
"""

FETCHER = COMMON + r"""
from datetime import UTC, datetime, timedelta
from sitemapcrawl.web import rowkeys as keys
from sitemapcrawl.config import Settings
from sitemapcrawl.web.http import PoliteHttpClient
from sitemapcrawl.jobs.fetch import FetchOptions, fetch
from sitemapcrawl.jobs.generate import GenerateOptions, generate
from sitemapcrawl.web.rules import UrlRules
from sitemapcrawl.storage.store import Store
from sitemapcrawl.model.cells import encode
from sitemapcrawl.model.webpage import WEBPAGE_TABLE, FetchStatus, WebPage
hbase, prefix = sys.argv[3], sys.argv[4]
settings = Settings(hbase=hbase, table_prefix=prefix, user_agent="BenchBot/1.0", delay=0.0,
                    max_connections=threads, threads_per_host=1)
past = datetime.now(UTC) - timedelta(hours=1)
with Store(settings) as store:
    store.create_tables()
    try:
        store.write(WEBPAGE_TABLE, ((keys.row_key(u).encode(),
                                     encode(WebPage(u, status=FetchStatus.UNFETCHED, next_fetch=past)))
                                    for u in urls))
        rules = UrlRules.from_settings(settings)
        batch = generate(store, rules, GenerateOptions()).batch_id
        client = PoliteHttpClient.from_settings(settings)
        baseline = peak_kb()
        started = time.perf_counter()
        counts = fetch(store, client, rules, FetchOptions.from_settings(settings, batch))
        seconds = time.perf_counter() - started
        peak = peak_kb() - baseline
        client.close()
    finally:
        store.drop_tables()
report(pages=counts.by_status["fetched"], seconds=seconds, peak_kb=peak, requests=counts.requests)
"""


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--hosts", type=int, default=50)
    parser.add_argument("--pages", type=int, default=200, help="pages per host")
    parser.add_argument("--threads", type=int, default=50)
    add_hbase_option(parser)
    args = parser.parse_args()
    require_hbase(args.hbase)
    with tempfile.TemporaryDirectory() as tmp, bulk_web_process(args.hosts, args.pages, Path(tmp)) as page_urls, \
            dropped_at_end(args.hbase, table_prefix("fetch")) as prefix:
        url_file = Path(tmp) / "urls.json"
        url_file.write_text(json.dumps(page_urls), encoding="utf-8")
        common = [str(url_file), str(args.threads)]
        results = {
            "sequential": python_child(SEQUENTIAL, *common),
            "threadpool": python_child(THREADPOOL, *common),
            "fetcher": python_child(FETCHER, *common, args.hbase, prefix),
        }
    print(f"{args.hosts} hosts x {args.pages} pages on loopback, {args.threads} threads, delay 0")
    print(f"{'':<12}{'pages':>8}{'seconds':>10}{'pages/s':>10}{'peak MiB':>10}")
    for name, result in results.items():
        rate = result["pages"] / result["seconds"]
        print(f"{name:<12}{result['pages']:>8.0f}{result['seconds']:>10.2f}{rate:>10.1f}"
              f"{result['peak_kb'] / 1024:>10.1f}")
    floor = results["threadpool"]["pages"] / results["threadpool"]["seconds"]
    ours = results["fetcher"]["pages"] / results["fetcher"]["seconds"]
    verdict = "meets" if ours >= 0.7 * floor else "misses"
    print(f"fetcher / thread-pool floor: {ours / floor:.2f} ({verdict} the 0.7 target)")


if __name__ == "__main__":
    main()
