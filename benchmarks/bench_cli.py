"""Command-line benchmark: start-up and the `sitemap parse` output path, as ratios to floors.

Run: .venv/bin/python benchmarks/bench_cli.py [--repeat N]

Every figure is a whole process, start to exit (wall clock, best of
`--repeat` runs), measured in the same run as its floor, so the ratios hold
on a busy machine:

- start-up, against `python -c "import typer"`: `sitemapcrawl --version`,
  `--help` (targets: at most 1.5x) and `sitemap parse` of a one-entry local
  file (target: at most 2x);
- output path, against a bare lxml `iterparse` loop script that fetches the
  same URL with requests, gunzips it and reads every `<loc>`: `sitemap parse
  URL --jsonl` and the text table of a 50,000-URL gzipped sitemap served by a
  loopback HTTP server in this process, output to a file (target: at most
  1.5x).

Nothing here touches the internet.
"""

from __future__ import annotations

import argparse
import gzip
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_parse import make_urlset, start_server  # noqa: E402  (same folder)

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


def best_of(command: list[str], repeat: int, stdout_path: Path | None = None) -> float:
    """Best wall-clock seconds of `repeat` runs of `command` (which must exit 0)."""
    times = []
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    for _ in range(repeat):
        with open(stdout_path or os.devnull, "wb") as out:
            started = time.perf_counter()
            done = subprocess.run(command, stdout=out, stderr=subprocess.PIPE, env=env)
            times.append(time.perf_counter() - started)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(command)} failed: {done.stderr.decode()[-500:]}")
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="runs per measurement (best is kept)")
    args = parser.parse_args()
    cli = [PYTHON, "-m", "sitemapcrawl"]
    with tempfile.TemporaryDirectory() as folder_name:
        folder = Path(folder_name)
        small = folder / "small.xml"
        small.write_text(SMALL)
        server, base = start_server(folder)
        try:
            (folder / "big.xml.gz").write_bytes(gzip.compress(make_urlset(base, 0), 6))
            url = f"{base}/big.xml.gz"
            out = folder / "out.txt"
            floor = best_of([PYTHON, "-c", "import typer"], args.repeat)
            rows = [
                ("start-up", "python -c 'import typer' (floor)", floor, floor, None),
                ("start-up", "sitemapcrawl --version", best_of([*cli, "--version"], args.repeat), floor, 1.5),
                ("start-up", "sitemapcrawl --help", best_of([*cli, "--help"], args.repeat), floor, 1.5),
                ("start-up", "sitemap parse SMALL_FILE",
                 best_of([*cli, "sitemap", "parse", str(small)], args.repeat), floor, 2.0),
            ]
            parse_floor = best_of([PYTHON, "-c", FLOOR_SCRIPT, url], args.repeat, out)
            agent = ["--user-agent", "sitemapcrawl-bench/1.0"]
            rows += [
                ("output", "lxml iterparse script (floor)", parse_floor, parse_floor, None),
                ("output", "sitemap parse URL --jsonl > FILE",
                 best_of([*cli, *agent, "sitemap", "parse", url, "--jsonl"], args.repeat, out), parse_floor, 1.5),
                ("output", "sitemap parse URL > FILE (table)",
                 best_of([*cli, *agent, "sitemap", "parse", url], args.repeat, out), parse_floor, 1.5),
            ]
            lines = sum(1 for _ in out.open())
        finally:
            server.shutdown()
    print(f"{'path':<9} {'command (whole process)':<36} {'seconds':>8} {'x floor':>8} {'target':>7}  result")
    print("-" * 82)
    for path, name, seconds, base_seconds, target in rows:
        ratio = seconds / base_seconds
        verdict = "" if target is None else ("met" if ratio <= target else "MISSED")
        shown = "" if target is None else f"{target:.1f}"
        print(f"{path:<9} {name:<36} {seconds:>8.3f} {ratio:>8.2f} {shown:>7}  {verdict}")
    print(f"(table output: {lines:,} lines; best of {args.repeat} runs each)")


if __name__ == "__main__":
    main()
