"""Scale benchmark (issue 11): a round's cost against the table size, and the write path against its floor.

Run with the local HBase up (Thrift on 127.0.0.1:9090), from the repository root:

    export PYTHONPATH=$PWD
    .venv/bin/python benchmarks/bench_scale.py                          # N=100,000; tables of 10,000 and 1,000,000
    .venv/bin/python benchmarks/bench_scale.py --inventory 100000 1000000
    .venv/bin/python benchmarks/bench_scale.py --figures 2 3 --tables 10000 1000000
    .venv/bin/python benchmarks/bench_scale.py --figures 1 --urls 50000         # a quick look
    .venv/bin/python benchmarks/bench_scale.py --figures 1 --urls 1000000 --against main --hbase-dir DIR ...
    .venv/bin/python benchmarks/bench_scale.py --figures 1 --urls 1000000 --hbase 127.0.0.1:9471 \
        --hbase-dir /work/hbase-NAME     # an HBase of its own: its JVMs' CPU is read too

Figures (one run, ratios: the machine is noisy and shared):

1. Inventory (`inventory_writes`). A site on a loopback static server
   whose robots.txt names a sitemap index of N/50,000 gzipped urlsets of
   50,000 URLs shaped like real ones (slugs of 2-6 words in folders, 90
   distinct lastmods, priorities 0.1-0.9, changefreqs). The whole command
   `python -m sitemapcrawl ... crawl SEED --mode sitemap-only
   --sitemaps-only-docs --delay 0` runs in a subprocess: seconds from
   process start to exit, its peak memory (`scripts/peak-rss`: with
   `--crawl-workers`, its worker processes' too), its CPU
   and, with `--hbase-dir`, the HBase JVMs' CPU. The floor: plain
   happybase batch puts of the same row keys, each with the 8 cells a
   listed URL needs (status, next fetch, score, depth, radius, priority,
   changefreq, lastmod), into a fresh table
   of the same HBase, `hbase_batch_size` (1,000) rows a call (its client's
   CPU and HBase's printed beside the crawl's). First, untimed, a warm-up
   before the first size (`--warm-up`, 100,000 URLs of the same shape
   crawled and put, tables dropped): a just-started HBase compiles its paths and sizes its heap in
   its first minutes, a cost that would fall on whichever side ran first. Crawl and
   floor run twice, in turn (crawl, floor, crawl, floor, each into fresh
   tables), the faster of each kept (`other crawl s`, `other floor s`: the
   others; peak memory the higher of the crawls'). Then the same crawl runs
   again into tables of its own through `counted_crawl` (which counts the
   store's writes per table, in the crawl's process: not timed): cells and
   bytes written per URL by table (figure 1b). With `--hbase-dir`, figure 1c
   splits the HBase CPU of the kept crawl and floor by what the JVM threads
   do (compactions, flushes, WAL, RPC, JIT, GC, the Thrift gateway; names
   from `jcmd Thread.print`), and `others CPU s` says how much CPU the
   machine spent on work not ours (its busy time in /proc/stat, steal
   included, less the crawl's, HBase's and this process's) during the kept
   crawl and floor: the crawl needs both cores where the floor needs about
   one, so such work moves the ratio. Targets: at most 2x the floor
   at 1,000,000 URLs; peak memory under 150 MB and flat. `--crawl-workers W`
   runs the same crawl with `--workers W` (an info line, not the target;
   figure 1b is left out: the worker processes' writes are not counted).
   With `--against REF` (and `--figures 1`), figure 1d replaces it: the
   same crawl by this checkout and by commit REF's package (extracted with
   `git archive`), in turn, `--pairs` (3) times each, the baseline first:
   crawl, parse and updatedb seconds, crawler and HBase CPU (`--hbase-dir`)
   and peak memory of each, the means and the ratio of the mean crawl
   times. For a change under test: commit it, or run from a worktree.
2. Round cost against the table size. For each size in `--tables`: a fresh
   table filled by direct batch puts with rows shaped as a crawl leaves them
   (fetched pages listed by sitemaps, next fetch in 30 days: not due; one
   fetched sitemap row per 50,000 of them) and the due index entries the
   crawl's writers leave for them (table `due`, marked built), then `--due` (100) page URLs of a
   loopback web injected with the CLI (due now), then one round as the user
   runs it: `generate`, `fetch`, `parse`, `updatedb` as separate CLI
   processes (mixed mode; the pages link to each other), each timed start to
   exit. Target: each phase on the large table at most 1.5x the small one.
3. Throughput and `serve`. parse and updatedb rows/s (from figure 1's stage
   times: entries written by parse, rows merged by updatedb) against the put
   floor's rows/s; and one snapshot of the monitoring page's data
   (`report.panels.take_counted_snapshot`, what `serve` reads per refresh:
   the host table's counters, no `webpage` row) on each table of figure 2,
   beside the full-scan snapshot `report --html` takes. Target: serve's
   flat (large at most 1.5x small).
4. The round after an inventory (issue 24). Figure 1's realistic site (its
   listed pages served too) inventoried by the same crawl command into
   tables of their own, at 1,000 URLs and at each `--inventory` size, so
   everything listed is due; then 100-URL rounds (`one_round`: `generate
   --topN 100 --mode sitemap-only`, `fetch`, `parse`, `updatedb`, CLI
   processes start to exit, the tables taking turns, 3 rounds, each phase's
   fastest kept) and the queue entries and rows generate read. Targets: the
   round after the largest inventory at most 1.5x the round after 1,000
   URLs; generate's reads at most 3x the batch.

Every table has a unique prefix (`bench_scale_<hex>_...`) and is dropped at
the end, also on error or Ctrl-C. Only loopback addresses are used.
"""

from __future__ import annotations

import resource
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import islice
from pathlib import Path

from harness import (
    AGENT,
    RETRY_PAUSE,
    Run,
    add_hbase_option,
    bench_parser,
    commit,
    connect,
    drop_prefix,
    load_average,
    require_hbase,
    run_cli,
    table_prefix,
    target_line,
    with_retries,
)
from inventory_writes import (
    PHASES,
    Inventory,
    inventory,
    inventory_crawl,
    inventory_pairs,
    report_inventory,
    report_pairs,
    served_site,
)
from one_round import TableRounds, report_table_rounds, run_rounds
from thriftpy2.thrift import TException

from sitemapcrawl.config import Settings
from sitemapcrawl.model.cells import column_names, encode
from sitemapcrawl.model.due import entry_of
from sitemapcrawl.model.linkvalues import Inlink, InlinkKind, format_inlink
from sitemapcrawl.model.webpage import DUE_TABLE, WEBPAGE_TABLE, FetchStatus, SitemapSource, WebPage
from sitemapcrawl.sitemaps.model import ChangeFreq
from sitemapcrawl.storage import dueindex
from sitemapcrawl.storage.store import Store
from sitemapcrawl.testweb import (
    Entry,
    Link,
    Page,
    PageRange,
    Robots,
    RobotsGroup,
    Site,
    Sitemap,
    SitemapFormat,
    TestWebServer,
    Web,
)
from sitemapcrawl.web import rowkeys

URLS_PER_SITEMAP = 50_000


# ----------------------------------------------------------------- helpers --


def count_rows(settings: Settings, table: str) -> int:
    """Rows of `table` (full name), by a key-only scan."""
    connection = connect(settings.hbase)
    try:
        return sum(1 for _ in connection.table(table).scan(filter="KeyOnlyFilter()", batch_size=5000))
    finally:
        connection.close()


def fill_rows(settings: Settings, table: str, rows: Iterator[tuple[bytes, dict[bytes, bytes]]],
              attempts: int = 6) -> tuple[float, int, int]:
    """Batch puts of `rows` that survive a Thrift restart: a failed chunk is sent again (puts are
    idempotent), at most `attempts` times, 20 s apart. Returns (seconds spent sending, rows, cells)."""
    seconds = 0.0
    count = cells = 0
    connection = connect(settings.hbase)
    try:
        while chunk := list(islice(rows, settings.hbase_batch_size)):
            for attempt in range(1, attempts + 1):
                started = time.perf_counter()
                try:
                    with connection.table(table).batch() as batch:
                        for key, data in chunk:
                            batch.put(key, data)
                    seconds += time.perf_counter() - started
                    break
                except (OSError, TException) as exc:
                    if attempt == attempts:
                        raise
                    print(f"[fill: {type(exc).__name__} after {count:,} rows; retry {attempt} in {RETRY_PAUSE} s]",
                          file=sys.stderr, flush=True)
                    time.sleep(RETRY_PAUSE)
                    connection.close()
                    connection = with_retries("reconnect", lambda: connect(settings.hbase))
            count += len(chunk)
            cells += sum(len(data) for _key, data in chunk)
    finally:
        connection.close()
    return seconds, count, cells


# --------------------------------------------------------- figure 1 inventory --


def inventory_web(n_urls: int, host: str) -> Web:
    """robots.txt -> /sitemap_index.xml -> ceil(N/50,000) gzipped urlsets of (up to) 50,000 URLs on the test
    web (`/s<k>/<i>.html`: uniform URLs, each sitemap's in a folder of its own; bench_repeat_inventory's web,
    figure 1 uses `inventory_writes`' realistic ones)."""
    files = []
    for k, start in enumerate(range(0, n_urls, URLS_PER_SITEMAP)):
        count = min(URLS_PER_SITEMAP, n_urls - start)
        files.append(Sitemap(f"/sitemap-{k}.xml.gz", SitemapFormat.XML_GZ,
                             ranges=(PageRange(f"/s{k}/", count, links=False),)))
    index = Sitemap("/sitemap_index.xml", index=True, entries=tuple(Entry(s.path) for s in files))
    site = Site(host, "inventory", (Page("/", "Home"),),
                robots=Robots(groups=(RobotsGroup(("*",)),), sitemaps=("/sitemap_index.xml",)),
                sitemaps=(index, *files))
    return Web((site,), f"inventory-{n_urls}")


def render_all(web: TestWebServer) -> None:
    """Fetch every robots.txt and sitemap of a static test web once, so the timed crawl gets kept bytes."""
    for site in web.web.sites:
        for path in ["/robots.txt", *(sitemap.path for sitemap in site.sitemaps)]:
            with urllib.request.urlopen(web.url(site, path), timeout=120) as answer:
                answer.read()


# ---------------------------------------------------------- figure 2 rounds --


def round_web(due: int) -> Web:
    """Two hosts of linked pages (no sitemaps); `due` of them are injected, the rest found by parse."""
    hosts = ("127.0.2.2", "127.0.2.3")
    sites = []
    for n, host in enumerate(hosts):
        pages = PageRange("/p/", due * 10, links=True, cross_hosts=(hosts[1 - n],), title=f"Host {n} page")
        sites.append(Site(host, f"round-{n}", (Page("/", f"Host {n}", (Link("/p/0.html"),)),), ranges=(pages,),
                          robots=Robots(groups=(RobotsGroup(("*",)),))))
    return Web(tuple(sites), "round")


def filler_rows(count: int, now: datetime) -> Iterator[tuple[bytes, dict[bytes, bytes]]]:
    """`count` rows shaped as a crawl leaves them: fetched sitemap-listed pages, not due for 30 days,
    and one fetched urlset row per 50,000 of them (on `www.filler<k>.example`, never fetched)."""
    old_batch = (now - timedelta(days=1)).strftime("%Y%m%d%H%M%S") + "-0000"
    fetched, due = now - timedelta(days=1), now + timedelta(days=30)
    sitemaps = (count + URLS_PER_SITEMAP) // (URLS_PER_SITEMAP + 1)
    made = 0
    for k in range(max(1, sitemaps)):
        if made >= count:
            return
        host = f"https://www.filler{k}.example"
        sitemap_url = f"{host}/sitemap.xml"
        yield rowkeys.row_key(sitemap_url).encode(), encode(WebPage(
            sitemap_url, status=FetchStatus.FETCHED, fetch_time=fetched, next_fetch=due, fetch_interval=86_400,
            http_code=200, content_type="application/xml", signature="0" * 32, is_sitemap=True,
            sitemap_source=SitemapSource.ROBOTS, sitemap_type="urlset", sitemap_entries=URLS_PER_SITEMAP,
            parse_time=fetched, score=1.0, depth=1, radius=0, generate_mark=old_batch, fetch_mark=old_batch,
            parse_mark=old_batch, update_mark=old_batch, batch_id=old_batch, fetch_split=0))
        made += 1
        listed = Inlink(InlinkKind.SITEMAP, 1, 0, batch=old_batch, priority=0.5, changefreq=ChangeFreq.WEEKLY,
                        lastmod=fetched - timedelta(days=3))
        inlink = {sitemap_url: format_inlink(listed)}
        for i in range(min(URLS_PER_SITEMAP, count - made)):
            url = f"{host}/p/{i}.html"
            yield rowkeys.row_key(url).encode(), encode(WebPage(
                url, status=FetchStatus.FETCHED, fetch_time=fetched, next_fetch=due, fetch_interval=2_592_000,
                http_code=200, content_type="text/html", signature=f"{i:032x}", in_sitemap=True, priority=0.5,
                changefreq=ChangeFreq.WEEKLY, lastmod=fetched - timedelta(days=3), score=1.0, depth=1, radius=0,
                weighted_priority=0.5, generate_mark=old_batch, fetch_mark=old_batch, parse_mark=old_batch,
                update_mark=old_batch, batch_id=old_batch, fetch_split=0, inlinks=inlink))
            made += 1


def due_entries(rows: Iterator[tuple[bytes, dict[bytes, bytes]]]) -> Iterator[tuple[bytes, dict[bytes, bytes]]]:
    """The due index rows the crawl's writers (`dueindex.write_pages`) leave for `rows`: waiting entries (the
    rows are due later), grouped as `dueindex.entry_rows` groups one write's, a chunk of rows at a time."""
    nft, is_sitemap, in_sitemap = column_names(WebPage, ["next_fetch", "is_sitemap", "in_sitemap"])
    while chunk := list(islice(rows, 10_000)):
        entries = [entry_of(key, data.get(nft), data.get(is_sitemap) == b"1", data.get(in_sitemap) == b"1")
                   for key, data in chunk]
        yield from dueindex.entry_rows(entry for entry in entries if entry is not None)


@dataclass
class RoundCost:
    rows: int
    fill_seconds: float
    fill_cells: int
    phases: dict[str, Run] = field(default_factory=dict)
    summaries: dict[str, str] = field(default_factory=dict)
    snapshot_seconds: float = 0.0
    """serve's snapshot (counters)."""
    report_seconds: float = 0.0
    """report --html's snapshot (a full scan), for contrast."""


def round_cost(base_prefix: str, hbase: str, rows: int, due: int, web: TestWebServer, timeout: float) -> RoundCost:
    """Figure 2 (and 3's snapshot) on a table of `rows` rows, `due` of them due."""
    settings = Settings(hbase=hbase, table_prefix=f"{base_prefix}t{rows}_", user_agent=AGENT)
    with Store(settings) as store:
        with_retries("create tables", store.create_tables)
        now = datetime.now(UTC).replace(microsecond=0)
        fill_seconds, _n, cells = fill_rows(settings, store.table_name(WEBPAGE_TABLE), filler_rows(rows - due, now))
        fill_rows(settings, store.table_name(DUE_TABLE), due_entries(filler_rows(rows - due, now)))
        dueindex.mark_due_built(store, now)
        cost = RoundCost(rows, fill_seconds, cells)
        with tempfile.TemporaryDirectory() as folder:
            seeds = Path(folder) / "due.txt"
            per_host = [web.url(site, site.ranges[0].path(i)) for site in web.web.sites
                        for i in range(due // len(web.web.sites))]
            seeds.write_text("".join(url + "\n" for url in per_host[:due]))
            run_cli(settings.hbase, settings.table_prefix, ["inject", str(seeds)], timeout)
        batch = f"{now.strftime('%Y%m%d%H%M%S')}-b{rows % 65536:04x}"
        commands = {
            "generate": ["generate", "--mode", "mixed", "--batch-id", batch],
            "fetch": ["fetch", "--batch", batch, "--delay", "0", "--store-content"],
            "parse": ["parse", "--batch", batch, "--mode", "mixed"],
            "updatedb": ["updatedb", "--batch", batch, "--mode", "mixed"],
        }
        for phase, args in commands.items():
            run = run_cli(settings.hbase, settings.table_prefix, args, timeout)
            cost.phases[phase] = run
            cost.summaries[phase] = run.last_line(160)
        from sitemapcrawl.report.panels import take_counted_snapshot, take_snapshot

        def timed(take: Callable[[Store, datetime], object]) -> Callable[[], float]:
            def run() -> float:
                started = time.perf_counter()
                take(store, datetime.now(UTC).replace(microsecond=0))
                return time.perf_counter() - started
            return run

        cost.snapshot_seconds = with_retries("snapshot", timed(take_counted_snapshot))
        cost.report_seconds = with_retries("report snapshot", timed(take_snapshot))
    return cost


# ------------------------------------------------ figure 4 the round after an inventory --

#: Figure 4's small table: the issue's "same round on a 1,000-URL table".
ROUND_BASE_URLS = 1_000


def inventory_rounds(base_prefix: str, hbase: str, sizes: list[int], timeout: float) -> list[TableRounds]:
    """Figure 4: for 1,000 URLs and each of `sizes`, the realistic site of figure 1 (its listed pages served
    too) inventoried by the CLI crawl into tables of its own (everything listed is then due), then 100-URL
    rounds on each, the tables taking turns (`one_round`)."""
    with ExitStack() as stack:
        tables = []
        for n in sorted({ROUND_BASE_URLS, *sizes}):
            _base, seeds = stack.enter_context(served_site(n, pages=True))
            prefix = f"{base_prefix}r{n}_"
            print(f"[round after inventory: N={n:,}] load {load_average()}", file=sys.stderr, flush=True)
            tables.append(TableRounds(n, prefix, inventory_crawl(hbase, prefix, seeds, timeout).seconds))
        run_rounds(tables, hbase, timeout, say="inventory")
    return tables


# ------------------------------------------------------------------- report --


def report_throughput(results: list[Inventory]) -> list[str]:
    """Figure 3a: parse and updatedb rows/s in the inventory, against the put floor's rows/s."""
    out = ["figure 3a: parse and updatedb rows/s in the inventory, against the put floor",
           f"{'URLs':>10} {'floor rows/s':>12} {'parse rows/s':>12} {'x floor':>7} "
           f"{'updatedb rows/s':>15} {'x floor':>7}"]
    for r in results:
        floor = r.urls / r.floor_seconds
        parse = r.entries / r.stages["parse"] if r.stages["parse"] else 0.0
        update = r.merged / r.stages["updatedb"] if r.stages["updatedb"] else 0.0
        out.append(f"{r.urls:>10,} {floor:>12,.0f} {parse:>12,.0f} {parse / floor:>7.2f} "
                   f"{update:>15,.0f} {update / floor:>7.2f}")
    return out


def report_rounds(costs: list[RoundCost], due: int) -> list[str]:
    out = [f"figure 2: one round of {due} due URLs (mixed mode, CLI processes start to exit, seconds)",
           f"{'table rows':>10} {'fill s':>7} {'fill rows/s':>11} " + " ".join(f"{p:>9}" for p in PHASES)
           + f" {'round':>8} {'serve s':>9} {'report s':>9}"]
    for c in costs:
        phases = " ".join(f"{c.phases[p].seconds:>9.2f}" for p in PHASES)
        total = sum(c.phases[p].seconds for p in PHASES)
        out.append(f"{c.rows:>10,} {c.fill_seconds:>7.1f} {c.rows / c.fill_seconds:>11,.0f} {phases} "
                   f"{total:>8.2f} {c.snapshot_seconds:>9.3f} {c.report_seconds:>9.2f}")
    if len(costs) > 1:
        small, large = costs[0], costs[-1]
        for p in PHASES:
            out.append(target_line(f"{p} on {large.rows:,} rows vs {small.rows:,}",
                                  large.phases[p].seconds / small.phases[p].seconds, 1.5))
        out.append(target_line(f"serve snapshot on {large.rows:,} rows vs {small.rows:,} (flat, figure 3b)",
                              large.snapshot_seconds / max(small.snapshot_seconds, 1e-6), 1.5))
    for c in costs:
        for p in PHASES:
            out.append(f"  {c.rows:,} {p}: {c.summaries[p]}")
    return out


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--figures", nargs="+", type=int, choices=(1, 2, 3, 4), default=[1, 2, 3, 4],
                        help="which figures to run (3 needs 1 for rows/s and 2 for the snapshot)")
    parser.add_argument("--inventory", "--urls", nargs="+", type=int, default=[100_000], metavar="N",
                        help="sitemap URLs of the inventory runs (figure 1) [default: 100000]")
    parser.add_argument("--hbase-dir", type=Path, default=None, metavar="DIR",
                        help="HBASE_LOCAL_DIR of the HBase given by --hbase (its JVMs' CPU is read) [default: none]")
    parser.add_argument("--tables", nargs=2, type=int, default=[10_000, 1_000_000], metavar=("SMALL", "LARGE"),
                        help="table sizes of figure 2 [default: 10000 1000000]")
    parser.add_argument("--due", type=int, default=100, help="due URLs in the round of figure 2 [default: 100]")
    parser.add_argument("--warm-up", type=int, default=100_000, metavar="N",
                        help="figure 1: crawl and put N URLs of the same shape first, untimed, so that crawl and "
                             "floor meet a warm HBase (0: no warm-up) [default: 100000]")
    parser.add_argument("--crawl-workers", type=int, default=1, metavar="W",
                        help="figure 1's crawl with --workers W (an info line: the target is for W=1) [default: 1]")
    parser.add_argument("--against", metavar="REF", default=None,
                        help="figure 1d instead of 1: the inventory crawl of this checkout against commit REF's, "
                             "in turn [default: none]")
    parser.add_argument("--pairs", type=int, default=3, help="crawls of each version in figure 1d [default: 3]")
    parser.add_argument("--timeout", type=float, default=5_400, help="seconds any one command may take")
    add_hbase_option(parser)
    args = parser.parse_args()
    if not args.hbase.startswith(("127.", "localhost:")):
        parser.error("--hbase must be a loopback address")
    if args.against is not None and (args.figures != [1] or args.crawl_workers != 1 or args.pairs < 1):
        parser.error("--against runs figure 1d alone: give --figures 1, no --crawl-workers, --pairs of 1 or more")
    if 4 in args.figures and args.against is None and max(args.inventory) <= ROUND_BASE_URLS:
        parser.error(f"figure 4 sets the round after an inventory against one of {ROUND_BASE_URLS:,} URLs: give "
                     f"--urls larger than that, or leave figure 4 out")
    if min(args.inventory) < 1 or min(args.tables) <= args.due or args.due < 2:
        parser.error("sizes must be positive, tables larger than --due, --due at least 2")
    require_hbase(args.hbase)

    prefix = table_prefix("scale")
    lines = [f"date {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; commit {commit()}; load average at start "
             f"{load_average()}; prefix {prefix}"]
    inventories: list[Inventory] = []
    costs: list[RoundCost] = []
    after_inventory: list[TableRounds] = []
    try:
        if args.against is not None:
            for n in sorted(args.inventory):
                print(f"[pairs N={n:,}] load {load_average()}", file=sys.stderr, flush=True)
                pairs = inventory_pairs(prefix, args.hbase, n, args.timeout, args.hbase_dir, args.against,
                                        args.pairs)
                report = report_pairs(pairs, n)
                print("\n".join(report), file=sys.stderr, flush=True)
                lines += ["", *report]
        elif 1 in args.figures or 3 in args.figures:
            for n in sorted(args.inventory):
                print(f"[inventory N={n:,}] load {load_average()}", file=sys.stderr, flush=True)
                inventories.append(inventory(prefix, args.hbase, n, args.timeout, args.hbase_dir,
                                             args.crawl_workers, warm_up=0 if inventories else min(n, args.warm_up)))
                print("\n".join(report_inventory(inventories[-1:])), file=sys.stderr, flush=True)
                drop_prefix(args.hbase, prefix)
        if 2 in args.figures or 3 in args.figures:
            with ExitStack() as stack:
                web = stack.enter_context(TestWebServer(round_web(args.due)))
                for rows in args.tables:
                    print(f"[round on {rows:,} rows] load {load_average()}", file=sys.stderr, flush=True)
                    costs.append(round_cost(prefix, args.hbase, rows, args.due, web, args.timeout))
                    print("\n".join(report_rounds(costs[-1:], args.due)), file=sys.stderr, flush=True)
                    drop_prefix(args.hbase, prefix)
        if 4 in args.figures and args.against is None:
            after_inventory = inventory_rounds(prefix, args.hbase, args.inventory, args.timeout)
            print("\n".join(report_table_rounds(after_inventory, setup="inventory s")), file=sys.stderr,
                  flush=True)
    finally:
        drop_prefix(args.hbase, prefix)
    lines.append(f"load average at end {load_average()}; bench process peak "
                 f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    if inventories:
        lines += ["", *report_inventory(inventories), "", *report_throughput(inventories)]
    if costs:
        lines += ["", *report_rounds(costs, args.due)]
    if after_inventory:
        lines += ["", "figure 4: a 100-URL round after an inventory (generate --topN 100 --mode sitemap-only, "
                  "fetch, parse, updatedb: CLI processes, each phase's fastest of 3)",
                  *report_table_rounds(after_inventory, setup="inventory s")]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
