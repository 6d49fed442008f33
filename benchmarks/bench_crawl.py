"""Crawl benchmark: a sitemap-only crawl of a loopback web, end to end, against the local HBase.

The web is `bulk_web(hosts, pages)` from the test web: each host's robots.txt
names one sitemap listing every page (20 hosts x 5,000 pages by default,
served on 127.0.1.x). The crawl is the `crawl` job the CLI runs: inject the
home pages, detect the sitemaps, then rounds of generate, fetch, parse and
updatedb until nothing is due, with delay 0 (no politeness pause: the
numbers are the crawler's, not the sleep's). Printed: pages/s end to end,
seconds per stage summed over rounds, and HBase row writes per second.
Run with the local HBase up:

    scripts/hbase-local start
    .venv/bin/python benchmarks/bench_crawl.py [--hosts 20] [--pages 5000] [--threads 16]
"""

from __future__ import annotations

import time
from collections import Counter
from contextlib import closing

from harness import AGENT, add_hbase_option, bench_parser, dropped_at_end, require_hbase, table_prefix

from sitemapcrawl.config import Settings
from sitemapcrawl.jobs.crawl import CrawlOptions, RoundResult, crawl
from sitemapcrawl.modes import CrawlMode
from sitemapcrawl.storage.store import Store
from sitemapcrawl.testweb import TestWebServer, bulk_web
from sitemapcrawl.web.http import PoliteHttpClient
from sitemapcrawl.web.rules import UrlRules


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--hosts", type=int, default=20)
    parser.add_argument("--pages", type=int, default=5_000, help="sitemap-listed pages per host")
    parser.add_argument("--threads", type=int, default=16)
    add_hbase_option(parser)
    args = parser.parse_args()
    require_hbase(args.hbase)

    rounds: list[RoundResult] = []
    with dropped_at_end(args.hbase, table_prefix("crawl")) as prefix, \
            TestWebServer(bulk_web(args.hosts, args.pages, links=False)) as web:
        settings = Settings(hbase=args.hbase, table_prefix=prefix, user_agent=AGENT,
                            delay=0.0, max_connections=args.threads, threads_per_host=1)
        with Store(settings) as store, closing(PoliteHttpClient.from_settings(settings)) as client:
            store.create_tables()
            started = time.perf_counter()
            result = crawl(store, client, UrlRules.from_settings(settings),
                           [url + "\n" for url in web.truth.seeds()],
                           CrawlOptions(mode=CrawlMode.SITEMAP_ONLY, rounds=10),
                           on_round=lambda r: (rounds.append(r), print(r.line(), flush=True)))
            seconds = time.perf_counter() - started
    stages: Counter[str] = Counter()
    for done in rounds:
        stages.update(done.seconds)
    pages = sum(done.fetch.by_status["fetched"] for done in rounds)
    writes = sum(done.row_writes for done in rounds)
    print(f"web: {args.hosts} hosts x {args.pages} sitemap-listed pages; stopped: {result.stopped}")
    print(f"end to end: {seconds:.1f} s, {pages} pages fetched, {pages / seconds:.0f} pages/s")
    print("per stage: " + ", ".join(f"{stage} {took:.1f} s" for stage, took in stages.items())
          + f", inject+detect {seconds - sum(stages.values()):.1f} s")
    busy = sum(stages.values())
    print(f"HBase row writes: {writes} in {busy:.1f} s of stages, {writes / busy:.0f} rows/s")


if __name__ == "__main__":
    main()
