"""What reading a page's head and headers costs: fetch+parse CPU of a sitemap-only crawl, this checkout
against a baseline commit (issue 46; the limit: at most 1.10x).

Since issue 46, fetch reads what every fetched page says about itself in every
mode (`web.pagesays`: robots meta, canonical, hreflang from the head; X-Robots-
Tag and Link from the headers) and writes it on the row, and parse reads the
extensions of sitemap entries. The web is the bulk test web (`--hosts` x
`--pages`, in a process of its own) with realistic pages (`--heads`: each
page has a canonical, meta robots, that many hreflang alternates and about
6 KB of text; every other page also sends X-Robots-Tag and a Link header).

Each tree (this checkout, and `--baseline`, default 21773ce, the main the
issue was written against, extracted with `git archive`) crawls it in
sitemap-only mode on fresh tables, the phases as CLI processes: init, inject
and detect, then round 1 (generate, fetch the sitemaps, parse them, updatedb)
and round 2 (generate, fetch every page, parse, updatedb). fetch and parse
run in a child that measures its own CPU (every thread's, `getrusage`)
around the command only, after its imports: the work, not the start-up.
The trees alternate, `--repeat` times; each phase's least CPU counts (the
median of the runs' fetch+parse is printed too: the machine is shared). The
run prints CPU seconds per phase and tree, the fetch+parse ratio, the
target line, and the per-page cost of the head reading.

    .venv/bin/python benchmarks/bench_page_reading.py [--hosts 4] [--pages 2500] [--heads 5]
        [--baseline 21773ce] [--repeat 3]
"""

from __future__ import annotations

import re
import statistics
import sys
import tempfile
from pathlib import Path

from harness import (
    AGENT,
    REPO,
    add_hbase_option,
    baseline_tree,
    bench_parser,
    bulk_web_process,
    commit,
    dropped_at_end,
    load_average,
    require_hbase,
    run_json,
    run_timed,
    source_env,
    table_prefix,
    target_line,
)

#: What the issue allows: reading heads and headers adds at most 10% to fetch+parse CPU.
LIMIT = 1.10
#: The phases measured, in order.
MEASURED = ("fetch 1", "parse 1", "fetch 2", "parse 2")
#: A fetch or parse run in this process, its CPU (all threads) measured around the command only.
CHILD = r"""
import json, resource, sys
from sitemapcrawl.cli.app import app
import sitemapcrawl.jobs.fetch, sitemapcrawl.jobs.parse, sitemapcrawl.storage.store, sitemapcrawl.web.http  # noqa
def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
start = cpu()
try:
    app(sys.argv[1:], prog_name="sitemapcrawl", standalone_mode=False)
finally:
    print(json.dumps({"cpu": cpu() - start}))
"""
BATCH = re.compile(r"^\d{14}-[0-9a-f]{4}$", re.MULTILINE)


def crawl_once(tree: Path, hbase: str, seeds: Path) -> dict[str, float]:
    """A sitemap-only crawl of two rounds by `tree`'s code on fresh tables: CPU seconds of each phase."""
    env = source_env(tree)
    cpu: dict[str, float] = {}
    with dropped_at_end(hbase, table_prefix("pagecost")) as prefix:
        common = ["--hbase", hbase, "--table-prefix", prefix, "--user-agent", AGENT]

        def cli(*args: str) -> str:
            return run_timed([sys.executable, "-m", "sitemapcrawl", *common, *args], env=env, timeout=3600).stdout

        def measured(name: str, *args: str) -> None:
            cpu[name] = run_json([sys.executable, "-c", CHILD, *common, *args], env=env)["cpu"]

        cli("init")
        cli("inject", str(seeds))
        cli("detect")
        for number in (1, 2):
            found = BATCH.search(cli("generate", "--mode", "sitemap-only"))
            if found is None:
                raise SystemExit(f"round {number}: generate printed no batch id")
            batch = found.group()
            measured(f"fetch {number}", "fetch", "--batch", batch, "--delay", "0")
            measured(f"parse {number}", "parse", "--batch", batch, "--mode", "sitemap-only")
            cli("updatedb", "--batch", batch, "--mode", "sitemap-only")
    return cpu


def main() -> None:
    parser = bench_parser(__doc__)
    add_hbase_option(parser)
    parser.add_argument("--hosts", type=int, default=4, help="hosts of the web [default: %(default)s]")
    parser.add_argument("--pages", type=int, default=2500, help="pages per host [default: %(default)s]")
    parser.add_argument("--heads", type=int, default=5,
                        help="hreflang alternates in each page's head [default: %(default)s]")
    parser.add_argument("--baseline", default="21773ce", help="the commit to compare with [default: %(default)s]")
    parser.add_argument("--repeat", type=int, default=3, help="crawls per tree [default: %(default)s]")
    args = parser.parse_args()
    require_hbase(args.hbase)
    with tempfile.TemporaryDirectory() as work:
        folder = Path(work)
        (folder / "baseline").mkdir()
        trees = {"baseline": baseline_tree(args.baseline, folder / "baseline"), "this": REPO}
        with bulk_web_process(args.hosts, args.pages, folder, heads=args.heads) as page_urls:
            seeds = folder / "seeds.txt"
            seeds.write_text("".join(sorted({url.split("/p/")[0] + "/\n" for url in page_urls})), encoding="utf-8")
            runs: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
            for run in range(args.repeat):
                for name in (trees if run % 2 == 0 else reversed(list(trees))):
                    cpu = crawl_once(trees[name], args.hbase, seeds)
                    runs[name].append(cpu)
                    print(f"run {run + 1} {name:<8} " + "  ".join(f"{p} {cpu[p]:.2f}" for p in MEASURED),
                          file=sys.stderr, flush=True)
    best = {name: {phase: min(cpu[phase] for cpu in done) for phase in MEASURED} for name, done in runs.items()}
    medians = {name: statistics.median(sum(cpu[p] for p in MEASURED) for cpu in done) for name, done in runs.items()}
    pages = args.hosts * args.pages
    print(f"bench_page_reading {commit()} against {args.baseline}: {args.hosts} hosts x {args.pages} pages, "
          f"{args.heads} hreflang alternates a page, best of {args.repeat}; load {load_average()}")
    print(f"{'phase (CPU s)':<14}{'baseline':>10}{'this':>10}{'ratio':>8}")
    for phase in MEASURED:
        before, after = best["baseline"][phase], best["this"][phase]
        print(f"{phase:<14}{before:>10.2f}{after:>10.2f}{after / before:>8.2f}")
    before = sum(best["baseline"][p] for p in MEASURED)
    after = sum(best["this"][p] for p in MEASURED)
    print(f"{'fetch+parse':<14}{before:>10.2f}{after:>10.2f}{after / before:>8.2f}")
    print(f"per page: {before / pages * 1e6:.0f} us before, {after / pages * 1e6:.0f} us after "
          f"({(after - before) / pages * 1e6:+.0f} us)")
    print(f"median fetch+parse of the {args.repeat} runs: {medians['baseline']:.2f} s before, "
          f"{medians['this']:.2f} s after ({medians['this'] / medians['baseline']:.2f}x)")
    print(target_line("fetch+parse CPU against the baseline", after / before, LIMIT))


if __name__ == "__main__":
    main()
