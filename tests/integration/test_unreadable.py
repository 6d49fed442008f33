"""One decode policy (issue 11): every reader skips, logs and counts an unreadable row, never crashes on it.

Planted in the real tables: a row whose key is no URL key, a row with a cell
not in its column's format, a host row with a bad cell, and a politeness row
in the host table (which is no origin row at all).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

from typer.testing import CliRunner

from sitemapcrawl.cli.app import app
from sitemapcrawl.config import Settings
from sitemapcrawl.jobs.detect import detect
from sitemapcrawl.jobs.inject import inject
from sitemapcrawl.jobs.parse import parse_batch
from sitemapcrawl.jobs.readdb import collect_stats
from sitemapcrawl.model.cells import encode
from sitemapcrawl.model.marks import Mark
from sitemapcrawl.model.webpage import HOST_TABLE, WEBPAGE_TABLE, FetchStatus, HostRow, WebPage
from sitemapcrawl.modes import CrawlMode
from sitemapcrawl.report.text import build_report
from sitemapcrawl.storage.hosts import origins_in_table
from sitemapcrawl.storage.politeness import POLITENESS_KEYS_START
from sitemapcrawl.storage.store import Store
from sitemapcrawl.storage.tables import Unreadable, read_page, scan_pages
from sitemapcrawl.web.rowkeys import row_key
from sitemapcrawl.web.rules import UrlRules

runner = CliRunner()


def plant(store: Store) -> None:
    good = [
        WebPage("http://a.test/", status=FetchStatus.FETCHED, http_code=200, in_sitemap=True),
        WebPage("http://a.test/sitemap.xml", status=FetchStatus.FETCHED, is_sitemap=True, quality=0.5),
    ]
    rows = [(row_key(p.url).encode(), encode(p)) for p in good]
    rows.append((row_key("http://a.test/bad").encode(), {b"f:st": b"exploded", b"s:in": b"1"}))
    rows.append((b"not a row key", {b"f:st": b"unfetched"}))
    store.write(WEBPAGE_TABLE, rows)
    store.write(HOST_TABLE, [
        (b"test.a:http", encode(HostRow("http://a.test", crawl_delay=1.0))),
        (b"test.b:http", {b"r:cd": b"slow"}),
        (POLITENESS_KEYS_START + b"host:a.test", {b"n:sd": b"0.0"}),
    ])


def test_readers_count_unreadable_rows_and_keep_the_rest(settings: Settings, store: Store) -> None:
    plant(store)

    stats = collect_stats(store)
    assert (stats.rows, stats.unreadable.rows) == (4, 2)
    assert stats.by_status == {"fetched": 2} and stats.sitemap_rows == 1 and stats.found_in_sitemaps == 1

    report = build_report(store)
    assert report.totals.unreadable == 3  # two webpage rows, one host row
    assert sorted(report.hosts) == ["a.test"]  # the politeness row is no host
    assert report.hosts["a.test"].robots == ["http://a.test: not fetched, crawl delay 1s"]

    unreadable = Unreadable()
    assert [row.url for _, row in scan_pages(store, "test", unreadable, ["status"])] == [
        "http://a.test/", "http://a.test/sitemap.xml"]
    assert unreadable.rows == 2
    assert read_page(store, row_key("http://a.test/bad").encode(), ["status"], "test", unreadable) is None
    assert read_page(store, row_key("http://a.test/none").encode(), ["status"], "test", unreadable) is None
    assert unreadable.rows == 3


def test_the_commands_say_how_many_rows_they_skipped(settings: Settings, store: Store) -> None:
    plant(store)
    base = ["--hbase", settings.hbase, "--table-prefix", settings.table_prefix]

    stats = runner.invoke(app, [*base, "readdb", "--stats"])
    assert stats.exit_code == 0, stats.output
    lines = dict(line.split("\t") for line in stats.stdout.splitlines())
    assert lines["rows"] == "4" and lines["unreadable rows"] == "2"

    exported = runner.invoke(app, [*base, "export", "--format", "jsonl"])
    assert exported.exit_code == 0, exported.output
    assert [json.loads(line)["url"] for line in exported.stdout.splitlines()] == [
        "http://a.test/", "http://a.test/sitemap.xml"]
    assert "2 rows written of 4 read, 2 unreadable rows skipped" in exported.stderr

    report = runner.invoke(app, [*base, "report"])
    assert report.exit_code == 0, report.output
    assert "unreadable rows: 3" in report.stdout
    assert "Traceback" not in stats.output + exported.output + report.output


NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


def test_inject_takes_an_unreadable_stored_row_as_new_and_repairs_it(settings: Settings, store: Store) -> None:
    key = row_key("http://a.test/seed").encode()
    store.write(WEBPAGE_TABLE, [(key, {b"f:st": b"exploded", b"m:sc": b"lots"})])
    counts = inject(store, ["http://a.test/seed"], UrlRules.from_settings(settings), clock=lambda: NOW)
    assert (counts.injected, counts.updated, counts.unreadable.rows) == (1, 0, 1)
    assert "1 unreadable rows injected anew" in counts.summary()
    repaired = read_page(store, key, ["status", "next_fetch", "score"], "test", Unreadable())
    assert repaired is not None and repaired.status is FetchStatus.UNFETCHED and repaired.next_fetch == NOW


def test_parse_counts_a_body_that_does_not_decode(settings: Settings, store: Store) -> None:
    url = "http://a.test/page.html"
    page = WebPage(url, status=FetchStatus.FETCHED, http_code=200, fetch_time=NOW, fetch_mark="b1",
                   generate_mark="b1", content_type="text/html")
    store.write(WEBPAGE_TABLE, [(row_key(url).encode(), {**encode(page), b"c:raw": b"not gzip"})])
    counts = parse_batch(store, UrlRules.from_settings(settings), "b1", mode=CrawlMode.MIXED, clock=lambda: NOW)
    assert counts.rows == 1 and counts.unreadable.rows == 1 and counts.not_parsed == {"no body stored": 1}
    assert "1 unreadable rows skipped" in counts.summary()
    marked = read_page(store, row_key(url).encode(), [Mark.PARSE], "test", Unreadable())
    assert marked is not None and Mark.PARSE.done(marked, "b1")


def test_detect_steps_over_a_key_that_names_no_origin(settings: Settings, store: Store) -> None:
    store.write(WEBPAGE_TABLE, [(b"\xff\xfe:http/x", {b"f:st": b"unfetched"})])
    unreadable = Unreadable()
    assert list(origins_in_table(store, unreadable=unreadable)) == [] and unreadable.rows == 1
    counts = detect(store, None, UrlRules.from_settings(settings), clock=lambda: NOW)  # type: ignore[arg-type]  # no origin: no request
    assert counts.hosts == 0 and counts.unreadable.rows == 1
    assert counts.summary().endswith("; 1 unreadable rows skipped")
    base = ["--hbase", settings.hbase, "--table-prefix", settings.table_prefix, "--user-agent", "sitemapcrawl-test/1.0"]
    detected = runner.invoke(app, [*base, "detect"])
    assert detected.exit_code == 0 and "Traceback" not in detected.output, detected.output
    assert "skipping unreadable row" in detected.stderr
