"""`readdb`: read rows back, decoded: one URL, a URL prefix, or table statistics."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from sitemapcrawl.errors import RowNotFoundError
from sitemapcrawl.model.cells import column_names, readable_cells
from sitemapcrawl.model.webpage import HOST_TABLE, WEBPAGE_TABLE, WebPage
from sitemapcrawl.storage.politeness import POLITENESS_KEYS_START
from sitemapcrawl.storage.store import Store
from sitemapcrawl.storage.tables import Unreadable, pages
from sitemapcrawl.web import rowkeys, urls

_STATS_FIELDS = ["status", "is_sitemap", "in_sitemap"]


@dataclass(frozen=True)
class RowView:
    """One row for people and scripts: its URL, its key, every cell readable."""

    url: str
    key: str
    cells: dict[str, Any]

    def as_json(self) -> dict[str, Any]:
        """`{"url": …, "key": …, "family:qualifier": value, …}`."""
        return {"url": self.url, "key": self.key, **self.cells}


@dataclass
class DbStats:
    """Counts over the whole `webpage` table."""

    rows: int = 0
    by_status: Counter[str] = field(default_factory=Counter)
    sitemap_rows: int = 0
    found_in_sitemaps: int = 0
    hosts: int = 0
    host_rows: int = 0
    unreadable: Unreadable = field(default_factory=Unreadable)
    """Rows whose key or cells did not decode (in `rows`, in no other count)."""


def _view(key: bytes, cells: dict[bytes, bytes]) -> RowView:
    text_key = key.decode("utf-8")
    return RowView(rowkeys.url_from_row_key(text_key), text_key, readable_cells(WebPage, cells))


def read_row(store: Store, url: str, rules: urls.CanonicalRules = urls.DEFAULT_RULES) -> RowView:
    """The row of one URL (canonicalised by `rules` first); RowNotFoundError when absent.

    One round trip.
    """
    canonical = urls.canonicalize(url, rules)
    key = rowkeys.row_key(canonical)
    cells = store.row(WEBPAGE_TABLE, key.encode("utf-8"))
    if cells is None:
        raise RowNotFoundError(f"no row for {canonical} (key {key})")
    return _view(key.encode("utf-8"), cells)


def rows_with_prefix(
    store: Store, url_prefix: str, rules: urls.CanonicalRules = urls.DEFAULT_RULES
) -> Iterator[RowView]:
    """Rows whose URL starts with `url_prefix`, in key order (a prefix scan)."""
    row_prefix = rowkeys.url_prefix_to_row_prefix(url_prefix, rules)
    for key, cells in store.scan(WEBPAGE_TABLE, prefix=row_prefix.encode("utf-8")):
        yield _view(key, cells)


def collect_stats(store: Store) -> DbStats:
    """Rows by status, sitemap rows, rows found in sitemaps, hosts.

    One full scan of the few columns it needs, `hbase_batch_size` rows per
    round trip; memory holds one counter per status and one entry per host.
    Rows that do not decode are counted in `rows` and in `unreadable`, and
    logged (`tables.pages`).
    """
    stats = DbStats()
    scan = store.scan(WEBPAGE_TABLE, columns=column_names(WebPage, _STATS_FIELDS))
    hosts: set[str] = set()
    for _key, row in pages(scan, "readdb", stats.unreadable, _STATS_FIELDS):
        stats.by_status[row.status.value if row.status else "(none)"] += 1
        if row.is_sitemap:
            stats.sitemap_rows += 1
        if row.in_sitemap:
            stats.found_in_sitemaps += 1
        hosts.add(urls.host_key(row.url))
    stats.rows = sum(stats.by_status.values()) + stats.unreadable.rows
    stats.hosts = len(hosts)
    # Origin rows only: politeness rows (`~host:...`, `~ip:...`) sort after them.
    stats.host_rows = sum(1 for _ in store.scan(HOST_TABLE, stop=POLITENESS_KEYS_START, filter="KeyOnlyFilter()"))
    return stats
