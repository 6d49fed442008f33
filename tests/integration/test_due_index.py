"""The due index against the real HBase: generate through it selects what a full scan selects, reads
only what is due, drops stale entries, and an old table without an index is rescanned once."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from counting_store import CountingStore
from typer.testing import CliRunner

from sitemapcrawl.batch import registry
from sitemapcrawl.cli.app import app
from sitemapcrawl.config import Settings
from sitemapcrawl.jobs.crawl import CrawlOptions, crawl
from sitemapcrawl.jobs.generate import GenerateCounts, GenerateOptions, generate, new_batch_id
from sitemapcrawl.jobs.init import init_tables
from sitemapcrawl.model.cells import column_names, encode, equals_filter
from sitemapcrawl.model.due import BUILT_KEY, parse_entry, parse_ready
from sitemapcrawl.model.splits import Split
from sitemapcrawl.model.webpage import DUE_TABLE, WEBPAGE_TABLE, FetchStatus, WebPage
from sitemapcrawl.modes import CountMode, CrawlMode
from sitemapcrawl.storage import dueindex
from sitemapcrawl.storage.store import Store
from sitemapcrawl.testweb import demo_web
from sitemapcrawl.web import rowkeys
from sitemapcrawl.web.http import PoliteHttpClient
from sitemapcrawl.web.rules import UrlRules

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
PAST = NOW - timedelta(hours=1)
LATER = NOW + timedelta(days=30)


@pytest.fixture
def counting(settings: Settings) -> Iterator[CountingStore]:
    with CountingStore(settings) as opened:
        opened.create_tables()
        yield opened


def key_of(url: str) -> bytes:
    return rowkeys.row_key(url).encode()


def page(url: str, **fields: object) -> WebPage:
    base = WebPage(url, status=FetchStatus.UNFETCHED, next_fetch=PAST, score=1.0, depth=2, radius=0)
    return dataclasses.replace(base, **fields)  # type: ignore[arg-type]


def put(store: Store, *rows: WebPage) -> None:
    """Write rows as the jobs do at NOW: with their due index entries (ready for rows due by NOW)."""
    dueindex.write_pages(store, [(key_of(r.url), encode(r)) for r in rows], now=NOW)


def generated(store: Store, batch: str) -> set[bytes]:
    column = column_names(WebPage, ["generate_mark"])
    return {key for key, _ in store.scan(WEBPAGE_TABLE, columns=column,
                                         filter=equals_filter(WebPage, "generate_mark", batch))}


def entries(store: Store) -> set[bytes]:
    """The due index's entries, each as the key of a row holding it alone (a waiting group holds several)."""
    waiting = {entry.key() for key, cells in store.scan(DUE_TABLE) for entry, _ in dueindex.held_entries(key, cells)}
    return waiting | {key for key, _ in store.scan(DUE_TABLE) if parse_ready(key) is not None}


def indexed_rows(store: Store) -> set[bytes]:
    """The row keys the due index's entries name."""
    named = (parse_entry(key) or parse_ready(key) for key in entries(store))
    return {entry.row_key for entry in named if entry is not None}


def built(store: Store) -> datetime | None:
    marker = dueindex.due_index_marker(store)
    return marker.built if marker is not None else None


def run(store: Store, settings: Settings, options: GenerateOptions, now: datetime) -> tuple[GenerateCounts, set[bytes]]:
    """Generate, read what it selected, and release the batch so the next run sees the same table.

    A CountingStore is left with the counts of what generate itself read.
    """
    if not options.split.whole and options.batch_id is None:  # a split adds to a batch named by its caller
        options = dataclasses.replace(options, batch_id=new_batch_id(now))
    if isinstance(store, CountingStore):
        store.reset()
    counts = generate(store, UrlRules.from_settings(settings), options, clock=lambda: now)
    if counts.batch_id is None:
        return counts, set()
    counted = (dict(store.scanned), dict(store.got), list(store.scans)) if isinstance(store, CountingStore) else None
    chosen = generated(store, counts.batch_id)
    registry.release(store, counts.batch_id, now)
    if isinstance(store, CountingStore) and counted is not None:
        store.reset()
        store.scanned.update(counted[0])
        store.got.update(counted[1])
        store.scans.extend(counted[2])
    return counts, chosen


def test_generate_through_the_index_selects_what_a_full_scan_selects(  # type: ignore[no-untyped-def]
        store: Store, settings: Settings, make_testweb) -> None:
    web = make_testweb(demo_web())
    settings = dataclasses.replace(settings, user_agent="sitemapcrawl-test/1.0", delay=0.0, max_connections=4)
    client = PoliteHttpClient.from_settings(settings)
    try:  # inject, detect, then two rounds of generate, fetch, parse and updatedb: every writer of f:nft ran
        crawl(store, client, UrlRules.from_settings(settings), [s + "\n" for s in web.truth.seeds()],
              CrawlOptions(mode=CrawlMode.MIXED, rounds=2))
    finally:
        client.close()
    assert built(store) is not None  # the first round's generate built it once
    later = datetime.now(UTC) + timedelta(days=800)  # every row with a next fetch is due
    cases = [
        GenerateOptions(),
        GenerateOptions(mode=CrawlMode.SITEMAP_ONLY),
        GenerateOptions(mode=CrawlMode.LINKS_ONLY, max_per_host=3),
        GenerateOptions(mode=CrawlMode.SITEMAP_ONLY, documents_only=True),
        GenerateOptions(top_n=7, fetch_splits=3),
        GenerateOptions(max_per_host=2, count_mode=CountMode.DOMAIN, fetch_splits=2),
        GenerateOptions(split=Split(0, 2)),
        GenerateOptions(split=Split(1, 2), top_n=5),
    ]
    by_index = [run(store, settings, options, later) for options in cases]
    assert not any(counts.rescanned for counts, _ in by_index)
    by_scan = [run(store, settings, dataclasses.replace(options, rescan=True), later) for options in cases]
    assert by_index[0][1], "the crawl left nothing due"
    for options, (index, chosen), (scan, scanned) in zip(cases, by_index, by_scan, strict=True):
        assert scan.rescanned
        assert chosen == scanned, options
        assert (index.selected, index.by_fetch_split, index.by_host) == (scan.selected, scan.by_fetch_split,
                                                                       scan.by_host), options
    # mixed mode reads every kind: the same due rows and the same reasons to skip some
    assert (by_index[0][0].due, by_index[0][0].skipped) == (by_scan[0][0].due, by_scan[0][0].skipped)
    # the modes that skip kinds do not read them
    assert by_index[1][0].due < by_scan[1][0].due and by_index[3][0].due < by_index[1][0].due
    # group members left behind by rows that moved on are dropped by the first generate that meets them
    assert all(counts.index.stale == 0 for counts, _ in by_index[1:])


@pytest.mark.tables
def test_reads_follow_the_due_rows_not_the_table(counting: CountingStore, settings: Settings) -> None:
    due = [page(f"http://127.0.0.{h}:8000/{i}.html") for h in (2, 3) for i in range(20)]
    due += [page(f"http://127.0.0.4:8000/sitemap{i}.xml", is_sitemap=True) for i in range(5)]
    due += [page(f"http://127.0.0.4:8000/listed{i}.html", in_sitemap=True) for i in range(5)]
    put(counting, *due)
    dueindex.mark_due_built(counting, NOW)  # every row was written with its entry
    first, chosen = run(counting, settings, GenerateOptions(), NOW)
    assert first.due == first.selected == 50 and len(chosen) == 50
    small = counting.read(WEBPAGE_TABLE)
    assert small == 50  # one multi-get of each due row, nothing else
    assert counting.whole_table_scans(WEBPAGE_TABLE) == []

    put(counting, *(page(f"http://127.0.0.{5 + i % 7}:8000/later/{i}.html", next_fetch=LATER)
                    for i in range(5000)))
    second, chosen_again = run(counting, settings, GenerateOptions(), NOW)
    assert second.selected == 50 and chosen_again == chosen
    assert counting.read(WEBPAGE_TABLE) == small  # flat: 5,000 rows not due are never read
    # the 50 ready entries, one read each (the 5,000 waiting ones are later than NOW: not read)
    assert counting.scanned[DUE_TABLE] == 50 and counting.whole_table_scans(WEBPAGE_TABLE) == []

    docs, sitemaps = run(counting, settings, GenerateOptions(mode=CrawlMode.SITEMAP_ONLY, documents_only=True), NOW)
    assert docs.selected == 5 and counting.read(WEBPAGE_TABLE) == 5  # an inventory round reads its sitemaps only
    assert sitemaps == {key_of(f"http://127.0.0.4:8000/sitemap{i}.xml") for i in range(5)}

    rescan, _ = run(counting, settings, GenerateOptions(rescan=True), NOW)
    assert rescan.selected == 50 and counting.read(WEBPAGE_TABLE) >= 5050  # the repair reads every scheduled row


def test_stale_entries_are_dropped_and_a_row_without_next_fetch_is_never_generated(store: Store,
                                                                                   settings: Settings) -> None:
    gone, moved, deleted, kept = (f"http://127.0.0.2:8000/{name}.html" for name in ("gone", "moved", "deleted", "kept"))
    put(store, page(gone), page(moved), page(deleted), page(kept))
    dueindex.mark_due_built(store, NOW)
    assert len(entries(store)) == 4
    # as updatedb does for a gone row: its next fetch time is deleted, its entry left behind
    store.delete_many(WEBPAGE_TABLE, [(key_of(gone), column_names(WebPage, ["next_fetch"]))])
    # a writer that did not know the old time (the row moved on), and a row deleted whole
    store.write(WEBPAGE_TABLE, [(key_of(moved), encode(WebPage(moved, next_fetch=LATER)))])
    store.delete(WEBPAGE_TABLE, key_of(deleted))

    counts, chosen = run(store, settings, GenerateOptions(), NOW)
    assert chosen == {key_of(kept)} and counts.due == 1 and counts.index.stale == 2
    # the moved row's entry is its row's but early: it waits again for the row's time
    assert counts.index.demoted == 1 and indexed_rows(store) == {key_of(kept), key_of(moved)}
    again, _ = run(store, settings, GenerateOptions(), NOW)
    assert again.index.stale == 0 and again.selected == 1
    # the gone row stays out however it is looked for
    rescan, chosen = run(store, settings, GenerateOptions(rescan=True), NOW + timedelta(days=60))
    assert key_of(gone) not in chosen and key_of(deleted) not in chosen
    assert chosen == {key_of(kept), key_of(moved)}


def test_a_table_without_an_index_is_rescanned_once(store: Store, settings: Settings,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    # rows as an older version wrote them: no due entries, no marker
    old = [page(f"http://127.0.0.2:8000/{i}.html") for i in range(6)]
    store.write(WEBPAGE_TABLE, [(key_of(r.url), encode(r)) for r in
                                [*old, page("http://127.0.0.2:8000/later.html", next_fetch=LATER),
                                 WebPage("http://127.0.0.2:8000/never.html", status=FetchStatus.GONE)]])
    assert entries(store) == set() and built(store) is None
    with caplog.at_level(logging.INFO, logger="sitemapcrawl.jobs.generate"):
        first, chosen = run(store, settings, GenerateOptions(), NOW)
        second, chosen_again = run(store, settings, GenerateOptions(), NOW)
    assert first.rescanned and not second.rescanned
    assert chosen == chosen_again == {key_of(r.url) for r in old}
    assert sum("never built" in message for message in caplog.messages) == 1
    assert built(store) == NOW
    # every scheduled row got its entry, the future one too; the row without a next fetch none
    assert indexed_rows(store) == {key_of(r.url) for r in old} | {key_of("http://127.0.0.2:8000/later.html")}
    later, chosen = run(store, settings, GenerateOptions(), LATER)
    assert not later.rescanned and key_of("http://127.0.0.2:8000/later.html") in chosen


def test_generate_rescan_on_the_command_line(store: Store, settings: Settings) -> None:
    put(store, page("http://127.0.0.2:8000/a.html"))
    result = CliRunner().invoke(app, ["--hbase", settings.hbase, "--table-prefix", settings.table_prefix,
                                      "generate", "--rescan"])
    assert result.exit_code == 0, result.output
    assert "selected 1" in result.stderr and "due index rebuilt by a full scan" in result.stderr
    assert built(store) is not None


def test_init_of_a_new_table_starts_with_the_index_built(settings: Settings) -> None:
    with Store(settings) as store:
        init_tables(store)
        assert built(store) is not None
        first = generate(store, UrlRules.from_settings(settings), GenerateOptions(), clock=lambda: NOW)
        assert not first.rescanned


@pytest.mark.tables
def test_grouped_entries_are_read_once_each_and_a_rescan_leaves_no_duplicate(counting: CountingStore,
                                                                            settings: Settings) -> None:
    rows = [page(f"http://127.0.0.2:8000/{i:03d}.html", next_fetch=LATER) for i in range(150)]
    put(counting, *rows)  # written together, due later: one kind, one time, rows of up to DUE_GROUP entries
    dueindex.mark_due_built(counting, NOW)
    index_rows = list(counting.scan(DUE_TABLE, stop=BUILT_KEY))
    group = dueindex.DUE_GROUP
    assert [len(cells) for _, cells in index_rows] == [group, group, 150 - 2 * group]
    moved = rows[1]  # a group member (the least key names the row): it moves on before its time comes
    put(counting, dataclasses.replace(moved, next_fetch=LATER + timedelta(days=1)))

    first, chosen = run(counting, settings, GenerateOptions(), LATER)
    assert first.index.promoted == 149 and first.index.stale == 1  # each group read once; the member dropped
    assert first.selected == 149 and key_of(moved.url) not in chosen
    second, chosen_again = run(counting, settings, GenerateOptions(), LATER)
    assert second.index.promoted == second.index.stale == 0 and chosen_again == chosen

    # the repair writes every row's own entry; the sweep drops the duplicates those make
    rescan, chosen = run(counting, settings, GenerateOptions(rescan=True), LATER)
    assert rescan.selected == 149 and key_of(moved.url) not in chosen
    after, chosen_after = run(counting, settings, GenerateOptions(), LATER)
    assert after.due == after.selected == 149 and after.index.stale == 0 and chosen_after == chosen
    assert all(list(cells) == [b"d:e"] for _, cells in counting.scan(DUE_TABLE, stop=BUILT_KEY))
    assert len(entries(counting)) == 150
    later, chosen = run(counting, settings, GenerateOptions(), LATER + timedelta(days=1))
    assert later.selected == 150 and key_of(moved.url) in chosen
