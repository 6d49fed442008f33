"""Frontier benchmark (issue 24): choosing a batch costs what the batch holds, not what is due.

Run with the local HBase up (Thrift on 127.0.0.1:9090), from the repository root:

    export PYTHONPATH=$PWD
    .venv/bin/python benchmarks/bench_frontier.py                        # due 1,000 and 1,000,000; fairness 1,000,000
    .venv/bin/python benchmarks/bench_frontier.py --due 1000,1000000,5000000
    .venv/bin/python benchmarks/bench_frontier.py --due 1000,100000 --fair 100000   # a quick look

Figures (one run, ratios: the machine is noisy and shared):

1. A 100-URL round against what is due. For each size in `--due`: fresh
   tables holding that many sitemap-listed pages of one site, unfetched and
   due now, as an inventory leaves them (the cells updatedb writes, realistic
   priorities 0.1-0.9, and each row's ready queue entry, as `write_pages`
   writes it), filled by direct batch puts. Then one round as the user runs
   it, each phase a CLI process timed start to exit: `generate --topN 100
   --mode sitemap-only`, `fetch`, `parse`, `updatedb` (the pages are served
   by a loopback web); three rounds, the sizes taking turns, each phase's fastest kept. Printed: each
   phase, the round, its ratio to the
   smallest size (target at most 1.5x at 1,000,000 against 1,000), and the
   queue entries and rows generate read (its summary line) against the
   batch (target at most 3x the batch plus what the caps skipped).
2. Per-host fairness. One host holds 90% of `--fair` due URLs, 1,000 other
   hosts the rest; `generate --max-per-host 10 --mode sitemap-only` (no
   topN): what it selects and what it reads (target: at most 3x).

Every table has a unique prefix and is dropped at the end, also on error.
"""

from __future__ import annotations

import random
import re
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

from bench_scale import fill_rows
from harness import (
    Run,
    add_hbase_option,
    bench_parser,
    commit,
    drop_prefix,
    load_average,
    require_hbase,
    run_cli,
    size_list,
    table_prefix,
    target_line,
    with_retries,
)
from one_round import READ_LINE, TableRounds, report_table_rounds, run_rounds

from sitemapcrawl.config import Settings
from sitemapcrawl.model.cells import encode
from sitemapcrawl.model.linkvalues import Inlink, InlinkKind, format_inlink
from sitemapcrawl.model.webpage import DUE_TABLE, WEBPAGE_TABLE, DueRow, FetchStatus, WebPage
from sitemapcrawl.sitemaps.model import ChangeFreq
from sitemapcrawl.storage import dueindex
from sitemapcrawl.storage.store import Store
from sitemapcrawl.testweb import PageRange, Robots, RobotsGroup, Site, TestWebServer, Web
from sitemapcrawl.web import rowkeys

#: Figure 2's other hosts, beside the one holding 90% of what is due.
SMALL_HOSTS = 1000
SKIPPED_CAP = re.compile(r"(\d+) over max per host")
CHANGEFREQS = [ChangeFreq.DAILY, ChangeFreq.WEEKLY, ChangeFreq.MONTHLY]
_ENTRY = encode(DueRow("", entry=True))


def listed_rows(urls: Iterator[str], sitemap_url: str, now: datetime, seed: int) -> Iterator[
        tuple[bytes, dict[bytes, bytes]]]:
    """Rows as an inventory's updatedb leaves listed pages: unfetched, due now, with the sitemap's hints."""
    pick = random.Random(seed)
    batch = now.strftime("%Y%m%d%H%M%S") + "-0000"
    for url in urls:
        priority = pick.randint(1, 9) / 10
        lastmod = now - timedelta(days=pick.randint(1, 90))
        changefreq = pick.choice(CHANGEFREQS)
        inlink = Inlink(InlinkKind.SITEMAP, 1, 0, batch=batch, priority=priority, changefreq=changefreq,
                        lastmod=lastmod)
        yield rowkeys.row_key(url).encode(), encode(WebPage(
            url, status=FetchStatus.UNFETCHED, next_fetch=now, fetch_interval=2_592_000, score=1.0, depth=1,
            radius=0, in_sitemap=True, priority=priority, changefreq=changefreq, lastmod=lastmod,
            inlinks={sitemap_url: format_inlink(inlink)}, merge_mark=batch, update_mark=batch))


def with_entries(rows: Iterator[tuple[bytes, dict[bytes, bytes]]], entries: list[tuple[bytes, dict[bytes, bytes]]],
                 ) -> Iterator[tuple[bytes, dict[bytes, bytes]]]:
    """`rows`, keeping aside the ready entry `write_pages` writes for each (in `entries`)."""
    for key, cells in rows:
        ready = dueindex.due_state(key, cells).ready(key)
        if ready is not None:
            entries.append((ready.key(), _ENTRY))
        yield key, cells


def fill(settings: Settings, rows: Iterator[tuple[bytes, dict[bytes, bytes]]]) -> float:
    """Fresh tables holding `rows` and their ready entries (in chunks), the index marked built; seconds."""
    with Store(settings) as store:
        with_retries("create tables", store.create_tables)
        webpage, due = store.table_name(WEBPAGE_TABLE), store.table_name(DUE_TABLE)
        seconds = 0.0
        while True:
            entries: list[tuple[bytes, dict[bytes, bytes]]] = []
            chunk = list(with_entries((row for _, row in zip(range(200_000), rows, strict=False)), entries))
            if not chunk:
                break
            seconds += fill_rows(settings, webpage, iter(chunk))[0]
            seconds += fill_rows(settings, due, iter(entries))[0]
        dueindex.mark_due_built(store, datetime.now(UTC).replace(microsecond=0))
    return seconds


def fill_round_table(base_prefix: str, hbase: str, due: int, web: TestWebServer) -> TableRounds:
    """Figure 1's table of `due` listed pages of the web's one site, filled."""
    settings = Settings(hbase=hbase, table_prefix=f"{base_prefix}d{due}_")
    site = web.web.sites[0]
    sitemap_url = web.url(site, "/sitemap.xml")
    urls = (web.url(site, site.ranges[0].path(i)) for i in range(due))
    now = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=1)
    return TableRounds(due, settings.table_prefix, fill(settings, listed_rows(urls, sitemap_url, now, seed=due)))


def fairness(base_prefix: str, hbase: str, total: int, timeout: float) -> tuple[Run, int, int, int, int]:
    """Figure 2: (generate's run, selected, entries read, rows read, skipped by the cap)."""
    settings = Settings(hbase=hbase, table_prefix=f"{base_prefix}fair_")
    now = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=1)
    small_hosts, big = SMALL_HOSTS, total * 9 // 10
    per_small = (total - big) // small_hosts

    def urls() -> Iterator[str]:
        yield from (f"https://www.big.example/articles/{i}.html" for i in range(big))
        for k in range(small_hosts):
            yield from (f"https://www.small{k}.example/p/{i}.html" for i in range(per_small))

    fill(settings, listed_rows(urls(), "https://www.big.example/sitemap.xml", now, seed=total))
    run = run_cli(hbase, settings.table_prefix, ["generate", "--max-per-host", "10", "--mode", "sitemap-only"],
                  timeout)
    text = run.stderr + run.stdout
    found = READ_LINE.search(text)
    if found is None:
        raise SystemExit(f"generate printed no read counts: {text[-400:]}")
    capped = SKIPPED_CAP.search(text)
    selected, entries, rows = (int(n) for n in found.groups())
    return run, selected, entries, rows, int(capped.group(1)) if capped else 0


def round_web(pages: int) -> Web:
    """One site of `pages` plain pages (no links: a sitemap-only round fetches what is listed)."""
    return Web((Site("127.0.3.2", "frontier", (), ranges=(PageRange("/p/", pages, links=False),),
                     robots=Robots(groups=(RobotsGroup(("*",)),))),), "frontier")


def report(costs: list[TableRounds], fair: tuple[Run, int, int, int, int] | None, fair_total: int) -> list[str]:
    lines = report_table_rounds(costs)
    if fair is not None:
        run, selected, entries, rows, capped = fair
        lines += ["", "| due | hosts | generate s | selected | entries read | rows read | skipped by cap "
                  "| reads / selected |", "|---:|---:|---:|---:|---:|---:|---:|---:|",
                  f"| {fair_total:,} | {SMALL_HOSTS + 1:,} | {run.seconds:.2f} | {selected:,} | {entries:,} | {rows:,} "
                  f"| {capped:,} | {(entries + rows) / max(1, selected):.2f}x |", "",
                  target_line("fairness: reads / selected", (entries + rows) / max(1, selected), 3.0)]
    return lines


def main() -> None:
    parser = bench_parser(__doc__)
    add_hbase_option(parser)
    parser.add_argument("--due", type=size_list, default=[1000, 1_000_000], help="due URLs per table (first: base)")
    parser.add_argument("--fair", type=int, default=1_000_000, help="due URLs of the fairness figure (0: skip)")
    parser.add_argument("--timeout", type=float, default=1800.0)
    args = parser.parse_args()
    require_hbase(args.hbase)
    prefix = table_prefix("bench_frontier")
    print(f"# bench_frontier, commit {commit()}, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, load {load_average()}",
          flush=True)
    try:
        with TestWebServer(round_web(max(args.due))) as web:
            costs = []
            for due in args.due:
                costs.append(fill_round_table(prefix, args.hbase, due, web))
                print(f"[due {due:,}: filled in {costs[-1].setup_seconds:.0f} s]", file=sys.stderr, flush=True)
            run_rounds(costs, args.hbase, args.timeout)
        fair = fairness(prefix, args.hbase, args.fair, args.timeout) if args.fair else None
        print("\n".join(report(costs, fair, args.fair)))
    finally:
        drop_prefix(args.hbase, prefix)


if __name__ == "__main__":
    main()
