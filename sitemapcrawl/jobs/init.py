"""`init`: create the crawl's tables, exactly as `hbase-schema/` describes them."""

from __future__ import annotations

from dataclasses import dataclass

from sitemapcrawl.store import Store


@dataclass(frozen=True)
class InitResult:
    """Which tables were created and which already existed."""

    created: tuple[str, ...]
    existing: tuple[str, ...]


def init_tables(store: Store) -> InitResult:
    """Create the missing tables; running it again changes nothing.

    Cost: one round trip to list tables, one per table created.
    Raises StoreUnavailableError when HBase cannot be reached.
    """
    before = set(store.existing_tables())
    created = store.create_tables()
    return InitResult(tuple(store.table_name(t) for t in created),
                      tuple(store.table_name(t) for t in sorted(before)))
