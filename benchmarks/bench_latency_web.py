"""Fetching at web scale: `fetch` and Scrapy on a latency web of thousands of hosts (issue 45).

The web is `bulk_web(--hosts, --pages)` from 127.1.0.1 on, one address per
host, served by one asyncio process (`python -m sitemapcrawl.testweb serve
--latency`): every answer `--latency` seconds late, robots.txt with
`Crawl-delay: --crawl-delay`. Politeness allows one host's share in
`(pages + 1) x latency + pages x delay` seconds (robots.txt, then the pages,
a delay between each), and every host runs in parallel: that is the bound.

Contenders, each a whole process timed from spawn to exit (CPU with its
children, peak RSS of its process tree), on the same web in the same run,
each with a user agent of its own so the server's access log tells their
requests apart:

- `fetch`: the batch of every page (rows put and `generate` run first, not
  timed), then `sitemapcrawl fetch --batch B` with default settings (flags
  from `--fetch-args`);
- `scrapy N`: Scrapy with CONCURRENT_REQUESTS N (`--scrapy 64,256,1000`),
  one request per domain, DOWNLOAD_DELAY = the crawl delay, robots.txt
  obeyed, the page URLs in turns over the hosts (its best order). It runs
  in its own environment (`--scrapy-python`, default `benchmarks/.peers/`,
  made with pip the first time), never the project's.

Printed per contender: pages/s, CPU ms per page, peak MB, the bound over
the wall time (efficiency), and from the access log: pages answered, URLs
asked for twice, and politeness breaches (two requests to one host less
than the delay apart, end to start and start to start). Then the issue's
targets: fetch at least 3x Scrapy's best pages/s, at most 2 ms CPU per page,
at least 0.4 of the bound, no breach (end to start), no duplicate.

With `--crawl`, the whole `crawl --mode sitemap-only` from the hosts' home
pages instead (robots.txt, the sitemap, the pages; bound `(pages + 2) x
latency + (pages + 1) x delay`, target: within 2x). Needs the local HBase:

    .venv/bin/python benchmarks/bench_latency_web.py [--hosts 2000] [--pages 5] [--latency 0.3] [--crawl-delay 1]
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from harness import (
    REPO,
    Run,
    add_hbase_option,
    bench_parser,
    commit,
    dropped_at_end,
    load_average,
    require_hbase,
    run_timed,
    table_prefix,
    target_line,
)

PEERS = REPO / "benchmarks" / ".peers"
SCRAPY = "scrapy>=2.19,<3"  # `async def start` and DOWNLOAD_DELAY_JITTER
FIRST_HOST = "127.1.0.1"
#: Hosts one web process serves (see `latency_web`).
HOSTS_PER_PROCESS = 4_000
#: A gap this much shorter than the delay is a clock's rounding, not a breach.
SLACK = 0.005

SCRAPY_SPIDER = r"""
import json, sys
import scrapy
from scrapy.crawler import CrawlerProcess

urls, concurrency, delay, agent = json.load(open(sys.argv[1])), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
answered = 0

class Pages(scrapy.Spider):
    name = "pages"
    async def start(self):
        for url in urls:
            yield scrapy.Request(url, callback=self.parse)
    def parse(self, response):
        global answered
        answered += 1

process = CrawlerProcess(settings={
    "USER_AGENT": agent, "ROBOTSTXT_OBEY": True, "CONCURRENT_REQUESTS": concurrency,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 1, "DOWNLOAD_DELAY": delay, "DOWNLOAD_DELAY_JITTER": 0,
    "LOG_LEVEL": "WARNING", "TELNETCONSOLE_ENABLED": False, "REMOTE_CONTROL_ENABLED": False, "COOKIES_ENABLED": False,
    "REACTOR_THREADPOOL_MAXSIZE": 20, "DOWNLOAD_TIMEOUT": 60, "RETRY_ENABLED": False,
})
process.crawl(Pages)
process.start()
print(json.dumps({"answered": answered}))
"""


@dataclass
class Result:
    """One contender's run and what the access log says of it."""

    name: str
    agent: str
    run: Run
    pages: int = 0
    requests: int = 0
    duplicates: int = 0
    breaches_end: int = 0
    breaches_start: int = 0

    def rate(self) -> float:
        return self.pages / self.run.seconds if self.run.seconds else 0.0

    def cpu_ms(self) -> float:
        return 1000 * self.run.cpu_seconds / max(1, self.pages)


@contextmanager
def latency_web(hosts: int, pages: int, latency: float, delay: float,
                folder: Path) -> Iterator[tuple[list[str], list[Path]]]:
    """The latency web, in processes of at most `HOSTS_PER_PROCESS` hosts each; yield the base URLs and where
    the access logs will be (written when the processes stop).

    Several processes only because a process needs a socket per host and one per connection, and this
    machine's hard open-file limit (20,000) cannot be raised: 10,000 hosts would leave no room.
    """
    processes: list[tuple[subprocess.Popen[bytes], Path, Path]] = []
    first = ipaddress.IPv4Address(FIRST_HOST)
    try:
        for n, start in enumerate(range(0, hosts, HOSTS_PER_PROCESS)):
            ready, log, err = folder / f"ready-{n}.txt", folder / f"access-{n}.jsonl", folder / f"web-{n}.err"
            count = min(HOSTS_PER_PROCESS, hosts - start)
            with err.open("wb") as said:
                process = subprocess.Popen(
                    [sys.executable, "-m", "sitemapcrawl.testweb", "serve", "--web", "bulk", "--hosts", str(count),
                     "--pages", str(pages), "--first-host", str(first + start), "--latency", str(latency),
                     "--crawl-delay", str(delay), "--ready-file", str(ready), "--access-log", str(log)],
                    stdout=subprocess.DEVNULL, stderr=said, cwd=REPO)
            processes.append((process, ready, log))
        deadline = time.monotonic() + 120
        bases: list[str] = []
        for n, (process, ready, _) in enumerate(processes):
            while not ready.exists():
                if process.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"latency web did not start: {(folder / f'web-{n}.err').read_text()[-2000:]}")
                time.sleep(0.1)
            bases += ready.read_text(encoding="utf-8").split()
        yield bases, [log for _, _, log in processes]
    finally:
        for process, _, _ in processes:
            process.send_signal(signal.SIGTERM)
        for process, _, _ in processes:
            try:
                process.wait(timeout=120)
            except subprocess.TimeoutExpired:
                process.kill()


def scrapy_python(given: str | None) -> str:
    """The Python of an environment with Scrapy: `given`, or benchmarks/.peers/ (made the first time)."""
    if given:
        return given
    python = PEERS / "bin" / "python"
    if not python.exists():
        print(f"[making {PEERS} with {SCRAPY}]", file=sys.stderr, flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(PEERS)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", SCRAPY], check=True)
    return str(python)


def page_urls(bases: list[str], pages: int) -> list[str]:
    """Every page, in turns over the hosts (page 0 of each host, then page 1...)."""
    return [f"{base}p/{i}.html" for i in range(pages) for base in bases]


def prepare_batch(hbase: str, prefix: str, urls: list[str], agent: str) -> str:
    """Rows for `urls`, due now, and a generated batch of them; return the batch id (not timed)."""
    code = r"""
import json, sys
from datetime import UTC, datetime, timedelta
from sitemapcrawl.config import Settings
from sitemapcrawl.jobs.generate import GenerateOptions, generate
from sitemapcrawl.model.cells import encode
from sitemapcrawl.model.webpage import FetchStatus, WebPage
from sitemapcrawl.modes import CrawlMode
from sitemapcrawl.storage.dueindex import write_pages
from sitemapcrawl.storage.store import Store
from sitemapcrawl.web import rowkeys
from sitemapcrawl.web.rules import UrlRules
urls = json.load(open(sys.argv[1]))
settings = Settings(hbase=sys.argv[2], table_prefix=sys.argv[3], user_agent=sys.argv[4])
past = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1)
with Store(settings) as store:
    store.create_tables()
    write_pages(store, [(rowkeys.row_key(u).encode(), encode(WebPage(u, status=FetchStatus.UNFETCHED,
                 next_fetch=past, score=1.0, depth=1, radius=0))) for u in urls])
    batch = generate(store, UrlRules.from_settings(settings), GenerateOptions(mode=CrawlMode.LINKS_ONLY)).batch_id
print(batch)
"""
    with tempfile.NamedTemporaryFile("w", suffix=".json") as listed:
        json.dump(urls, listed)
        listed.flush()
        done = subprocess.run([sys.executable, "-c", code, listed.name, hbase, prefix, agent], cwd=REPO,
                              capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise SystemExit(f"preparing the batch failed:\n{done.stderr[-3000:]}")
    return done.stdout.split()[-1]


def cli(hbase: str, prefix: str, agent: str, args: list[str]) -> list[str]:
    return [sys.executable, "-m", "sitemapcrawl", "--hbase", hbase, "--table-prefix", prefix,
            "--user-agent", agent, *args]


def judge(result: Result, records: list[dict[str, object]], delay: float) -> None:
    """Fill `result` from the access log records of its user agent."""
    by_host: dict[str, list[tuple[float, float]]] = defaultdict(list)
    asked: dict[str, int] = defaultdict(int)
    for record in records:
        by_host[str(record["host"])].append((float(record["start"]), float(record["end"])))  # type: ignore[arg-type]
        asked[f"{record['host']}{record['target']}"] += 1
        if str(record["target"]).startswith("/p/") and record["status"] == 200:
            result.pages += 1
    result.requests = len(records)
    result.duplicates = sum(n - 1 for n in asked.values() if n > 1)
    for spans in by_host.values():
        spans.sort()
        for (start, end), (next_start, _) in zip(spans, spans[1:], strict=False):
            result.breaches_end += next_start - end < delay - SLACK
            result.breaches_start += next_start - start < delay - SLACK


def print_table(results: list[Result], bound: float, title: str) -> None:
    print(title)
    print(f"{'who':<16}{'pages':>7}{'wall s':>8}{'pages/s':>9}{'CPU ms/page':>12}{'peak MB':>9}"
          f"{'bound/wall':>11}{'dupes':>7}{'breach e-s':>11}{'breach s-s':>11}")
    for r in results:
        print(f"{r.name:<16}{r.pages:>7}{r.run.seconds:>8.1f}{r.rate():>9.1f}{r.cpu_ms():>12.2f}"
              f"{r.run.peak_mb:>9.0f}{bound / r.run.seconds:>11.2f}{r.duplicates:>7}{r.breaches_end:>11}"
              f"{r.breaches_start:>11}")


def contend(args: argparse.Namespace, bases: list[str], prefix: str, python: str | None,
            tmp: Path) -> list[Result]:
    """Run each contender in turn on the same web; return their runs (the access log judges them later)."""
    results: list[Result] = []
    urls = page_urls(bases, args.pages)
    agent = "LatencyBench-sitemapcrawl/1.0"
    if args.crawl:
        seeds = tmp / "seeds.txt"
        seeds.write_text("".join(f"{base}\n" for base in bases), encoding="utf-8")
        run = run_timed(cli(args.hbase, prefix, agent, ["crawl", str(seeds), "--mode", "sitemap-only",
                                                        *args.fetch_args.split()]), timeout=3600)
        print(f"[crawl: {run.last_line()}]", flush=True)
        return [Result("crawl", agent, run)]
    batch = prepare_batch(args.hbase, prefix, urls, agent)
    run = run_timed(cli(args.hbase, prefix, agent, ["fetch", "--batch", batch, *args.fetch_args.split()]),
                    timeout=3600)
    results.append(Result("fetch", agent, run))
    print(f"[fetch: {run.last_line()}]", flush=True)
    for n in args.concurrencies:
        assert python is not None
        listed = tmp / "urls.json"
        listed.write_text(json.dumps(urls), encoding="utf-8")
        peer_agent = f"LatencyBench-scrapy-{n}/1.0"
        run = run_timed([python, "-c", SCRAPY_SPIDER, str(listed), str(n), str(args.pace), peer_agent],
                        timeout=3600)
        results.append(Result(f"scrapy {n}", peer_agent, run))
        print(f"[scrapy {n}: {run.seconds:.1f} s]", flush=True)
    return results


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--hosts", type=int, default=2000)
    parser.add_argument("--pages", type=int, default=5, help="pages per host")
    parser.add_argument("--latency", type=float, default=0.3, help="seconds each answer waits")
    parser.add_argument("--crawl-delay", type=float, default=1.0, help="robots.txt Crawl-delay")
    parser.add_argument("--scrapy", default="64,256,1000", help="Scrapy's CONCURRENT_REQUESTS to try ('' for none)")
    parser.add_argument("--scrapy-python", help="a Python with Scrapy (default: benchmarks/.peers/, made once)")
    parser.add_argument("--fetch-delay", type=float, default=1.0,
                        help="the `delay` setting (its default 1.0): the pause is the longer of it and the Crawl-delay")
    parser.add_argument("--fetch-args", default="", help="extra flags for `fetch` (default: none, its defaults)")
    parser.add_argument("--crawl", action="store_true", help="the whole sitemap-only crawl from the home pages")
    add_hbase_option(parser)
    args = parser.parse_args()
    args.pace = max(args.fetch_delay, args.crawl_delay)
    if args.fetch_delay != 1.0:
        args.fetch_args = f"--delay {args.fetch_delay:g} {args.fetch_args}"
    require_hbase(args.hbase)
    args.concurrencies = [int(n) for n in args.scrapy.split(",") if n.strip()] if not args.crawl else []
    python = scrapy_python(args.scrapy_python) if args.concurrencies else None
    print(f"commit {commit()}, load {load_average()}; {args.hosts} hosts x {args.pages} pages, "
          f"latency {args.latency:g} s, Crawl-delay {args.crawl_delay:g} s, fetch's delay {args.fetch_delay:g} s",
          flush=True)
    results: list[Result] = []
    with tempfile.TemporaryDirectory() as tmp:
        with latency_web(args.hosts, args.pages, args.latency, args.crawl_delay, Path(tmp)) as (bases, logs), \
                dropped_at_end(args.hbase, table_prefix("latency")) as prefix:
            results = contend(args, bases, prefix, python, Path(tmp))
        records: dict[str, list[dict[str, object]]] = defaultdict(list)
        for log in logs:
            for line in log.read_text(encoding="utf-8").splitlines():
                record = json.loads(line)
                records[str(record["agent"])].append(record)
    for result in results:
        judge(result, records.get(result.agent, []), args.pace)
    requests = args.pages + (2 if args.crawl else 1)
    bound = requests * args.latency + (requests - 1) * args.pace
    print_table(results, bound, f"politeness bound {bound:.1f} s per host, all hosts at once")
    ours = results[0]
    print(target_line("fetch CPU per page", ours.cpu_ms(), 2.0, " ms"))
    print(target_line("wall over the bound (at most 1/0.4)" if not args.crawl else "wall over the bound",
                      ours.run.seconds / bound, 2.5 if not args.crawl else 2.0))
    peers = [r for r in results[1:]]
    if peers:
        best = max(peers, key=Result.rate)
        print(target_line(f"Scrapy's best ({best.name}) over fetch, pages/s (at most 1/3)",
                          best.rate() / max(ours.rate(), 1e-9), 1 / 3))
    print(f"fetch: {ours.duplicates} duplicates, {ours.breaches_end} breaches end to start (targets 0)")
    if os.environ.get("BENCH_SHOW_OUTPUT"):
        for result in results:
            print(f"--- {result.name}:", result.run.stdout[-1500:], result.run.stderr[-1500:])


if __name__ == "__main__":
    main()
