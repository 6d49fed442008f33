"""Row codec benchmark: the codec alone before and after, and through HBase against plain happybase.

The rows are those of a sitemap inventory after parse and updatedb: a listed
URL with its status, next fetch, interval, sitemap hints (priority,
changefreq, lastmod), depth, radius, score, two batch marks and the inlink
cell of the sitemap that lists it (14 cells, 3 of them times).

1. The codec alone, no I/O, at 100,000 and 1,000,000 rows (values cycled from
   a pool of 10,000 rows): build a `WebPage` and `encode` it; `decode` its
   cells; `format_inlink`; `parse_inlink`. Each version of the package runs
   in its own fresh process: this checkout ("after") and a baseline commit
   ("before", default 18717e7, the last one before the codec stopped using
   strptime), extracted with `git archive` into a temporary directory. The
   two alternate `--repeat` times; each step's best time counts.
2. Through the local HBase, 100,000 rows, this checkout only: plain
   happybase batch puts of the same keys and cells (the floor) against
   building rows, `encode` and `Store.write`; a plain happybase scan against
   `Store.scan`, `decode` and `parse_inlink` of every row's inlink. Each side
   puts into and scans its own fresh table, dropped before the other side
   starts (the local HBase has a small heap), `--repeat` times, going first
   every other time; each step's best time counts.

Prints two tables; the machine is noisy, so read the ratios. Run with the
local HBase up:

    .venv/bin/python benchmarks/bench_codec.py [--rows 100000,1000000] [--hbase-rows 100000]
        [--baseline 18717e7] [--repeat 3] [--skip-hbase]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from harness import (
    REPO,
    add_hbase_option,
    baseline_tree,
    bench_parser,
    connect,
    dropped_at_end,
    plain_puts,
    require_hbase,
    run_json,
    size_list,
    source_env,
    table_prefix,
)

BATCH = "20261130120000-ab12"
POOL = 10_000
FREQS = ("always", "hourly", "daily", "weekly", "monthly", "yearly", "never")
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def row_values(i: int) -> tuple[str, str, datetime, float, str]:
    """URL, listing sitemap, lastmod, priority and changefreq of inventory row `i`."""
    host = i % 20
    return (f"http://h{host}.example/section-{i % 97}/page-{i}.html",
            f"http://h{host}.example/sitemap-{i // 50_000}.xml.gz", NOW - timedelta(seconds=i * 37),
            (i % 11) / 10, FREQS[i % 7])


# --------------------------------------------------------------- the codec --

def codec_steps() -> dict[str, Callable[[int], None]]:
    """The timed steps, written against the API both versions share.

    The codec's names are looked up where the measured tree keeps them: flat
    modules in the default baseline, `sitemapcrawl.model` since fc1accb, the
    codec in `model.cells` since the row model was split.
    """
    import importlib

    from sitemapcrawl.sitemaps.model import ChangeFreq

    def located(name: str) -> Any:
        for module in ("sitemapcrawl.model.cells", "sitemapcrawl.model.webpage", "sitemapcrawl.model.linkvalues",
                       "sitemapcrawl.webpage", "sitemapcrawl.linkvalues"):
            try:
                found = importlib.import_module(module)
            except ImportError:
                continue
            if hasattr(found, name):
                return getattr(found, name)
        raise ImportError(f"no module of the measured tree has {name}")

    Inlink, InlinkKind = located("Inlink"), located("InlinkKind")
    format_inlink, parse_inlink = located("format_inlink"), located("parse_inlink")
    FetchStatus, WebPage = located("FetchStatus"), located("WebPage")
    decode, encode = located("decode"), located("encode")

    values = [row_values(i) for i in range(POOL)]
    links = [Inlink(InlinkKind.SITEMAP, 1, 0, BATCH, priority=p, changefreq=ChangeFreq(cf), lastmod=lm)
             for _, _, lm, p, cf in values]
    texts = [format_inlink(link) for link in links]

    def page(i: int) -> Any:
        url, sitemap, lastmod, priority, freq = values[i]
        return WebPage(url, status=FetchStatus.UNFETCHED, next_fetch=NOW, fetch_interval=86_400, in_sitemap=True,
                       priority=priority, changefreq=ChangeFreq(freq), lastmod=lastmod, depth=1, radius=0,
                       score=0.0, discover_mark=BATCH, merge_mark=BATCH, inlinks={sitemap: texts[i]})

    cells = [encode(page(i)) for i in range(POOL)]

    def build_and_encode(n: int) -> None:
        for i in range(n):
            encode(page(i % POOL))

    def decode_rows(n: int) -> None:
        for i in range(n):
            decode(WebPage, values[i % POOL][0], cells[i % POOL])

    def inlink_format(n: int) -> None:
        for i in range(n):
            format_inlink(links[i % POOL])

    def inlink_parse(n: int) -> None:
        for i in range(n):
            parse_inlink(texts[i % POOL])

    return {"build + encode": build_and_encode, "decode": decode_rows, "format_inlink": inlink_format,
            "parse_inlink": inlink_parse}


def child(sizes: list[int]) -> None:
    """Time every codec step at every size; print JSON {step: {size: seconds}}."""
    steps = codec_steps()
    result: dict[str, dict[int, float]] = {}
    for name, step in steps.items():
        result[name] = {}
        for size in sizes:
            started = time.perf_counter()
            step(size)
            result[name][size] = time.perf_counter() - started
    print(json.dumps(result))


def run_child(source: Path, sizes: list[int]) -> dict[str, dict[str, float]]:
    """The codec steps timed in a fresh process that imports the package from `source`."""
    return run_json([sys.executable, __file__, "--child", ",".join(map(str, sizes))],  # type: ignore[return-value]
                    env=source_env(source), cwd=source)


# ------------------------------------------------------------------- HBase --

FLOOR_PUT = "put: plain happybase batch"
FLOOR_SCAN = "scan: plain happybase"
CODEC_PUT = "put: build, encode, Store.write"
CODEC_SCAN = "scan: Store.scan, decode, parse_inlink"


def hbase_part(hbase: str, rows: int, repeat: int) -> list[tuple[str, int, float, str]]:
    """(step, rows, best seconds, floor step) for the puts and scans through HBase, `repeat` times each."""
    from sitemapcrawl.config import Settings
    from sitemapcrawl.model.cells import decode, encode
    from sitemapcrawl.model.linkvalues import Inlink, InlinkKind, format_inlink, parse_inlink
    from sitemapcrawl.model.webpage import WEBPAGE_TABLE, FetchStatus, WebPage
    from sitemapcrawl.sitemaps.model import ChangeFreq
    from sitemapcrawl.storage.store import Store
    from sitemapcrawl.web import rowkeys

    values = [row_values(i) for i in range(rows)]
    keys = [rowkeys.row_key(url).encode() for url, *_ in values]

    def pages() -> Iterator[tuple[bytes, dict[bytes, bytes]]]:
        for key, (url, sitemap, lastmod, priority, freq) in zip(keys, values, strict=True):
            text = format_inlink(Inlink(InlinkKind.SITEMAP, 1, 0, BATCH, priority=priority,
                                        changefreq=ChangeFreq(freq), lastmod=lastmod))
            yield key, encode(WebPage(url, status=FetchStatus.UNFETCHED, next_fetch=NOW, fetch_interval=86_400,
                                      in_sitemap=True, priority=priority, changefreq=ChangeFreq(freq),
                                      lastmod=lastmod, depth=1, radius=0, score=0.0, discover_mark=BATCH,
                                      merge_mark=BATCH, inlinks={sitemap: text}))

    floor_rows = list(pages())  # the same keys and cells, encoded before the clock starts
    best: dict[str, tuple[int, float]] = {}

    def keep(step: str, count: int, started: float) -> None:
        seconds = time.perf_counter() - started
        if step not in best or seconds < best[step][1]:
            best[step] = (count, seconds)

    def floor_side(settings: Settings, store: Store) -> None:
        connection = connect(settings.hbase, timeout_ms=settings.hbase_timeout_ms)
        try:
            table = connection.table(store.table_name(WEBPAGE_TABLE))
            started = time.perf_counter()
            plain_puts(table, floor_rows, settings.hbase_batch_size)
            keep(FLOOR_PUT, rows, started)
            started = time.perf_counter()
            keep(FLOOR_SCAN, sum(1 for _ in table.scan(batch_size=settings.hbase_batch_size)), started)
        finally:
            connection.close()

    def codec_side(settings: Settings, store: Store) -> None:
        started = time.perf_counter()
        store.write(WEBPAGE_TABLE, pages())
        keep(CODEC_PUT, rows, started)
        started = time.perf_counter()
        scanned = 0
        for key, cells in store.scan(WEBPAGE_TABLE):
            row = decode(WebPage, rowkeys.url_from_row_key(key.decode()), cells)
            for text in (row.inlinks or {}).values():
                parse_inlink(text)
            scanned += 1
        keep(CODEC_SCAN, scanned, started)

    for number in range(max(1, repeat)):
        # Each side goes first every other time (the second may meet a flush of the first's
        # memstore); one side's table at a time, dropped after, so a small local HBase copes.
        for side in (codec_side, floor_side) if number % 2 else (floor_side, codec_side):
            with dropped_at_end(hbase, table_prefix("codec")) as prefix:
                settings = Settings(hbase=hbase, table_prefix=prefix)
                with Store(settings) as store:
                    store.create_tables()
                    side(settings, store)
    floor_of = {FLOOR_PUT: "", CODEC_PUT: FLOOR_PUT, FLOOR_SCAN: "", CODEC_SCAN: FLOOR_SCAN}
    return [(step, *best[step], floor_of[step]) for step in floor_of]


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--rows", type=size_list, default="100000,1000000",
                        help="codec-alone sizes, comma-separated [default: %(default)s]")
    parser.add_argument("--hbase-rows", type=int, default=100_000)
    parser.add_argument("--baseline", default="18717e7", help="git ref of the 'before' codec")
    add_hbase_option(parser)
    parser.add_argument("--repeat", type=int, default=3, help="codec runs per version (best counts)")
    parser.add_argument("--skip-hbase", action="store_true")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child([int(size) for size in args.child.split(",")])
        return

    sizes = args.rows
    if not args.skip_hbase:
        require_hbase(args.hbase)
    hbase = [] if args.skip_hbase else hbase_part(args.hbase, args.hbase_rows, args.repeat)
    before: dict[str, dict[str, float]] = {}
    after: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        old_tree = baseline_tree(args.baseline, Path(tmp))
        for _ in range(max(1, args.repeat)):  # alternate, so both see the same kind of load
            for best, tree in ((before, old_tree), (after, REPO)):
                for step, by_size in run_child(tree, sizes).items():
                    for size, seconds in by_size.items():
                        best.setdefault(step, {})[size] = min(seconds, best.get(step, {}).get(size, seconds))

    floors = {step: seconds / rows for step, rows, seconds, _ in hbase}
    print(f"codec alone (before = {args.baseline}, after = this checkout), µs per row")
    print(f"{'step':<16} {'rows':>10} {'before':>8} {'after':>8} {'before/after':>12}"
          + ("" if not hbase else f" {'after/put floor':>15}"))
    print("-" * (58 + (16 if hbase else 0)))
    put_floor = floors.get(FLOOR_PUT)
    for step, by_size in after.items():
        for size, seconds in by_size.items():
            old, new = before[step][size] / int(size) * 1e6, seconds / int(size) * 1e6
            line = f"{step:<16} {int(size):>10,} {old:>8.2f} {new:>8.2f} {old / new:>11.2f}x"
            if put_floor:
                line += f" {new / (put_floor * 1e6):>15.3f}"
            print(line)
    if hbase:
        print()
        print("through HBase (this checkout)")
        print(f"{'step':<40} {'rows':>9} {'seconds':>8} {'rows/s':>8} {'x floor':>8}")
        print("-" * 77)
        for step, rows, seconds, floor in hbase:
            ratio = seconds / rows / floors[floor] if floor else 1.0
            print(f"{step:<40} {rows:>9,} {seconds:>8.2f} {rows / seconds:>8,.0f} {ratio:>8.2f}")


if __name__ == "__main__":
    main()
