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

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

COMMON = r"""
import json, resource, sys, time
urls = json.load(open(sys.argv[1]))
threads = int(sys.argv[2])
def rss_kb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
"""

SEQUENTIAL = COMMON + r"""
import requests
baseline = rss_kb()
session = requests.Session()
session.trust_env = False
started = time.perf_counter()
ok = 0
for url in urls:
    ok += session.get(url, timeout=(10, 30)).status_code == 200
seconds = time.perf_counter() - started
print(json.dumps({"pages": ok, "seconds": seconds, "peak_kb": rss_kb() - baseline}))
"""

THREADPOOL = COMMON + r"""
import threading
from concurrent.futures import ThreadPoolExecutor
import requests
baseline = rss_kb()
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
print(json.dumps({"pages": ok, "seconds": seconds, "peak_kb": rss_kb() - baseline}))
"""

FETCHER = COMMON + r"""
from datetime import UTC, datetime, timedelta
from sitemapcrawl import urls as keys
from sitemapcrawl.config import Settings
from sitemapcrawl.web.http import PoliteHttpClient
from sitemapcrawl.jobs.fetch import FetchOptions, fetch
from sitemapcrawl.jobs.generate import GenerateOptions, generate
from sitemapcrawl.web.rules import UrlRules
from sitemapcrawl.storage.store import Store
from sitemapcrawl.model.webpage import WEBPAGE_TABLE, FetchStatus, WebPage, encode
hbase, prefix = sys.argv[3], sys.argv[4]
settings = Settings(hbase=hbase, table_prefix=prefix, user_agent="BenchBot/1.0", delay=0.0,
                    threads=threads, threads_per_host=1)
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
        baseline = rss_kb()
        started = time.perf_counter()
        counts = fetch(store, client, rules, FetchOptions.from_settings(settings, batch))
        seconds = time.perf_counter() - started
        peak = rss_kb() - baseline
        client.close()
    finally:
        store.drop_tables()
print(json.dumps({"pages": counts.by_status["fetched"], "seconds": seconds, "peak_kb": peak,
                  "requests": counts.requests}))
"""


def serve(hosts: int, pages: int, folder: Path) -> tuple[subprocess.Popen[bytes], list[str]]:
    """Start the bulk test web in its own process; return it and every page URL."""
    ready = folder / "ready.txt"
    process = subprocess.Popen(
        [sys.executable, "-m", "sitemapcrawl.testweb", "serve", "--web", "bulk", "--hosts", str(hosts),
         "--pages", str(pages), "--ready-file", str(ready)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not ready.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise SystemExit(f"test web did not start: {process.stderr.read().decode() if process.stderr else ''}")
        time.sleep(0.1)
    bases = ready.read_text(encoding="utf-8").split()
    return process, [f"{base}p/{i}.html" for base in bases for i in range(pages)]


def run(name: str, code: str, args: list[str]) -> dict[str, float]:
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{name} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=50)
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--threads", type=int, default=50)
    parser.add_argument("--hbase", default=os.environ.get("SITEMAPCRAWL_HBASE", "127.0.0.1:9090"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        server, page_urls = serve(args.hosts, args.pages, folder)
        try:
            url_file = folder / "urls.json"
            url_file.write_text(json.dumps(page_urls), encoding="utf-8")
            common = [str(url_file), str(args.threads)]
            results = {
                "sequential": run("sequential", SEQUENTIAL, common),
                "threadpool": run("threadpool", THREADPOOL, common),
                "fetcher": run("fetcher", FETCHER,
                               [*common, args.hbase, f"bench_fetch_{uuid.uuid4().hex[:8]}_"]),
            }
        finally:
            server.terminate()
            server.wait(timeout=30)
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
