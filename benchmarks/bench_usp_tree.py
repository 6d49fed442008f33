"""The usp drop-in: our `sitemap_tree_for_homepage` against ultimate-sitemap-parser 1.8.1's, same site, same run.

Run: .venv/bin/python benchmarks/bench_usp_tree.py [--repeat 1] [--files 20]

The site is bench_parse's 1,000,000-URL tree (an index of 20 gzipped
50,000-URL urlsets, about 10 MB each unpacked), with a robots.txt that lists
the index, served by a loopback HTTP server (127.0.0.1, ephemeral port) in
this process. Each side runs in a process of its own: start the
interpreter, import, call `sitemap_tree_for_homepage(homepage)` and count
`all_pages()` (what a usp user does with the tree), exit. The time is spawn
to exit (best of `--repeat`), its CPU seconds (user + system, steadier than
the wall time on a loaded machine), the memory the process's own peak RSS
(`scripts/peak-rss`, the highest of the runs). `--files N` serves N of the
20 urlsets (50,000 URLs each). Both probe the 14 well-known paths (404 here).

- `usp`: `usp.tree.sitemap_tree_for_homepage` with its `RequestsWebClient`.
- `sitemapcrawl`: `sitemapcrawl.sitemaps.sitemap_tree_for_homepage`, our
  polite client with `SITEMAPCRAWL_DELAY=0` (one loopback host).
- `floor`: our engine's own walk of the same site (`walk_tree`, entries
  counted, no usp object built): what building usp's objects adds.

Targets: ours at least 5x faster than usp, with at most a quarter of its peak memory.
"""

from __future__ import annotations

import argparse
import gzip
import os
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from bench_parse import TREE_FILES, URLS_PER_FILE, make_index, make_urlset
from harness import bench_parser, commit, load_average, run_timed, serve_folder, target_line


def child(side: str, homepage: str) -> None:
    """One measured process: build the tree, count its pages, print the count."""
    if side == "usp":
        from usp.tree import sitemap_tree_for_homepage

        tree = sitemap_tree_for_homepage(homepage)
        print(sum(1 for _ in tree.all_pages()))
    elif side == "sitemapcrawl":
        from sitemapcrawl.sitemaps import sitemap_tree_for_homepage as ours

        tree = ours(homepage)
        print(sum(1 for _ in tree.all_pages()))
    else:
        from sitemapcrawl.sitemaps import SitemapKind, SitemapLimits
        from sitemapcrawl.sitemaps.tree import walk_tree
        from sitemapcrawl.web.http import PoliteHttpClient

        client = PoliteHttpClient("sitemapcrawl-bench/1.0", delay=0.0)
        nodes = walk_tree(homepage + "index.xml", client, limits=SitemapLimits())
        print(sum(node.report.kept for node in nodes if node.report and node.kind is not SitemapKind.INDEX))


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--repeat", type=int, default=1, help="runs per side (best time, highest memory)")
    parser.add_argument("--files", type=int, default=TREE_FILES, choices=range(1, TREE_FILES + 1),
                        metavar=f"1..{TREE_FILES}",
                        help=f"{URLS_PER_FILE:,}-URL urlsets behind the index [default: %(default)s]")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    print(f"# bench_usp_tree {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, commit {commit()}, "
          f"load average {load_average()}")
    with tempfile.TemporaryDirectory(prefix="bench_usp_tree_") as tmp:
        folder = Path(tmp)
        with serve_folder(folder) as base:
            names = []
            for number in range(1, args.files + 1):
                name = f"sitemap-{number:02d}.xml.gz"
                (folder / name).write_bytes(gzip.compress(make_urlset(base, number), 6))
                names.append(name)
            (folder / "index.xml").write_bytes(make_index(base, names))
            (folder / "robots.txt").write_text(f"User-agent: *\nAllow: /\nSitemap: {base}/index.xml\n")
            print(f"site: {base}/, robots.txt -> index of {args.files} gzipped urlsets, "
                  f"{args.files * URLS_PER_FILE:,} URLs", flush=True)
            env = {**os.environ, "SITEMAPCRAWL_DELAY": "0", "PYTHONHASHSEED": "0"}
            figures = {}
            for side in ("floor", "sitemapcrawl", "usp"):
                runs = [run_timed([sys.executable, __file__, "--child", side, base + "/"], env=env)
                        for _ in range(args.repeat)]
                pages = int(runs[0].stdout.strip().splitlines()[-1])
                seconds = min(run.seconds for run in runs)
                cpu = min(run.cpu_seconds for run in runs)
                peak = max(run.peak_mb for run in runs)
                figures[side] = (seconds, cpu, peak)
                print(f"{side:<13} {seconds:8.2f} s  {cpu:8.2f} s CPU  {peak:8.1f} MB peak  {pages:>9,} pages",
                      flush=True)
    usp_seconds, usp_cpu, usp_peak = figures["usp"]
    ours_seconds, ours_cpu, ours_peak = figures["sitemapcrawl"]
    floor_seconds, floor_cpu, _ = figures["floor"]
    print(f"usp's time / ours: {usp_seconds / ours_seconds:.2f}x (wall), {usp_cpu / ours_cpu:.2f}x (CPU); "
          f"ours / floor: {ours_seconds / floor_seconds:.2f}x (wall), {ours_cpu / floor_cpu:.2f}x (CPU)")
    print(target_line("our time / usp's (5x faster), wall", ours_seconds / usp_seconds, 0.2))
    print(target_line("our time / usp's (5x faster), CPU", ours_cpu / usp_cpu, 0.2))
    print(target_line("our peak memory / usp's", ours_peak / usp_peak, 0.25))


if __name__ == "__main__":
    main()
