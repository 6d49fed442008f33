"""Command-line benchmark: start-up and the `sitemap parse` output path, as ratios to floors.

Run: .venv/bin/python benchmarks/bench_cli.py [--repeat N]

Every figure is a whole process, start to exit (wall clock, best of
`--repeat` runs), measured in the same run as its floor and interleaved with
it (one run of each command in turn), so the ratios hold on a busy machine:

- start-up, against `python -c "import typer"`: `sitemapcrawl --version`,
  `--help` (targets: at most 1.5x) and `sitemap parse` of a one-entry local
  file (target: at most 2x);
- output path, against a bare lxml `iterparse` loop script that fetches the
  same URL with requests, gunzips it and reads every `<loc>`: `sitemap parse
  URL --jsonl` and the text table of a 50,000-URL gzipped sitemap served by a
  loopback HTTP server in this process, output to a file (target: at most
  1.5x).

The processes run as from a user's shell: bytecode compiled first (as pip
does on install; this environment sets PYTHONDONTWRITEBYTECODE, which would
recompile every module of the checkout at every start while typer's come
precompiled) and output buffered. Nothing here touches the internet.
"""

from __future__ import annotations

import compileall
import gzip
import os
import sys
import tempfile
from pathlib import Path

from bench_parse import make_urlset
from harness import REPO, bench_parser, best_of, serve_folder, verdict

PYTHON = sys.executable
SMALL = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
    "<url><loc>http://127.0.0.1/a</loc><lastmod>2024-01-01</lastmod></url></urlset>\n"
)
FLOOR_SCRIPT = """
import gzip, io, sys
import requests
from lxml import etree
NS = "{http://www.sitemaps.org/schemas/sitemap/0.9}"
body = requests.get(sys.argv[1]).content
stream = gzip.GzipFile(fileobj=io.BytesIO(body)) if body[:2] == b"\\x1f\\x8b" else io.BytesIO(body)
count = 0
for _, element in etree.iterparse(stream, events=("end",), tag=NS + "url", resolve_entities=False, no_network=True):
    if element.findtext(NS + "loc"):
        count += 1
    element.clear()
    while element.getprevious() is not None:
        del element.getparent()[0]
print(count)
"""

#: As a user's shell runs it: bytecode cached (pip compiles it on install;
#: PYTHONDONTWRITEBYTECODE would recompile every module at every start), output
#: buffered. `main` puts the measured checkout first on the path (and runs in it:
#: `python -m` looks in the working directory first).
ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED")}


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--repeat", type=int, default=7, help="runs per measurement (best is kept)")
    parser.add_argument("--checkout", type=Path, default=REPO,
                        help="the source tree to measure (default: this one), e.g. an export of an older commit")
    args = parser.parse_args()
    ENV["PYTHONPATH"] = str(args.checkout.resolve())
    cli = [PYTHON, "-m", "sitemapcrawl"]
    compileall.compile_dir(str(args.checkout / "sitemapcrawl"), quiet=1)  # what pip does on install
    with tempfile.TemporaryDirectory() as folder_name:
        folder = Path(folder_name)
        small = folder / "small.xml"
        small.write_text(SMALL)
        with serve_folder(folder) as base:
            (folder / "big.xml.gz").write_bytes(gzip.compress(make_urlset(base, 0), 6))
            url = f"{base}/big.xml.gz"
            out = folder / "out.txt"
            agent = ["--user-agent", "sitemapcrawl-bench/1.0"]
            times = best_of({
                "floor": ([PYTHON, "-c", "import typer"], None),
                "version": ([*cli, "--version"], None),
                "help": ([*cli, "--help"], None),
                "small": ([*cli, "sitemap", "parse", str(small)], None),
                "parse floor": ([PYTHON, "-c", FLOOR_SCRIPT, url], out),
                "jsonl": ([*cli, *agent, "sitemap", "parse", url, "--jsonl"], out),
                "table": ([*cli, *agent, "sitemap", "parse", url], out),
            }, args.repeat, env=ENV, cwd=ENV["PYTHONPATH"])
            floor, parse_floor = times["floor"], times["parse floor"]
            rows = [
                ("start-up", "python -c 'import typer' (floor)", floor, floor, None),
                ("start-up", "sitemapcrawl --version", times["version"], floor, 1.5),
                ("start-up", "sitemapcrawl --help", times["help"], floor, 1.5),
                ("start-up", "sitemap parse SMALL_FILE", times["small"], floor, 2.0),
                ("output", "lxml iterparse script (floor)", parse_floor, parse_floor, None),
                ("output", "sitemap parse URL --jsonl > FILE", times["jsonl"], parse_floor, 1.5),
                ("output", "sitemap parse URL > FILE (table)", times["table"], parse_floor, 1.5),
            ]
            lines = sum(1 for _ in out.open())
    print(f"{'path':<9} {'command (whole process)':<36} {'seconds':>8} {'x floor':>8} {'target':>7}  result")
    print("-" * 82)
    for path, name, seconds, base_seconds, target in rows:
        ratio = seconds / base_seconds
        result = "" if target is None else verdict(ratio, target)
        shown = "" if target is None else f"{target:.1f}"
        print(f"{path:<9} {name:<36} {seconds:>8.3f} {ratio:>8.2f} {shown:>7}  {result}")
    print(f"(checkout {args.checkout}; table output: {lines:,} lines; best of {args.repeat} runs each)")


if __name__ == "__main__":
    main()
