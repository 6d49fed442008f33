"""generate through the ranked ready queue against the real HBase: it chooses what a full scan chooses
(many option sets, after reweighing, reruns, a kill and splits), and reads what it chooses, not what is due."""

from __future__ import annotations

import dataclasses
import logging
import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from counting_store import CountingStore, DyingStore, Killed

from sitemapcrawl.batch import registry
from sitemapcrawl.config import Settings
from sitemapcrawl.jobs.generate import GenerateCounts, GenerateOptions, generate, new_batch_id
from sitemapcrawl.model.cells import column_names, encode, equals_filter
from sitemapcrawl.model.due import BUILT_KEY, DueKind, Entry, due_range, parse_ready
from sitemapcrawl.model.splits import Split
from sitemapcrawl.model.webpage import DUE_TABLE, WEBPAGE_TABLE, DueRow, FetchStatus, WebPage
from sitemapcrawl.modes import CountMode, CrawlMode
from sitemapcrawl.storage import dueindex
from sitemapcrawl.storage.store import Store
from sitemapcrawl.web import rowkeys
from sitemapcrawl.web.rules import UrlRules

pytestmark = pytest.mark.tables  # every test needs tables; none tests making them

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
LATER = NOW + timedelta(days=30)


@pytest.fixture
def counting(settings: Settings) -> Iterator[CountingStore]:
    with CountingStore(settings) as opened:
        opened.create_tables()
        dueindex.mark_due_built(opened, NOW)
        yield opened


def key_of(url: str) -> bytes:
    return rowkeys.row_key(url).encode()


def put(store: Store, rows: list[WebPage], now: datetime = NOW) -> None:
    """Write rows as the jobs do at `now`: with their due index entries."""
    dueindex.write_pages(store, [(key_of(r.url), encode(r)) for r in rows], now=now)


def frontier(seed: int, hosts: int = 12, per_host: int = 30) -> list[WebPage]:
    """Due rows of every kind over `hosts` hosts with varied ranks: scores, priorities, weighted ones,
    depths, new-URL boosts, some held, some past their depth, a blacklisted-looking sitemap, some later."""
    pick = random.Random(seed)
    rows = []
    for h in range(hosts):
        host = f"http://127.0.{1 + h // 5}.{2 + h % 5}:8000" if h % 3 else f"https://www{h}.example.com"
        for i in range(per_host):
            kind = pick.random()
            fields: dict[str, object] = dict(
                status=FetchStatus.UNFETCHED, next_fetch=NOW - timedelta(minutes=pick.randint(0, 600)),
                score=pick.choice([None, 1.0, 0.5, 2.0, pick.random() * 3]), depth=pick.choice([None, 0, 1, 3, -1]),
                radius=0, priority=pick.choice([None, 0.1, 0.5, 0.9]),
                weighted_priority=pick.choice([None, None, 0.3, 0.8]))
            if kind < 0.1:
                fields.update(is_sitemap=True, in_sitemap=pick.random() < 0.5)
            elif kind < 0.6:
                fields.update(in_sitemap=True, new_in_sitemap=pick.choice([None, None, None, "b0"]))
            if pick.random() < 0.05:
                fields.update(next_fetch=LATER)
            if pick.random() < 0.04:
                fields.update(generate_mark="held-1", batch_id="held-1")
            path = "/old-sitemap.xml" if kind < 0.01 else f"/{i}/{pick.randint(0, 99)}.html"
            rows.append(WebPage(f"{host}{path}", **fields))  # type: ignore[arg-type]
    return list({row.url: row for row in rows}.values())


OPTION_SETS = [
    GenerateOptions(),
    GenerateOptions(top_n=1),
    GenerateOptions(top_n=17),
    GenerateOptions(top_n=40, max_per_host=3),
    GenerateOptions(max_per_host=1),
    GenerateOptions(max_per_host=5, count_mode=CountMode.DOMAIN),
    GenerateOptions(top_n=25, max_per_host=4, count_mode=CountMode.DOMAIN, fetch_splits=3),
    GenerateOptions(mode=CrawlMode.SITEMAP_ONLY, top_n=30),
    GenerateOptions(mode=CrawlMode.LINKS_ONLY, max_per_host=2),
    GenerateOptions(mode=CrawlMode.SITEMAP_ONLY, documents_only=True),
    GenerateOptions(split=Split(0, 3), top_n=12),
    GenerateOptions(split=Split(2, 3), max_per_host=2),
]


def chosen_of(store: Store, batch: str) -> set[bytes]:
    column = column_names(WebPage, ["generate_mark"])
    return {key for key, _ in store.scan(WEBPAGE_TABLE, columns=column,
                                         filter=equals_filter(WebPage, "generate_mark", batch))}


def run(store: Store, settings: Settings, options: GenerateOptions, now: datetime = NOW) -> tuple[
        GenerateCounts, set[bytes]]:
    """Generate, read what it chose, and release the batch so that the next run sees the same table."""
    if not options.split.whole:
        options = dataclasses.replace(options, batch_id=new_batch_id(now) + f"-{options.split.index}")
    counts = generate(store, UrlRules.from_settings(settings), options, clock=lambda: now)
    if counts.batch_id is None:
        return counts, set()
    chosen = chosen_of(store, counts.batch_id)
    registry.release(store, counts.batch_id, now)
    return counts, chosen


def agree(store: Store, settings: Settings, options_list: list[GenerateOptions], now: datetime = NOW) -> None:
    """Each option set chooses through the queue what it chooses by a full scan, in the same order."""
    for options in options_list:
        ranked, chosen = run(store, settings, options, now)
        scanned, by_scan = run(store, settings, dataclasses.replace(options, rescan=True), now)
        assert not ranked.rescanned and scanned.rescanned
        assert chosen == by_scan, options
        assert (ranked.selected, ranked.by_host, ranked.by_fetch_split) == (
            scanned.selected, scanned.by_host, scanned.by_fetch_split), options


def test_the_queue_chooses_what_a_full_scan_chooses(store: Store, settings: Settings) -> None:
    rows = frontier(seed=1)
    put(store, rows)
    dueindex.mark_due_built(store, NOW)
    assert any(parse_ready(key) for key, _ in store.scan(DUE_TABLE, stop=BUILT_KEY))
    agree(store, settings, OPTION_SETS)
    # the three splits of a topN choose together what three full-scan splits choose
    by_split = [run(store, settings, GenerateOptions(split=Split(k, 3), top_n=9))[1] for k in range(3)]
    by_scan = [run(store, settings, GenerateOptions(split=Split(k, 3), top_n=9, rescan=True))[1] for k in range(3)]
    assert by_split == by_scan and all(by_split)


def test_reweighing_rescoring_and_boosts_move_entries_with_their_rows(store: Store, settings: Settings) -> None:
    rows = frontier(seed=2)
    put(store, rows)
    dueindex.mark_due_built(store, NOW)
    pick = random.Random(2)
    changed = pick.sample(rows, 60)
    # as quality's reweighing, inject --overwrite-score, a re-parse's boost and a fetch write them
    put(store, [WebPage(r.url, weighted_priority=pick.random()) for r in changed[:20]])
    put(store, [WebPage(r.url, score=pick.random() * 4) for r in changed[20:35]])
    put(store, [WebPage(r.url, new_in_sitemap="b1") for r in changed[35:50]])
    put(store, [WebPage(r.url, depth=pick.randint(0, 4), next_fetch=NOW - timedelta(minutes=1))
                for r in changed[50:]])
    agree(store, settings, OPTION_SETS[:8])
    flagged = {r.url for r in changed[35:50]} | {r.url for r in rows if r.new_in_sitemap}
    moved = {r.url: r for r in changed[50:]}
    boosted = {key_of(r.url) for r in rows if r.url in flagged and r.generate_mark is None
               and r.next_fetch != LATER and (moved[r.url].depth if r.url in moved else r.depth or 0) >= 0}
    assert boosted
    _, first = run(store, settings, GenerateOptions(top_n=len(boosted)))
    assert first == boosted  # the new URLs a re-parse listed go first


def test_a_rerun_after_a_kill_in_promotion_chooses_the_same(settings: Settings) -> None:
    rows = frontier(seed=3)
    with Store(settings) as store:
        store.create_tables()
        put(store, rows, now=NOW - timedelta(days=1))  # written a day early: every due row waits
        dueindex.mark_due_built(store, NOW)
        assert not any(parse_ready(key) for key, _ in store.scan(DUE_TABLE, stop=BUILT_KEY))
    with DyingStore(settings, table=DUE_TABLE, column_prefix=b"d:e") as dying, pytest.raises(Killed):
        generate(dying, UrlRules.from_settings(settings), GenerateOptions(top_n=10), clock=lambda: NOW)
    with Store(settings) as store:
        agree(store, settings, OPTION_SETS[:6])
        for kind in DueKind:  # every waiting entry due by NOW was moved, none lost
            start, stop = due_range(kind, NOW)
            assert list(store.scan(DUE_TABLE, start=start, stop=stop)) == []
        later, _ = run(store, settings, GenerateOptions(), LATER)
        assert later.index.promoted > 0  # the rows due later came due, each moved once


def counted_generate(counting: CountingStore, settings: Settings, options: GenerateOptions) -> tuple[
        GenerateCounts, int]:
    """Generate, and the `due` entries and `webpage` rows it read itself."""
    counting.reset()
    counts = generate(counting, UrlRules.from_settings(settings), options, clock=lambda: NOW)
    return counts, counting.read(DUE_TABLE) + counting.read(WEBPAGE_TABLE)


def test_reads_follow_the_batch_not_what_is_due(counting: CountingStore, settings: Settings) -> None:
    hosts = [f"https://www.host{h}.example" for h in range(4)]
    rows = [WebPage(f"{host}/articles/{i}.html", status=FetchStatus.UNFETCHED, next_fetch=NOW, score=1.0,
                    in_sitemap=True, priority=(i % 9 + 1) / 10, depth=1, radius=0)
            for host in hosts for i in range(1500)]
    put(counting, rows)
    counts, read = counted_generate(counting, settings, GenerateOptions(top_n=20, mode=CrawlMode.SITEMAP_ONLY))
    assert counts.selected == 20
    assert read <= 3 * 20 + len(hosts) * 21, read  # the batch, and one read of each host's queue head
    assert counting.read(WEBPAGE_TABLE) <= 20 + len(hosts)
    assert counts.index.entries + counts.index.rows == read - counting.got[DUE_TABLE]  # as the summary says
    assert counting.whole_table_scans(WEBPAGE_TABLE) == []


def test_a_host_with_most_of_the_frontier_does_not_starve_the_others(counting: CountingStore,
                                                                    settings: Settings) -> None:
    big = [WebPage(f"https://www.big.example/a/{i}.html", status=FetchStatus.UNFETCHED, next_fetch=NOW,
                   in_sitemap=True, priority=0.9, depth=1, radius=0) for i in range(2700)]
    small = [WebPage(f"https://www.s{h}.example/p/{i}.html", status=FetchStatus.UNFETCHED, next_fetch=NOW,
                     in_sitemap=True, priority=0.1, depth=1, radius=0) for h in range(60) for i in range(5)]
    put(counting, [*big, *small])
    counts, read = counted_generate(counting, settings, GenerateOptions(max_per_host=3, mode=CrawlMode.SITEMAP_ONLY))
    assert counts.selected == 3 * 61 and len(counts.by_host) == 61
    assert read <= 3 * counts.selected, read  # not the big host's 2,700 entries
    chosen = chosen_of(counting, counts.batch_id or "")
    registry.release(counting, counts.batch_id or "", NOW)
    scanned, read_by_scan = counted_generate(counting, settings, GenerateOptions(
        max_per_host=3, mode=CrawlMode.SITEMAP_ONLY, rescan=True))
    assert chosen_of(counting, scanned.batch_id or "") == chosen and read_by_scan >= 3000


def test_a_table_of_the_waiting_only_layout_is_converted_once(store: Store, settings: Settings,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    rows = frontier(seed=4, hosts=5)
    # as the version before ready queues left a table: a waiting entry per scheduled row, a marker without a layout
    store.write(WEBPAGE_TABLE, [(key_of(r.url), encode(r)) for r in rows])
    old_entries = [Entry(DueKind.PAGE if not (r.is_sitemap or r.in_sitemap) else
                         DueKind.SITEMAP if r.is_sitemap else DueKind.LISTED,
                         r.next_fetch.strftime("%Y-%m-%dT%H:%M:%SZ").encode(), key_of(r.url))
                   for r in rows if r.next_fetch is not None]
    store.write(DUE_TABLE, [(entry.key(), encode(DueRow("", entry=True))) for entry in old_entries])
    store.write(DUE_TABLE, [(BUILT_KEY, encode(DueRow(BUILT_KEY.decode(), built=NOW - timedelta(days=1))))])
    with caplog.at_level(logging.INFO, logger="sitemapcrawl.jobs.generate"):
        first, chosen = run(store, settings, GenerateOptions(top_n=15))
        second, chosen_again = run(store, settings, GenerateOptions(top_n=15))
    assert sum("converted the due index" in message for message in caplog.messages) == 1
    assert not first.rescanned and first.index.promoted > 0 and second.index.promoted == 0
    marker = dueindex.due_index_marker(store)
    assert marker is not None and marker.layout == 2 and marker.built == NOW - timedelta(days=1)
    assert chosen == chosen_again and len(chosen) == 15
    _, by_scan = run(store, settings, GenerateOptions(top_n=15, rescan=True))
    assert chosen == by_scan
