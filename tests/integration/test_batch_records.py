"""Batch-scoped reads against the real HBase: a round reads what its batch holds, not the table.

generate records a batch's members in `batchrow`, parse and updatedb the
rows they touch; fetch, parse and updatedb read those records and multi-get
their rows (`sitemapcrawl.storage.tables`). A `CountingStore` (the real store,
counting) bounds what each phase reads; sitemap quality (a whole-table step
of its own, issue 11's incremental quality) is turned off here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest
from counting_store import CountingStore
from fetch_helpers import AGENT, PAST, add_rows, due, run_fetch

from sitemapcrawl.batch import registry
from sitemapcrawl.config import Settings
from sitemapcrawl.jobs.generate import GenerateOptions, generate
from sitemapcrawl.jobs.parse import parse_batch
from sitemapcrawl.jobs.updatedb import updatedb
from sitemapcrawl.model.cells import column_names, decode, encode
from sitemapcrawl.model.splits import Split
from sitemapcrawl.model.webpage import (
    BATCH_TABLE,
    BATCHROW_TABLE,
    WEBPAGE_TABLE,
    BatchRecord,
    BatchRow,
    FetchStatus,
    SitemapSource,
    WebPage,
)
from sitemapcrawl.modes import CrawlMode
from sitemapcrawl.storage import batchrecords
from sitemapcrawl.storage.store import Cells, Store
from sitemapcrawl.testweb import TestWebServer, Web, bulk_web
from sitemapcrawl.web import rowkeys
from sitemapcrawl.web.rules import UrlRules

pytestmark = pytest.mark.tables  # every test needs tables; none tests making them

FAR = datetime.now(UTC).replace(microsecond=0) + timedelta(days=300)


def crawl_settings(settings: Settings) -> Settings:
    return dataclasses.replace(settings, user_agent=AGENT, delay=0, http_read_timeout=2.0, sitemap_quality=False,
                               store_content=True, crawl_mode=CrawlMode.MIXED)


def add_unrelated(store: Store, n: int, start: int = 0) -> None:
    """`n` fetched rows on many hosts, not due for months: what a big table holds besides the batch."""
    store.write(WEBPAGE_TABLE, (
        (rowkeys.row_key(url).encode(), encode(WebPage(url, status=FetchStatus.FETCHED, fetch_time=PAST,
                                                    next_fetch=FAR, fetch_mark="old", generate_mark="old",
                                                    update_mark="old", discover_mark="old", score=1.0)))
        for url in (f"http://h{i % 97}.unrelated.example/page/{i}" for i in range(start, start + n))))


def seed(store: Store, web: TestWebServer) -> None:
    """Each site's home page and its sitemap, due now."""
    rows = []
    for home in web.truth.seeds():
        rows.append(due(home))
        rows.append(due(home.rstrip("/") + "/sitemap.xml", is_sitemap=True, sitemap_source=SitemapSource.SEED))
    add_rows(store, *rows)


def seeded_batch(store: Store, rules: UrlRules, web: TestWebServer, unrelated: int = 0) -> str:
    """New tables holding `unrelated` rows (`add_unrelated`) and the test web's seeds; the id of the batch
    generate makes of the seeds."""
    store.create_tables()
    add_unrelated(store, unrelated)
    seed(store, web)
    batch_id = generate(store, rules, GenerateOptions()).batch_id
    assert batch_id is not None
    return batch_id


def records(store: Store, batch_id: str, kind: bytes | None = None) -> list[bytes]:
    prefix = f"{batch_id}|".encode() + (kind + b"|" if kind else b"")
    return [key for key, _ in store.scan(BATCHROW_TABLE, prefix=prefix)]


def touched_keys(store: Store, batch_id: str) -> list[bytes]:
    """The `webpage` keys the batch recorded as touched: its touched records and its sitemaps' listed records."""
    keys = [batchrecords.page_key(key) for key in records(store, batch_id, batchrecords.TOUCHED)]
    for _key, cells in store.scan(BATCHROW_TABLE, prefix=f"{batch_id}|".encode() + batchrecords.LISTED + b"|"):
        record = decode(BatchRecord, "", cells)
        keys += [key.encode() for key in (*(record.listed_keys or ()), *(record.listed or {}))]
    return sorted(keys)


def rows_with(store: Store, column: bytes) -> set[bytes]:
    """The `webpage` keys of the rows holding `column`."""
    return {key for key, cells in store.scan(WEBPAGE_TABLE, columns=[column]) if column in cells}


def snapshot(store: Store) -> dict[bytes, Cells]:
    return dict(store.scan(WEBPAGE_TABLE))


@dataclasses.dataclass
class RoundReads:
    """What one round's fetch, parse and updatedb read of `webpage`, and its size."""

    batch_id: str
    members: int
    touched: int
    fetch: int
    parse: int
    update: int
    whole_scans: int


def one_round(store: CountingStore, settings: Settings) -> RoundReads:
    """generate, fetch, parse, updatedb; the webpage rows each of the last three read."""
    rules = UrlRules.from_settings(settings)
    made = generate(store, rules, GenerateOptions())
    assert made.batch_id is not None and made.selected > 0
    batch_id = made.batch_id
    members = len(records(store, batch_id, batchrecords.MEMBER))
    assert members == made.selected
    store.reset()
    fetched = run_fetch(store, settings, batch_id)
    assert fetched.done == made.selected
    fetch_reads, whole = store.read(WEBPAGE_TABLE), len(store.whole_table_scans(WEBPAGE_TABLE))
    store.reset()
    parsed = parse_batch(store, rules, batch_id)
    assert parsed.rows == made.selected
    parse_reads, whole = store.read(WEBPAGE_TABLE), whole + len(store.whole_table_scans(WEBPAGE_TABLE))
    store.reset()
    updated = updatedb(store, rules, batch_id)
    assert updated.scheduled == made.selected
    update_reads, whole = store.read(WEBPAGE_TABLE), whole + len(store.whole_table_scans(WEBPAGE_TABLE))
    return RoundReads(batch_id, members, updated.merged, fetch_reads, parse_reads, update_reads, whole)


WEB = bulk_web(hosts=3, pages_per_host=6)  # served by the shared `web` fixture


@pytest.fixture
def other_store(settings: Settings) -> Iterator[CountingStore]:
    """A second, empty set of tables (its own prefix), dropped afterwards."""
    other = dataclasses.replace(settings, table_prefix=settings.table_prefix + "x_")
    with CountingStore(other) as opened:
        opened.create_tables()
        try:
            yield opened
        finally:
            opened.drop_tables()


def run_two_rounds(store: CountingStore, settings: Settings, web: TestWebServer) -> list[RoundReads]:
    seed(store, web)
    return [one_round(store, settings), one_round(store, settings)]


def test_a_round_reads_what_its_batch_holds_not_the_table(
        settings: Settings, web: TestWebServer, other_store: CountingStore) -> None:
    settings = crawl_settings(settings)
    with CountingStore(settings) as store:
        store.create_tables()
        add_unrelated(store, 5_000)
        small = run_two_rounds(store, settings, web)
    # The same crawl on a table with twice the unrelated rows reads exactly as much.
    big_settings = crawl_settings(dataclasses.replace(settings, table_prefix=settings.table_prefix + "x_"))
    add_unrelated(other_store, 10_000)
    big = run_two_rounds(other_store, big_settings, web)

    for reads in small + big:
        assert reads.whole_scans == 0, reads
        work = reads.members + reads.touched
        # A member is read once by fetch, twice by parse (its row, then its body), once per updatedb
        # pass over members (spread, schedule); a touched row once (the merge). updatedb's counting
        # (scoring.count_step.count_batch: quality evidence and row counts) reads each of them once more,
        # and the rows of the sitemaps they name a few times (the bulk web: one sitemap per host).
        assert reads.fetch <= reads.members, reads
        assert reads.parse <= 2 * reads.members, reads
        assert reads.update <= 3 * reads.members + 2 * reads.touched + 4 * 3, reads
        assert reads.fetch + reads.parse + reads.update <= 6 * work, reads
    assert small[1].members == 18 and small[1].touched > 0  # the listed pages, and the pages they link to
    for one, other in zip(small, big, strict=True):
        assert (one.members, one.touched, one.fetch, one.parse, one.update) == \
               (other.members, other.touched, other.fetch, other.parse, other.update)
        # updatedb finished the batch: its records are gone.
        assert records(other_store, other.batch_id) == []


def test_each_phase_rerun_changes_nothing(settings: Settings, web: TestWebServer) -> None:
    settings = crawl_settings(settings)
    rules = UrlRules.from_settings(settings)
    with CountingStore(settings) as store:
        batch_id = seeded_batch(store, rules, web, unrelated=200)
        run_fetch(store, settings, batch_id)
        fetched = snapshot(store)
        again = run_fetch(store, settings, batch_id)
        assert again.total == 0 and again.already_done == 6
        assert snapshot(store) == fetched
        parse_batch(store, rules, batch_id)
        parsed = snapshot(store)
        touched, recorded = touched_keys(store, batch_id), records(store, batch_id)
        assert len(touched) == 18  # every entry of the three sitemaps
        assert len(records(store, batch_id, batchrecords.LISTED)) == 3  # in one listed record per sitemap
        assert parse_batch(store, rules, batch_id).already_parsed == 6
        assert snapshot(store) == parsed and records(store, batch_id) == recorded
        first = updatedb(store, rules, batch_id)
        assert first.records_dropped > 0 and records(store, batch_id) == []
        updated = snapshot(store)
        second = updatedb(store, rules, batch_id)
        assert (second.spread_rows, second.merged, second.scheduled) == (0, 0, 0)
        assert snapshot(store) == updated


def test_listed_records_are_one_cell_each_and_records_of_older_versions_are_still_merged(
        settings: Settings, web: TestWebServer, caplog: pytest.LogCaptureFixture) -> None:
    """A listed record holds its entries' keys in one `r:lk` cell. A batch parsed by a version before it (one
    `r:k.<key>` cell per entry) is merged all the same: every entry row, once; a record that does not decode
    is logged and skipped."""
    settings = crawl_settings(settings)
    rules = UrlRules.from_settings(settings)
    depth_column = column_names(WebPage, ["depth"])[0]  # every merge writes it (k:mrg only some)
    keys_column = column_names(BatchRecord, ["listed_keys"])[0]
    with CountingStore(settings) as store:
        batch_id = seeded_batch(store, rules, web)
        listed_prefix = f"{batch_id}|".encode() + batchrecords.LISTED + b"|"
        run_fetch(store, settings, batch_id)
        parse_batch(store, rules, batch_id)
        listed = list(store.scan(BATCHROW_TABLE, prefix=listed_prefix))
        assert listed and all(list(cells) == [keys_column] for _, cells in listed)
        touched = set(touched_keys(store, batch_id))
        # Into the older form: the per-entry cells first, then the one cell dropped. (Deleting the whole
        # record before writing it again would lose the write whenever both land in the same millisecond.)
        store.write(BATCHROW_TABLE, [(key, encode(BatchRecord("", listed={
            name: "" for name in decode(BatchRecord, "", cells).listed_keys or ()}))) for key, cells in listed])
        store.delete_many(BATCHROW_TABLE, [(key, [keys_column]) for key, _ in listed])
        assert all(keys_column not in cells for _, cells in store.scan(BATCHROW_TABLE, prefix=listed_prefix))
        assert set(touched_keys(store, batch_id)) == touched
        junk = batchrecords.listed_record_key(batch_id, 0, 99, b"junk")
        store.write(BATCHROW_TABLE, [(junk, {keys_column: b"\xff\xfe"})])
        unmerged = touched - rows_with(store, depth_column)
        counts = updatedb(store, rules, batch_id)
        assert "listed record" in caplog.text and "junk" in caplog.text
        assert counts.merged == len(touched) >= 18 and counts.already_merged == 0
        assert len(unmerged) >= 18 and touched <= rows_with(store, depth_column)


def test_a_parse_killed_half_way_reruns_from_the_records(settings: Settings, web: TestWebServer) -> None:
    """Half of the batch's rows parsed (as if the process died): the rerun parses the rest, nothing twice."""
    settings = crawl_settings(settings)
    rules = UrlRules.from_settings(settings)
    with CountingStore(settings) as store:
        batch_id = seeded_batch(store, rules, web)
        run_fetch(store, settings, batch_id)
        members = [batchrecords.page_key(key) for key in records(store, batch_id, batchrecords.MEMBER)]
        done_already = members[:3]
        store.write(WEBPAGE_TABLE, ((key, encode(WebPage("", parse_mark=batch_id))) for key in done_already))
        rerun = parse_batch(store, rules, batch_id)
        assert (rerun.rows, rerun.already_parsed) == (6, 3)
        assert updatedb(store, rules, batch_id).scheduled == 6


def test_a_split_reads_only_its_range(settings: Settings, make_testweb: Callable[[Web], TestWebServer]) -> None:
    settings = crawl_settings(settings)
    rules = UrlRules.from_settings(settings)
    web = make_testweb(bulk_web(hosts=8, pages_per_host=2))
    halves = [Split(0, 2), Split(1, 2)]
    with CountingStore(settings) as store:
        batch_id = seeded_batch(store, rules, web, unrelated=300)
        run_fetch(store, settings, batch_id)
        members = [batchrecords.page_key(key) for key in records(store, batch_id, batchrecords.MEMBER)]
        rows = []
        for half in halves:
            store.reset()
            parsed = parse_batch(store, rules, batch_id, split=half)
            mine = [key for key in members if half.holds(key)]
            assert parsed.rows == len(mine) > 0
            assert all(half.holds(key) for key in store.keys_got[WEBPAGE_TABLE])
            assert not store.whole_table_scans(WEBPAGE_TABLE)
            rows.append(parsed.rows)
        assert sum(rows) == 16
        touched = touched_keys(store, batch_id)
        # updatedb's splits run side by side: each merges only after every split spread its links.
        stores = [CountingStore(settings), CountingStore(settings)]
        with ThreadPoolExecutor(2) as pool:
            first, second = pool.map(lambda half, on: updatedb(on, rules, batch_id, split=half), halves, stores)
        for half, on, counts in zip(halves, stores, (first, second), strict=True):
            assert all(half.holds(key) for key in on.keys_got[WEBPAGE_TABLE])
            assert counts.merged == sum(1 for key in touched if half.holds(key))
            on.close()
        assert first.scheduled + second.scheduled == 16
        assert records(store, batch_id) == []  # each half dropped its own records


def test_a_batch_without_records_is_read_by_a_table_scan(settings: Settings, web: TestWebServer) -> None:
    """A batch generated before the records (no `b:rec`, no `batchrow` rows): every phase still does it."""
    settings = crawl_settings(settings)
    rules = UrlRules.from_settings(settings)
    with CountingStore(settings) as store:
        batch_id = seeded_batch(store, rules, web, unrelated=100)
        store.delete(BATCH_TABLE, batch_id.encode(), column_names(BatchRow, ["records"]))
        batchrecords.drop_records(store, batch_id)
        assert not batchrecords.has_records(store, batch_id)
        store.reset()
        assert run_fetch(store, settings, batch_id).done == 6
        assert parse_batch(store, rules, batch_id).sitemaps == 3
        counts = updatedb(store, rules, batch_id)
        assert (counts.scheduled, counts.merged) == (6, 18)  # the sitemaps' entries (the home pages link to one)
        assert store.whole_table_scans(WEBPAGE_TABLE)  # the fallback: filtered scans of webpage
        assert records(store, batch_id) == []  # what parse and updatedb recorded went with the batch


def test_release_drops_the_records(settings: Settings, store: Store) -> None:
    rules = UrlRules.from_settings(settings)
    add_rows(store, *(due(f"http://127.0.0.2:8000/r{i}") for i in range(5)))
    batch_id = generate(store, rules, GenerateOptions()).batch_id
    assert batch_id is not None and len(records(store, batch_id, batchrecords.MEMBER)) == 5
    assert registry.release(store, batch_id, datetime.now(UTC)) == 5
    assert records(store, batch_id) == []


@pytest.mark.parametrize("batch_size", [4, 1000])
def test_a_host_with_many_entries_has_its_listed_rows_read_by_a_scan_of_its_range(
        settings: Settings, web: TestWebServer, monkeypatch: pytest.MonkeyPatch, batch_size: int) -> None:
    """Every touched row merged once, when the hosts' scans read all their listed rows (chunks of 1,000) and
    when one stops early (chunks of 4: its host holds rows no sitemap listed) and leaves the rest to the
    sitemaps' records."""
    monkeypatch.setattr(batchrecords, "HOST_SCAN_MIN", 1)  # the bulk web's hosts list 6 pages each
    settings = dataclasses.replace(crawl_settings(settings), hbase_batch_size=batch_size)
    rules = UrlRules.from_settings(settings)
    depth_column = column_names(WebPage, ["depth"])[0]  # every merge writes it (k:mrg only some)
    with CountingStore(settings) as store:
        batch_id = seeded_batch(store, rules, web)
        home = web.truth.seeds()[0].rstrip("/")
        store.write(WEBPAGE_TABLE, (
            (rowkeys.row_key(url).encode(), encode(WebPage(url, status=FetchStatus.FETCHED, fetch_time=PAST,
                                                        next_fetch=FAR, score=1.0)))
            for url in (f"{home}/aa-unlisted/{i}" for i in range(40))))  # before the listed pages
        run_fetch(store, settings, batch_id)
        parse_batch(store, rules, batch_id)
        touched = set(touched_keys(store, batch_id))
        # The entries carry the batch in their il: cell, no k:dsc (a batch with records).
        discover = column_names(WebPage, ["discover_mark"])[0]
        assert not [key for key, cells in store.scan(WEBPAGE_TABLE, columns=[discover]) if cells]
        before = rows_with(store, depth_column)
        store.reset()
        counts = updatedb(store, rules, batch_id)
        assert counts.merged == len(touched) >= 18 and counts.already_merged == 0
        assert not store.whole_table_scans(WEBPAGE_TABLE)
        assert rows_with(store, depth_column) - before == touched - before and len(touched - before) >= 18
