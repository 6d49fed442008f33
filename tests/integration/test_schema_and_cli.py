"""init, readdb and the HBase shell against the real local HBase."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from cli_helpers import cli, runner
from hbase_fixtures import REPO, hbase_shell, run_shell_file

from sitemapcrawl.cli.app import app
from sitemapcrawl.config import Settings
from sitemapcrawl.model.cells import encode
from sitemapcrawl.model.webpage import (
    BATCH_TABLE,
    BATCHROW_TABLE,
    DUE_TABLE,
    HISTORY_TABLE,
    HOST_TABLE,
    WEBPAGE_TABLE,
    FetchStatus,
    WebPage,
)
from sitemapcrawl.storage.store import Store

SCHEMA = REPO / "hbase-schema"


def test_init_creates_tables_like_the_shell_scripts(settings: Settings, tmp_path: Path) -> None:
    first = cli(settings, "init")
    assert first.exit_code == 0, first.output
    assert f"created table {settings.table_prefix}webpage" in first.stderr
    again = cli(settings, "init")
    assert again.exit_code == 0 and "nothing to do" in again.stderr

    shell_prefix = settings.table_prefix + "sh_"
    printed_prefix = settings.table_prefix + "ps_"
    try:
        # Each table's script as written, then `init --print-schema` (every packaged schema file in one
        # script, which sets its own prefix), all in one shell run (a JRuby start costs ~20 s of CPU):
        # every script ends with `exit`, which would end the run, so only the last one keeps it.
        scripts = [(SCHEMA / f"{table}.hbase").read_text(encoding="utf-8")
                   for table in (WEBPAGE_TABLE, HOST_TABLE, BATCH_TABLE, HISTORY_TABLE, BATCHROW_TABLE, DUE_TABLE)]
        printed = runner.invoke(app, ["--table-prefix", printed_prefix, "init", "--print-schema"])
        assert printed.exit_code == 0, printed.output
        joined = tmp_path / "tables.hbase"
        joined.write_text("\n".join(script.rstrip().removesuffix("exit") for script in [*scripts, printed.stdout])
                          + "\nexit\n", encoding="utf-8")
        run_shell_file(joined, table_prefix=shell_prefix)
        shell_settings = Settings(hbase=settings.hbase, table_prefix=shell_prefix)
        with Store(settings) as by_init, Store(shell_settings) as by_shell:
            for table in (WEBPAGE_TABLE, HOST_TABLE, BATCH_TABLE, HISTORY_TABLE, BATCHROW_TABLE, DUE_TABLE):
                assert by_shell.families(table) == by_init.families(table), table
        with Store(settings) as by_init, \
                Store(Settings(hbase=settings.hbase, table_prefix=printed_prefix)) as by_script:
            assert set(by_script.existing_tables()) == set(by_init.existing_tables())
            for table in by_init.existing_tables():
                assert by_script.families(table) == by_init.families(table), table
    finally:
        for prefix in (shell_prefix, printed_prefix):
            with Store(Settings(hbase=settings.hbase, table_prefix=prefix)) as store:
                store.drop_tables()


def test_readdb_one_row_prefix_and_stats(settings: Settings, store: Store) -> None:
    pages = [
        WebPage("http://example.com/", status=FetchStatus.FETCHED, http_code=200),
        WebPage("http://example.com/sitemap.xml", status=FetchStatus.UNFETCHED, is_sitemap=True),
        WebPage("http://example.com/blog/a", status=FetchStatus.UNFETCHED, in_sitemap=True, priority=0.7),
        WebPage("https://other.org:8443/x", status=FetchStatus.GONE, http_code=404),
    ]
    from sitemapcrawl.web.rowkeys import row_key

    store.write(WEBPAGE_TABLE, [(row_key(p.url).encode(), encode(p)) for p in pages])

    one = cli(settings, "readdb", "http://EXAMPLE.com/blog/a", "--json")
    assert one.exit_code == 0, one.output
    assert json.loads(one.stdout) == {
        "url": "http://example.com/blog/a", "key": "com.example:http/blog/a",
        "f:st": "unfetched", "s:in": True, "s:pr": 0.7,
    }
    readable = cli(settings, "readdb", "http://example.com/")
    assert "f:hc" in readable.stdout and "200" in readable.stdout

    missing = cli(settings, "readdb", "http://example.com/nope")
    assert missing.exit_code == 1
    assert missing.stderr.strip() == (
        "sitemapcrawl: error: no row for http://example.com/nope (key com.example:http/nope)")

    listed = cli(settings, "readdb", "--prefix", "http://example.com/", "--jsonl")
    assert [json.loads(line)["url"] for line in listed.stdout.splitlines()] == [
        "http://example.com/", "http://example.com/blog/a", "http://example.com/sitemap.xml"]
    assert "3 rows" in listed.stderr

    stats = cli(settings, "readdb", "--stats")
    assert stats.exit_code == 0, stats.output
    lines = dict(line.split("\t") for line in stats.stdout.splitlines())
    assert lines["rows"] == "4"
    assert lines["status unfetched"] == "2" and lines["status fetched"] == "1" and lines["status gone"] == "1"
    assert lines["sitemap rows"] == "1" and lines["found in sitemaps"] == "1" and lines["hosts"] == "2"


def test_table_missing_says_run_init(settings: Settings) -> None:
    result = cli(settings, "readdb", "--stats")
    assert result.exit_code == 2
    assert "run `sitemapcrawl init`" in result.stderr
    assert "Traceback" not in result.output


def test_unreachable_hbase_exits_2_with_one_line() -> None:
    result = runner.invoke(app, ["--hbase", "127.0.0.1:1", "--table-prefix", f"x{uuid.uuid4().hex}", "init"])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "127.0.0.1:1" in lines[0] and "transport buffered and protocol binary" in lines[0]
    # Only the local default address (127.0.0.1:9090) is told to start the local HBase (issue 12).
    assert "scripts/hbase-local start" not in lines[0]


def test_rows_written_are_readable_in_the_hbase_shell(settings: Settings, store: Store) -> None:
    from sitemapcrawl.web.rowkeys import row_key

    page = WebPage("http://shell.example/page", status=FetchStatus.FETCHED, http_code=200, priority=0.9)
    store.write(WEBPAGE_TABLE, [(row_key(page.url).encode(), encode(page))])
    table = settings.table_prefix + WEBPAGE_TABLE
    out = hbase_shell(
        f"get '{table}', 'example.shell:http/page'\n"
        f"scan '{table}', {{ROWPREFIXFILTER => 'example.shell:', COLUMNS => ['f:hc', 's:pr']}}\n"
        f"count '{table}'"
    )
    assert "column=f:hc" in out and "value=200" in out and "value=0.9" in out
    assert "f:st timestamp=" in out and "value=fetched" in out
    assert "1 row(s)" in out


def test_crawl_on_a_fresh_prefix_creates_its_tables_and_says_so(  # type: ignore[no-untyped-def]
        settings: Settings, make_testweb, tmp_path) -> None:
    from sitemapcrawl.testweb import demo_web

    web = make_testweb(demo_web())
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("".join(f"{s}\n" for s in web.truth.seeds()))
    result = runner.invoke(app, ["--hbase", settings.hbase, "--table-prefix", settings.table_prefix,
                                 "--user-agent", "sitemapcrawl-test/1.0", "crawl", str(seeds), "--mode",
                                 "sitemap-only", "--sitemaps-only-docs", "--rounds", "1", "--delay", "0"])
    assert result.exit_code == 0, result.output
    created = [line for line in result.stderr.splitlines() if line.startswith("crawl: created table")]
    assert sorted(created) == sorted(
        f"crawl: created table {settings.table_prefix}{table} (it did not exist)"
        for table in (HOST_TABLE, WEBPAGE_TABLE, BATCH_TABLE, HISTORY_TABLE, BATCHROW_TABLE, DUE_TABLE))
    assert "round 1: batch" in result.stderr and "run `sitemapcrawl init`" not in result.stderr
    assert "\r" not in result.stderr and "\x1b[" not in result.stderr  # not a terminal: plain lines only
    again = runner.invoke(app, ["--hbase", settings.hbase, "--table-prefix", settings.table_prefix,
                                "--user-agent", "sitemapcrawl-test/1.0", "crawl", "--rounds", "1", "--delay", "0"])
    assert again.exit_code == 0 and "created table" not in again.stderr


def test_on_a_terminal_the_live_line_runs_and_the_summary_stays(settings: Settings, store: Store) -> None:
    import os
    import pty
    import re
    import subprocess
    import sys

    controller, terminal = pty.openpty()
    seeds = "".join(f"http://127.0.0.{2 + n % 3}:8000/page{n}\n" for n in range(300)) + "not a url\n"
    env = {**os.environ, "COLUMNS": "100", "TERM": "xterm"}
    done = subprocess.run([sys.executable, "-m", "sitemapcrawl", "--hbase", settings.hbase, "--table-prefix",
                           settings.table_prefix, "inject", "-"], input=seeds.encode(), stdout=subprocess.PIPE,
                          stderr=terminal, env=env, timeout=120)
    os.close(terminal)
    chunks = []
    while True:
        try:
            chunk = os.read(controller, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(controller)
    shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", b"".join(chunks).decode("utf-8", "replace"))
    assert done.returncode == 0 and done.stdout == b""
    assert "seed lines" in shown and "301/?" in shown  # the live line, with the count
    assert re.search(r"line 301: [^\r\n]*not a url", shown)  # a message printed above it
    assert shown.rstrip().splitlines()[-1].startswith("inject: ")  # the summary stays, last
