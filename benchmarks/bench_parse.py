"""Parse benchmark: this engine vs ultimate-sitemap-parser vs a bare lxml loop.

Run: .venv/bin/python benchmarks/bench_parse.py [--repeat N] [--skip-usp-tree]

Inputs, generated once per run on the same loopback origin:
- a 50,000-URL urlset close to 10 MB, plain and gzipped (read from memory);
- the same gzipped file fetched over loopback, and a 1,000,000-URL tree: an
  index of 20 such gzipped files, served by a loopback HTTP server (127.0.0.1,
  ephemeral port) in this process. The tree's memory is compared with the one
  file fetched the same way (same imports: requests, the HTTP client).

Each measurement runs in a fresh Python subprocess that imports its parser,
then times only the parse (perf_counter; the process start and imports are
shown apart as "process s") and reports its peak resident memory (VmHWM of
the whole process: interpreter, imports and parse). The time is
the best of `--repeat` runs, the memory the highest. Nothing here touches the
internet.

Parsers:
- `lxml floor`: `iterparse(tag=url)`, `findtext(loc)`, count, clear the
  element and its finished siblings (bounded memory): the least any streaming
  lxml parser can do.
- `sitemapcrawl`: `parse_sitemap` (sniffing, gzip, normalisation of every
  field, strict scope, limits) iterated to the end; the tree via `walk_tree`
  with `PoliteHttpClient(delay=0)`.
- `usp`: ultimate-sitemap-parser's own classes: `helpers.gunzip` and
  `XMLSitemapParser` on the same bytes; the tree via `SitemapFetcher` on the
  index URL with its `RequestsWebClient`.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

from harness import bench_parser, high_water_mb, run_json, serve_folder, target_line

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
URLS_PER_FILE = 50_000
TREE_FILES = 20
TARGET_BYTES = 9_900_000
WORDS = (
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
    "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango",
    "uniform", "victor", "whiskey", "xray", "yankee", "zulu", "red", "green", "blue", "black",
    "white", "summer", "winter", "garden", "kitchen", "travel", "shoes", "shirt", "phone", "laptop",
    "camera", "review", "guide", "best", "cheap", "new", "used", "sale", "offer",
)


# --- inputs ---------------------------------------------------------------------


def make_urlset(base: str, file_number: int) -> bytes:
    """A 50,000-URL urlset of about `TARGET_BYTES`, deterministic for `file_number`."""
    rng = random.Random(file_number)
    head = f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{NS}">\n'
    tail = "</urlset>\n"
    per_entry = (TARGET_BYTES - len(head) - len(tail)) // URLS_PER_FILE
    parts = [head]
    for i in range(URLS_PER_FILE):
        day = 1 + rng.randrange(28)
        stamp = f"2024-{1 + rng.randrange(12):02d}-{day:02d}T{rng.randrange(24):02d}:{rng.randrange(60):02d}:00+00:00"
        changefreq = rng.choice(("daily", "weekly", "monthly"))
        prefix = f"  <url><loc>{base}/f{file_number:02d}/{rng.choice(WORDS)}/p{i:06d}-"
        suffix = (
            f"</loc><lastmod>{stamp}</lastmod><changefreq>{changefreq}</changefreq>"
            f"<priority>0.{rng.randrange(10)}</priority></url>\n"
        )
        slug = []
        room = per_entry - len(prefix) - len(suffix) - len(".html")
        while sum(len(w) + 1 for w in slug) < room:
            slug.append(rng.choice(WORDS))
        text = "-".join(slug)[:room]
        parts.append(f"{prefix}{text}.html{suffix}")
    parts.append(tail)
    return "".join(parts).encode()


def make_index(base: str, names: list[str]) -> bytes:
    rows = "".join(f"  <sitemap><loc>{base}/{name}</loc></sitemap>\n" for name in names)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex xmlns="{NS}">\n{rows}</sitemapindex>\n'.encode()


# --- the measured parsers (run in a child process) --------------------------------


def child_lxml_file(path: str, url: str) -> int:
    import io

    from lxml import etree

    data = Path(path).read_bytes()
    stream = gzip.GzipFile(fileobj=io.BytesIO(data)) if data[:2] == b"\x1f\x8b" else io.BytesIO(data)
    return _lxml_count(etree, stream)


def _lxml_count(etree, stream) -> int:  # type: ignore[no-untyped-def]
    count = 0
    loc = f"{{{NS}}}loc"
    events = etree.iterparse(stream, events=("end",), tag=f"{{{NS}}}url", resolve_entities=False, no_network=True)
    for _, element in events:
        if element.findtext(loc):
            count += 1
        element.clear()
        while element.getprevious() is not None:
            del element.getparent()[0]
    return count


def child_engine_file(path: str, url: str) -> int:
    from sitemapcrawl.sitemaps import parse_sitemap

    data = Path(path).read_bytes()
    return sum(1 for _ in parse_sitemap(data, url))


def child_usp_file(path: str, url: str) -> int:
    from usp.fetch_parse import XMLSitemapParser
    from usp.helpers import gunzip
    from usp.web_client.abstract_client import LocalWebClient

    data = Path(path).read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gunzip(data)
    parser = XMLSitemapParser(url=url, content=data.decode("utf-8-sig"), recursion_level=0,
                              web_client=LocalWebClient(), parent_urls=set())
    return sum(1 for _ in parser.sitemap().all_pages())


def child_lxml_tree(path: str, url: str) -> int:
    import io

    import requests
    from lxml import etree

    session = requests.Session()
    url_tag, sitemap_tag, loc_tag = f"{{{NS}}}url", f"{{{NS}}}sitemap", f"{{{NS}}}loc"

    def count(address: str) -> int:
        body = session.get(address).content
        stream = gzip.GzipFile(fileobj=io.BytesIO(body)) if body[:2] == b"\x1f\x8b" else io.BytesIO(body)
        total, children = 0, []
        events = etree.iterparse(stream, events=("end",), tag=(url_tag, sitemap_tag), resolve_entities=False)
        for _, element in events:
            loc = element.findtext(loc_tag)
            if element.tag == url_tag:
                total += 1 if loc else 0
            elif loc:
                children.append(loc.strip())
            element.clear()
            while element.getprevious() is not None:
                del element.getparent()[0]
        return total + sum(count(child) for child in children)

    return count(url)


def child_engine_tree(path: str, url: str) -> int:
    from sitemapcrawl.sitemaps import SitemapKind, SitemapLimits
    from sitemapcrawl.sitemaps.tree import walk_tree
    from sitemapcrawl.web.http import PoliteHttpClient

    client = PoliteHttpClient("sitemapcrawl-bench/1.0", delay=0.0)
    total = 0
    for node in walk_tree(url, client, limits=SitemapLimits()):
        if node.report is not None and node.kind is not SitemapKind.INDEX:
            total += node.report.kept
    return total


def child_usp_tree(path: str, url: str) -> int:
    from usp.fetch_parse import SitemapFetcher
    from usp.web_client.requests_client import RequestsWebClient

    sitemap = SitemapFetcher(url=url, recursion_level=0, web_client=RequestsWebClient()).sitemap()
    return sum(1 for _ in sitemap.all_pages())


CHILDREN = {
    ("file", "lxml floor"): child_lxml_file,
    ("file", "sitemapcrawl"): child_engine_file,
    ("file", "usp"): child_usp_file,
    ("tree", "lxml floor"): child_lxml_tree,
    ("tree", "sitemapcrawl"): child_engine_tree,
    ("tree", "usp"): child_usp_tree,
}


def run_child(mode: str, parser: str, path: str, url: str) -> None:
    function = CHILDREN[(mode, parser)]
    started = time.perf_counter()
    count = function(path, url)
    seconds = time.perf_counter() - started
    print(json.dumps({"seconds": seconds, "urls": count, "peak_mb": high_water_mb()}))


# --- the driver -----------------------------------------------------------------


def measure(mode: str, parser: str, path: str, url: str, repeat: int) -> dict[str, float]:
    runs = []
    for _ in range(repeat):
        started = time.perf_counter()
        run = run_json([sys.executable, __file__, "--child", mode, parser, path, url],
                       env={**os.environ, "PYTHONHASHSEED": "0"})
        run["process"] = time.perf_counter() - started
        runs.append(run)
    best = min(runs, key=lambda run: run["seconds"])
    return {
        "seconds": best["seconds"],
        "process": min(run["process"] for run in runs),
        "urls": best["urls"],
        "peak_mb": max(run["peak_mb"] for run in runs),
    }


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--repeat", type=int, default=3, help="runs per file measurement (best time)")
    parser.add_argument("--skip-usp-tree", action="store_true", help="skip usp on the 1M-URL tree")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        run_child(*args.child)
        return

    with tempfile.TemporaryDirectory(prefix="bench_parse_") as tmp:
        folder = Path(tmp)
        with serve_folder(folder) as base:
            print(f"generating inputs on {base} ...", file=sys.stderr)
            names = []
            for number in range(1, TREE_FILES + 1):
                data = make_urlset(base, number)
                name = f"sitemap-{number:02d}.xml.gz"
                (folder / name).write_bytes(gzip.compress(data, 6))
                names.append(name)
                if number == 1:
                    (folder / "sitemap-01.xml").write_bytes(data)
                    plain_size, gz_size = len(data), len((folder / name).read_bytes())
            (folder / "index.xml").write_bytes(make_index(base, names))
            print(f"urlset: {URLS_PER_FILE:,} URLs, {plain_size:,} bytes plain, {gz_size:,} gzipped; "
                  f"tree: {TREE_FILES} files, {URLS_PER_FILE * TREE_FILES:,} URLs", file=sys.stderr)

            rows = []
            plain, packed = "sitemap-01.xml", "sitemap-01.xml.gz"
            cases = [
                ("urlset 10 MB plain", "file", str(folder / plain), f"{base}/{plain}", args.repeat),
                ("urlset 10 MB gzip", "file", str(folder / packed), f"{base}/{packed}", args.repeat),
                ("urlset gzip (loopback)", "tree", "", f"{base}/{packed}", args.repeat),
                ("tree 1M URLs (loopback)", "tree", "", f"{base}/index.xml", 1),
            ]
            for label, mode, path, url, repeat in cases:
                for name in ("lxml floor", "sitemapcrawl", "usp"):
                    if mode == "tree" and name == "usp" and args.skip_usp_tree:
                        continue
                    print(f"  {label}: {name} ...", file=sys.stderr)
                    rows.append((label, name, measure(mode, name, path, url, repeat)))
    report(rows)


def report(rows: list[tuple[str, str, dict[str, float]]]) -> None:
    by = {(label, name): result for label, name, result in rows}
    header = (
        f"{'input':<24} {'parser':<13} {'seconds':>8} {'process s':>9} {'URLs':>10} {'URLs/s':>10} "
        f"{'peak MB':>8} {'x floor':>8} {'x usp':>7} {'mem x floor':>11}"
    )
    print(header)
    print("-" * len(header))
    for label, name, result in rows:
        floor = by.get((label, "lxml floor"))
        usp = by.get((label, "usp"))
        rate = result["urls"] / result["seconds"] if result["seconds"] else 0.0
        vs_floor = f"{result['seconds'] / floor['seconds']:.2f}" if floor else "-"
        vs_usp = f"{result['seconds'] / usp['seconds']:.2f}" if usp else "-"
        mem_floor = f"{result['peak_mb'] / floor['peak_mb']:.2f}" if floor else "-"
        print(f"{label:<24} {name:<13} {result['seconds']:>8.3f} {result['process']:>9.3f} "
              f"{result['urls']:>10,} {rate:>10,.0f} "
              f"{result['peak_mb']:>8.1f} {vs_floor:>8} {vs_usp:>7} {mem_floor:>11}")

    gz = "urlset 10 MB gzip"
    engine, floor, usp = by[(gz, "sitemapcrawl")], by[(gz, "lxml floor")], by[(gz, "usp")]
    tree = by[("tree 1M URLs (loopback)", "sitemapcrawl")]
    single = by[("urlset gzip (loopback)", "sitemapcrawl")]
    print()
    print(target_line("time within 1.3x of the lxml floor (gzip)", engine["seconds"] / floor["seconds"], 1.3))
    print(target_line("time at most 0.25x usp's (gzip)", engine["seconds"] / usp["seconds"], 0.25))
    print(target_line("peak memory under 60 MB (gzip)", engine["peak_mb"], 60.0, " MB"))
    print(target_line("tree memory at most 1.2x one file's, both over loopback", tree["peak_mb"] / single["peak_mb"],
                      1.2))
    print(
        f"info: tree memory vs the in-memory gzip run (which imports no HTTP stack): "
        f"{tree['peak_mb'] / engine['peak_mb']:.2f}x"
    )
    counts = {result["urls"] for label, _, result in rows if label == gz}
    if len(counts) != 1:
        print(f"note: parsers disagree on the URL count of the gzip file: {sorted(counts)}")


if __name__ == "__main__":
    main()
