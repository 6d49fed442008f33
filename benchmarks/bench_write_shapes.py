"""What HBase pays per listed URL for each shape of the inventory's writes, against the 8-cell put floor (issue 24).

Run with an HBase of its own (its JVMs' CPU is read from its folder), from the repository root:

    export PYTHONPATH=$PWD
    HBASE_LOCAL_DIR=/work/hbase-shapes HBASE_LOCAL_THRIFT_PORT=9471 HBASE_LOCAL_ZK_PORT=2471 scripts/hbase-local start
    .venv/bin/python benchmarks/bench_write_shapes.py --hbase 127.0.0.1:9471 --hbase-dir /work/hbase-shapes
    .venv/bin/python benchmarks/bench_write_shapes.py --urls 300000 ...     # a quicker look

bench_scale's figure 1 times the whole inventory against the floor; this
one takes it apart, so a design can be priced before it is built. A real
crawl of a 1,000-URL site (`inventory_writes.write_site`, the CLI's
`crawl --mode sitemap-only`) gives the template: the cells the crawl leaves
on a listed URL's row, read back. Then, for `--urls` URLs shaped like real
ones (bench_scale's row keys; each URL's own status, next fetch, score,
depth, radius, priority, changefreq and lastmod, the template's other cells
beside them), each shape is written with plain happybase batch puts of 1,000
rows into a fresh table (default column family options for all, the floor's
too), and timed with the HBase JVMs' CPU:

- `floor`: the 8 cells in one put (bench_scale's floor);
- `row, one put`: the whole listed row as the crawl leaves it, in one put;
- `il: cells alone`, `read between`, `the rest`: the row as parse and updatedb
  write it today, one shape after the other into one table: parse's `il:`
  cells, updatedb's scan of those rows (its merge columns), then its put of
  the rest of the row;
- `row without ledgers`: one put, without what the row counts and quality
  evidence store per row (`s:fl`, which stands for the ledger cells `m:hc`
  and `s:qc` on a row as first listed; those cells where a row holds them);
- `ready, a row each` / `ready, 64 a row`: the due queue's entries, as
  `write_pages` writes them today, and grouped 64 to a row;
- `ready, a row each, 10x rows a call`: the same entries in a tenth of the
  round trips: what a call costs HBase beside the cells it carries (the
  crawl makes several times the floor's calls, bench_scale's figure 1b).

Printed: cells and bytes (key + column + value) per URL, seconds of the puts,
and HBase CPU, each as a ratio to the floor. The HBase CPU of a shape is its
puts, then the flush of its table (the HBase shell's `flush`) and every
compaction that follows, until the JVMs idle: otherwise a shape pays for the
flushes and compactions of the one before it (two runs of the same shapes
differed by a quarter without this). Tables are dropped at the end.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

from harness import (
    AGENT,
    HBASE_LOCAL,
    add_hbase_option,
    bench_parser,
    commit,
    connect,
    dropped_at_end,
    hbase_cpu_seconds,
    load_average,
    plain_puts,
    require_hbase,
    serve_folder,
    with_retries,
)
from inventory_writes import floor_rows, write_site

TEMPLATE_URLS = 1_000
ROWS_PER_CALL = 1_000
#: Ready entries a grouped due row holds.
GROUPED = 64
#: How many times `ROWS_PER_CALL` the wide-call shape puts a round trip.
CALL_RATIO = 10
#: The row's ledger fields (`m:hc`, `s:qc`, or `s:fl` for both): what it added to the row counts and quality evidence.
LEDGERS = ["counted", "quality_contributions", "first_listing"]
#: HBase is idle (its compactions done) below this share of a core over SETTLE_STEP seconds.
SETTLED_CPU = 0.1
SETTLE_STEP = 3.0

Cells = dict[bytes, bytes]


def template(hbase: str, prefix: str) -> tuple[Cells, dict[str, list[str]]]:
    """The cells a real sitemap-only crawl leaves on a listed URL's row (one of a 1,000-URL site), and the
    column families of the tables it made (table -> families)."""
    from sitemapcrawl.model.cells import encode
    from sitemapcrawl.model.webpage import DUE_TABLE, WEBPAGE_TABLE, FetchStatus, WebPage

    with tempfile.TemporaryDirectory() as folder, serve_folder(Path(folder)) as base:
        write_site(Path(folder), base, TEMPLATE_URLS)
        seeds = Path(folder) / "seeds.txt"
        seeds.write_text(base + "/\n", encoding="utf-8")
        subprocess.run([sys.executable, "-m", "sitemapcrawl", "--hbase", hbase, "--table-prefix", prefix,
                        "--user-agent", AGENT, "crawl", str(seeds), "--mode", "sitemap-only",
                        "--sitemaps-only-docs", "--delay", "0"], check=True, capture_output=True)
    unfetched = encode(WebPage("", status=FetchStatus.UNFETCHED))
    inlinks = encode(WebPage("", inlinks={"": ""})).popitem()[0]
    connection = connect(hbase)
    try:
        families = {name: [f.decode() for f in connection.table(prefix + name).families()]
                    for name in (WEBPAGE_TABLE, DUE_TABLE)}
        for _key, cells in connection.table(prefix + WEBPAGE_TABLE).scan():
            if unfetched.items() <= cells.items() and any(name.startswith(inlinks) for name in cells):
                return dict(cells), families
    finally:
        connection.close()
    raise SystemExit("no listed row found in the template crawl")


def shaped_rows(n_urls: int) -> tuple[list[bytes], list[Cells]]:
    """Each URL's row key and its 8 floor cells (bench_scale's)."""
    keys, which, cells = floor_rows("http://127.0.0.1:8000", n_urls, datetime.now(UTC).replace(microsecond=0))
    return keys, [cells[k] for k in which]


def ready_entries(keys: list[bytes], rows: list[Cells], extra: Cells) -> list[tuple[bytes, Cells]]:
    """The ready queue entry `write_pages` writes for each row (key and cells), as the product makes it."""
    from sitemapcrawl.model.cells import encode
    from sitemapcrawl.model.webpage import DueRow
    from sitemapcrawl.storage import dueindex

    entry = encode(DueRow("", entry=True))
    out = []
    for key, cells in zip(keys, rows, strict=True):
        ready = dueindex.due_state(key, {**cells, **extra}).ready(key)
        if ready is not None:
            out.append((ready.key(), entry))
    return out


def measure(name: str, hbase_dir: Path | None, tables: list[str], action: Callable[[], None]) -> tuple[float, float]:
    """Seconds of `action`, and the HBase CPU seconds it caused: its puts, then (with `hbase_dir`) the flush
    of `tables` and every compaction until HBase idles, so that no shape pays for the one before."""
    cpu = hbase_cpu_seconds(hbase_dir) if hbase_dir else 0.0
    started = time.perf_counter()
    action()
    seconds = time.perf_counter() - started
    used = 0.0
    if hbase_dir:
        flush(hbase_dir, tables)
        settle(hbase_dir)
        used = hbase_cpu_seconds(hbase_dir) - cpu
    print(f"  {name}: {seconds:.1f} s, HBase CPU {used:.1f} s", file=sys.stderr)
    return seconds, used


def flush(hbase_dir: Path, tables: list[str]) -> None:
    """Flush the memstores of `tables` (the HBase shell's `flush`, in a JVM of its own: its CPU is not counted)."""
    with tempfile.NamedTemporaryFile("w", suffix=".rb") as script:
        script.write("".join(f"flush '{name}'\n" for name in tables) + "exit\n")
        script.flush()
        subprocess.run([str(HBASE_LOCAL), "shell", script.name], check=True, capture_output=True,
                       env=dict(os.environ, HBASE_LOCAL_DIR=str(hbase_dir)), timeout=600)


def settle(hbase_dir: Path, idle: float = SETTLED_CPU, most: float = 600.0) -> None:
    """Wait until the HBase JVMs use less than `idle` of a core over `SETTLE_STEP` seconds (compactions done)."""
    deadline = time.monotonic() + most
    before = hbase_cpu_seconds(hbase_dir)
    while time.monotonic() < deadline:
        time.sleep(SETTLE_STEP)
        now = hbase_cpu_seconds(hbase_dir)
        if now - before < idle * SETTLE_STEP:
            return
        before = now


def _puts(table: object, rows: Iterator[tuple[bytes, Cells]], rows_per_call: int = ROWS_PER_CALL) -> None:
    """Plain happybase batch puts of `rows`, `rows_per_call` rows a round trip (happybase counts cells)."""
    first = next(rows, None)
    if first is None:
        return
    plain_puts(table, _chain(first, rows), rows_per_call * len(first[1]))  # type: ignore[arg-type]


def _chain(first: tuple[bytes, Cells], rest: Iterator[tuple[bytes, Cells]]) -> Iterator[tuple[bytes, Cells]]:
    yield first
    yield from rest


def size(rows: Iterator[tuple[bytes, Cells]]) -> tuple[int, int]:
    """Cells and bytes (key + column + value per cell) of `rows`."""
    cells = total = 0
    for key, data in rows:
        cells += len(data)
        total += sum(len(key) + len(column) + len(value) for column, value in data.items())
    return cells, total


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--urls", type=int, default=1_000_000, help="listed URLs per shape [default: 1,000,000]")
    parser.add_argument("--hbase-dir", type=Path, default=None, metavar="DIR",
                        help="the scripts/hbase-local folder of that HBase: its JVMs' CPU is read")
    add_hbase_option(parser)
    args = parser.parse_args()
    require_hbase(args.hbase)
    n = args.urls
    print(f"# bench_write_shapes, commit {commit()}, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, load {load_average()}")
    with dropped_at_end(args.hbase, f"bench_shapes_{time.time_ns() % 10**8:08d}_") as prefix:
        from sitemapcrawl.model.cells import column_names, encode
        from sitemapcrawl.model.webpage import DUE_TABLE, WEBPAGE_TABLE, WebPage

        keys, rows = shaped_rows(n)
        listed, families = template(args.hbase, prefix + "t_")
        extra = {c: v for c, v in listed.items() if c not in rows[0]}  # beside the floor's 8 cells
        inlinks = encode(WebPage("", inlinks={"": ""})).popitem()[0]  # the `il:` family's prefix
        inlink = {c: v for c, v in extra.items() if c.startswith(inlinks)}
        rest = {c: v for c, v in extra.items() if not c.startswith(inlinks)}
        ledgers = set(column_names(WebPage, LEDGERS))
        unledgered = {c: v for c, v in extra.items() if c not in ledgers}
        read_families = sorted({c.split(b":", 1)[0] for c in listed})  # what the listed row has
        ready = ready_entries(keys, rows, extra)
        entry_family = families[DUE_TABLE][0].encode() + b":"
        grouped = [(b"g" + ready[i][0], {entry_family + k: b"" for k, _ in ready[i:i + GROUPED]})
                   for i in range(0, len(ready), GROUPED)]
        connection = connect(args.hbase)
        page_families: dict[str, dict[str, object]] = {f: {} for f in families[WEBPAGE_TABLE]}
        due: dict[str, dict[str, object]] = {f: {} for f in families[DUE_TABLE]}

        def fresh(name: str, fams: dict[str, dict[str, object]] | None = None) -> object:
            """A new table `prefix + name` (the webpage families, or `fams`), default family options."""
            with_retries("create table", lambda: connection.create_table(prefix + name, fams or page_families))
            return connection.table(prefix + name)

        def put(name: str, pairs: Callable[[], Iterator[tuple[bytes, Cells]]], rows_per_call: int = ROWS_PER_CALL,
                fams: dict[str, dict[str, object]] | None = None) -> Callable[[], None]:
            table = fresh(name, fams)
            return lambda: _puts(table, pairs(), rows_per_call)

        shapes: list[tuple[str, tuple[int, int], tuple[float, float]]] = []
        if args.hbase_dir:
            settle(args.hbase_dir)  # the template's crawl and anything before it done

        def shape(label: str, sizes: tuple[int, int], action: Callable[[], None], table: str) -> None:
            shapes.append((label, sizes, measure(label, args.hbase_dir, [prefix + table], action)))

        def with_cells(more: Cells) -> Callable[[], Iterator[tuple[bytes, Cells]]]:
            return lambda: ((key, {**cells, **more}) for key, cells in zip(keys, rows, strict=True))

        shape("floor: 8 cells, one put", size(with_cells({})()), put("floor", with_cells({})), "floor")
        shape("row, one put", size(with_cells(extra)()), put("one", with_cells(extra)), "one")
        two = fresh("two")

        def read_between() -> None:  # updatedb reads the listed rows back: parse's il: cells, nothing else yet
            for _ in two.scan(columns=read_families, batch_size=ROWS_PER_CALL):  # type: ignore[attr-defined]
                pass

        shape("il: cells alone (parse's put)", size((key, inlink) for key in keys),
              lambda: _puts(two, ((key, inlink) for key in keys)), "two")
        shape("read between (updatedb's scan)", (0, 0), read_between, "two")
        shape("the rest (updatedb's put)", size(with_cells(rest)()), lambda: _puts(two, with_cells(rest)()), "two")
        shape("row without ledgers (s:fl)", size(with_cells(unledgered)()),
              put("bare", with_cells(unledgered)), "bare")
        shape("ready, a row each", size(iter(ready)), put("due1", lambda: iter(ready), fams=due), "due1")
        shape(f"ready, {GROUPED} a row", size(iter(grouped)),
              put("due64", lambda: iter(grouped), rows_per_call=ROWS_PER_CALL // GROUPED, fams=due), "due64")
        shape(f"ready, a row each, {CALL_RATIO}x rows a call", size(iter(ready)),
              put("due1w", lambda: iter(ready), rows_per_call=ROWS_PER_CALL * CALL_RATIO, fams=due), "due1w")
        connection.close()
    base_cells, base_bytes = shapes[0][1]
    base_s, base_cpu = shapes[0][2]
    print(f"\nwrite shapes, {n:,} listed URLs, plain happybase puts of {ROWS_PER_CALL:,} rows a call")
    print(f"{'shape':<40} {'cells/URL':>9} {'bytes/URL':>9} {'s':>7} {'x floor':>7} {'HBase CPU s':>11} "
          f"{'x floor':>7}")
    for label, (cells, total), (seconds, cpu) in shapes:
        cpu_ratio = f"{cpu / base_cpu:>7.2f}" if base_cpu else f"{'-':>7}"
        print(f"{label:<40} {cells / n:>9.2f} {total / n:>9.0f} {seconds:>7.1f} {seconds / base_s:>7.2f} "
              f"{cpu:>11.1f} {cpu_ratio}")
    print(f"(floor: {base_cells / n:.0f} cells, {base_bytes / n:.0f} bytes per URL)")


if __name__ == "__main__":
    main()
