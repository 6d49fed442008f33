"""The history table at the size of a full sitemap: cells under the limit, changes read back, pruning."""

from __future__ import annotations

import dataclasses
import random
import string
from datetime import UTC, datetime, timedelta

import pytest

from sitemapcrawl.config import Settings
from sitemapcrawl.model.cells import decode
from sitemapcrawl.model.changes import CHUNK_BYTES, CHUNK_LINES, PACKED, ChangeKind, Hints, unpack
from sitemapcrawl.model.webpage import HISTORY_TABLE, HistoryRow
from sitemapcrawl.storage.history import PART_MARK, changes_of, histories, part_key, record_parse, snapshot_urls
from sitemapcrawl.storage.store import Store
from sitemapcrawl.web import rowkeys

pytestmark = pytest.mark.tables  # every test needs tables; none tests making them

SITEMAP = "http://127.0.0.2:8000/sitemap.xml"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def entries(start: int, n: int, priority: str = "0.5") -> dict[str, Hints]:
    path = "/a-rather-long-path/with/several/segments/to-look-like-a-real-news-site/article-"
    return {f"http://127.0.0.2:8000{path}{i:06d}.html": Hints("2025-12-01T00:00:00Z", "daily", priority)
            for i in range(start, start + n)}


def test_a_50000_url_sitemap_replaced_half_way_keeps_cells_small_and_every_change(store: Store) -> None:
    key = rowkeys.row_key(SITEMAP).encode()
    first = entries(0, 50_000)
    assert record_parse(store, key, SITEMAP, first, "b1", T0, keep=2).baseline

    cells = store.row(HISTORY_TABLE, key)
    assert cells is not None
    snapshot = decode(HistoryRow, key.decode(), cells)
    assert snapshot.snapshot_entries == 50_000 and snapshot.snapshot_chunks == len(snapshot.snapshot or {}) >= 10
    assert max(len(v) for v in cells.values()) <= CHUNK_BYTES
    assert all(len(unpack(text).split("\n")) <= CHUNK_LINES for text in (snapshot.snapshot or {}).values())
    # Packed: a few bytes an entry, not the ~100 of its line (these URLs differ in a number only).
    assert all(text.startswith(PACKED) for text in (snapshot.snapshot or {}).values())
    assert sum(len(text) for text in (snapshot.snapshot or {}).values()) < 50_000 * 10

    second = {**entries(25_000, 50_000)}
    second.update({u: h._replace(priority="0.9") for u, h in list(second.items())[:1_000]})
    found = record_parse(store, key, SITEMAP, second, "b2", T0 + timedelta(hours=1), keep=2)
    assert not found.baseline
    assert found.counts == {ChangeKind.ADDED: 25_000, ChangeKind.REMOVED: 25_000, ChangeKind.LASTMOD: 0,
                            ChangeKind.CHANGEFREQ: 0, ChangeKind.PRIORITY: 1_000}
    [history] = list(histories(store, sitemap=SITEMAP))
    assert [p.batch for p in history.parses] == ["b1", "b2"]
    records = list(changes_of(store, history.parses[1]))
    assert len(records) == 51_000 and {r.at for r in records} == {"2026-01-01T01:00:00Z"}
    assert sum(r.change == "priority" and r.old == "0.5" and r.new == "0.9" for r in records) == 1_000
    parse_cells = store.row(HISTORY_TABLE, history.parses[1].key.encode())
    assert parse_cells is not None and max(len(v) for v in parse_cells.values()) <= CHUNK_BYTES

    # A smaller third parse: stale snapshot cells go, and only the newest `keep` parses stay.
    record_parse(store, key, SITEMAP, entries(0, 10), "b3", T0 + timedelta(hours=2), keep=2)
    snapshot = decode(HistoryRow, key.decode(), store.row(HISTORY_TABLE, key) or {})
    assert snapshot.snapshot_entries == 10 and len(snapshot.snapshot or {}) == 1
    [history] = list(histories(store, sitemap=SITEMAP))
    assert [p.batch for p in history.parses] == ["b2", "b3"]
    assert [p.batch for p in next(histories(store, since=T0 + timedelta(hours=2))).parses] == ["b3"]


def padded(listed: dict[str, Hints], tag: str) -> dict[str, Hints]:
    """`listed` with 1,500 random letters and digits in each URL's path: text that packing cannot shrink much."""
    letters = string.ascii_letters + string.digits
    return {url.replace("/article-", "/" + "".join(random.Random(tag + url).choices(letters, k=1_500)) + "/article-"): h
            for url, h in listed.items()}


def test_a_snapshot_and_changes_over_max_row_bytes_are_spread_over_rows_and_cleaned_up(settings: Settings) -> None:
    bound = 2_097_152
    with Store(dataclasses.replace(settings, max_row_bytes=bound)) as store:
        store.create_tables()
        key = rowkeys.row_key(SITEMAP).encode()
        long, replaced = padded(entries(0, 6_000), "x"), padded(entries(0, 6_000), "y")
        record_parse(store, key, SITEMAP, long, "b1", T0, keep=1)  # ~8 MB of snapshot, packed
        rows = dict(store.scan(HISTORY_TABLE, prefix=key))
        assert len(rows) >= 4 and {part_key(key, 1), part_key(key, 3)} <= set(rows)
        assert max(len(k) + sum(len(c) + len(v) for c, v in cells.items()) for k, cells in rows.items()) <= bound
        assert sorted(snapshot_urls(store, key)) == sorted(long)

        # Every URL replaced: the ~12 MB of change lines are spread too, and read back whole.
        record_parse(store, key, SITEMAP, replaced, "b2", T0 + timedelta(hours=1), keep=1)
        [history] = list(histories(store, sitemap=SITEMAP))
        assert len(list(changes_of(store, history.parses[-1]))) == 12_000
        assert sorted(snapshot_urls(store, key)) == sorted(replaced)

        # A small parse: the continuation rows of the snapshot and of the pruned parse go (those left are
        # the new parse's own: it removed 6,000 long URLs).
        newest = record_parse(store, key, SITEMAP, entries(0, 10), "b3", T0 + timedelta(hours=2), keep=1).key
        left = [k for k in (k for k, _ in store.scan(HISTORY_TABLE, prefix=key)) if PART_MARK in k]
        assert left and all(k.startswith(newest.encode() + PART_MARK) for k in left)
        assert len(snapshot_urls(store, key)) == 10
