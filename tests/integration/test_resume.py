"""Kill a crawl (SIGKILL, SIGINT) in each phase, rerun it, and compare with a crawl never interrupted.

The kill is deterministic: `tests/killpoint.py` runs the CLI and signals its
own process right after the first write the phase makes in round 2 (for
fetch: after three outcomes are written, with every later request held back,
so no request is in flight unrecorded). The rerun must say which batch it
resumes and why, end with the same rows and statuses as the uninterrupted
crawl of the same loopback web, and fetch no URL twice (robots.txt aside:
every crawl starts by reading each host's robots.txt afresh, by design).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from hbase_fixtures import REPO

from sitemapcrawl.batch import registry
from sitemapcrawl.config import Settings
from sitemapcrawl.model.cells import column_names, decode
from sitemapcrawl.model.webpage import BATCHROW_TABLE, WEBPAGE_TABLE, WebPage
from sitemapcrawl.storage.store import Store
from sitemapcrawl.testweb import TestWebServer, bulk_web
from sitemapcrawl.web import rowkeys

AGENT = "TestBot/1.0 (+http://127.0.0.1/bot)"
KILLPOINT = REPO / "tests" / "killpoint.py"


WEB = bulk_web(2, 10, first_host="127.0.8.1")  # served by the shared `web` fixture, one server for the module


@pytest.fixture(scope="module")
def seeds(web: TestWebServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("seeds") / "seeds.txt"
    path.write_text("".join(f"{url}\n" for url in web.base_urls()), encoding="utf-8")
    return path


def crawl_command(hbase: str, prefix: str, seeds: Path, quiet: bool = True) -> list[str]:
    return ["--hbase", hbase, "--table-prefix", prefix, "--user-agent", AGENT, *(["-q"] if quiet else []),
            "crawl", str(seeds),
            "--rounds", "10", "--delay", "0", "--max-connections", "4"]


def environment() -> dict[str, str]:
    # Small write batches, so that every phase writes several times and a kill lands in its middle.
    return dict(os.environ, PYTHONPATH=f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
                SITEMAPCRAWL_HBASE_BATCH_SIZE="4")


def init(hbase: str, prefix: str) -> None:
    with Store(Settings(hbase=hbase, table_prefix=prefix)) as store:
        store.create_tables()


def final_table(hbase: str, prefix: str) -> dict[str, tuple[object, ...]]:
    """URL -> status, HTTP code, depth, radius, sitemap flags, and whether parse and updatedb did it."""
    fields = ["status", "http_code", "depth", "radius", "in_sitemap", "is_sitemap", "parse_mark", "update_mark"]
    with Store(Settings(hbase=hbase, table_prefix=prefix)) as store:
        table = {}
        for key, cells in store.scan(WEBPAGE_TABLE, columns=column_names(WebPage, fields)):
            url = rowkeys.url_from_row_key(key.decode())
            row = decode(WebPage, url, cells)
            table[url] = (row.status, row.http_code, row.depth, row.radius, row.in_sitemap, row.is_sitemap,
                          row.parse_mark is not None, row.update_mark is not None)
        return table


def unfinished_batches(hbase: str, prefix: str) -> list[str]:
    with Store(Settings(hbase=hbase, table_prefix=prefix)) as store:
        return [state.batch_id for state in registry.unfinished(store)]


def batch_records(hbase: str, prefix: str) -> list[bytes]:
    """Every record left in `batchrow` (members and touched rows of batches in flight)."""
    with Store(Settings(hbase=hbase, table_prefix=prefix)) as store:
        return [key for key, _ in store.scan(BATCHROW_TABLE)]


def fetched(web: TestWebServer) -> Counter[str]:
    return Counter(r.url for r in web.log.records() if r.status != 0 and r.target != "/robots.txt")


def drop(hbase: str, prefix: str) -> None:
    with Store(Settings(hbase=hbase, table_prefix=prefix)) as store:
        store.drop_tables()


@pytest.fixture(scope="module")
def baseline(web: TestWebServer, seeds: Path,
             hbase_address: str) -> Iterator[tuple[dict[str, tuple[object, ...]], Counter[str]]]:
    prefix = f"t_resume_base_{uuid.uuid4().hex[:6]}_"
    web.reset()
    init(hbase_address, prefix)
    done = subprocess.run([sys.executable, "-m", "sitemapcrawl", *crawl_command(hbase_address, prefix, seeds)],
                          env=environment(), capture_output=True, text=True, timeout=600)
    try:
        assert done.returncode == 0, done.stderr
        yield final_table(hbase_address, prefix), fetched(web)
    finally:
        drop(hbase_address, prefix)


@pytest.mark.tables
@pytest.mark.parametrize("sig", ["KILL", "INT"])
@pytest.mark.parametrize("phase", ["generate", "fetch", "parse", "updatedb"])
def test_a_crawl_killed_in_any_phase_resumes_to_the_same_table(
        phase: str, sig: str, web: TestWebServer, seeds: Path, hbase_address: str, table_prefix: str,
        baseline: tuple[dict[str, tuple[object, ...]], Counter[str]]) -> None:
    rows, pages = baseline
    assert len(rows) > 20 and all(n == 1 for n in pages.values())
    web.reset()
    init(hbase_address, table_prefix)
    command = crawl_command(hbase_address, table_prefix, seeds)
    killed = subprocess.run([sys.executable, str(KILLPOINT), phase, sig, "2", "3", "--", *command],
                            env=environment(), capture_output=True, text=True, timeout=600)
    assert f"killpoint: {phase}" in killed.stderr
    assert killed.returncode == (-signal.SIGKILL if sig == "KILL" else 130), killed.stderr
    left = unfinished_batches(hbase_address, table_prefix)
    assert len(left) == 1  # the kill left a batch unfinished

    again = crawl_command(hbase_address, table_prefix, seeds, quiet=False)
    rerun = subprocess.run([sys.executable, "-m", "sitemapcrawl", *again], env=environment(),
                           capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr
    assert f"crawl: batch {left[0]}: resuming, left unfinished by an earlier run (" in rerun.stderr
    assert unfinished_batches(hbase_address, table_prefix) == []
    assert batch_records(hbase_address, table_prefix) == []  # the resumed updatedb removed them
    assert "Traceback" not in rerun.stderr + killed.stderr
    assert final_table(hbase_address, table_prefix) == rows
    twice = {url: n for url, n in fetched(web).items() if n > 1}
    assert twice == {}
    assert set(fetched(web)) == set(pages)
