"""`init`: create the crawl's tables, exactly as `hbase-schema/` describes them.

Through Thrift1 by default (families, versions, compression). Pre-splitting
and creating a namespace are not in the Thrift1 API: for those `init` runs
the shell script of `schema.shell_script` through the `hbase_shell` setting,
or says how to run it by hand (`init --print-schema`).
"""

from __future__ import annotations

from dataclasses import dataclass

from sitemapcrawl.clock import Clock, utc_now
from sitemapcrawl.errors import StoreRejectedError, UsageError
from sitemapcrawl.model.webpage import DUE_TABLE, TABLE_NAMES, WEBPAGE_TABLE
from sitemapcrawl.storage import hbase_shell
from sitemapcrawl.storage.dueindex import mark_due_built
from sitemapcrawl.storage.schema import HBASE_COMPRESSION, Layout, check_namespace, shell_script
from sitemapcrawl.storage.store import Store


@dataclass(frozen=True)
class InitResult:
    """Which tables were created and which already existed."""

    created: tuple[str, ...]
    existing: tuple[str, ...]
    regions: int | None = None
    """Regions of the webpage table when init created it pre-split (None otherwise)."""
    notes: tuple[str, ...] = ()
    """What was asked and not done, one line each (a layout option on an existing table)."""


def init_tables(store: Store, layout: Layout | None = None, shell: str | None = None, *,
                clock: Clock = utc_now) -> InitResult:
    """Create the missing tables with `layout`; running it again changes nothing.

    Without split keys, Thrift1 creates the tables; a namespace that is
    missing is created through `shell` (the `hbase_shell` setting) when one
    is given, otherwise the error says how. With split keys, the HBase shell
    creates them (Thrift1 cannot split): `shell` is then required. A
    `webpage` table created with its `due` table gets the due index's built
    marker, stamped by `clock` (an older table given a new `due` table does
    not: its first generate rebuilds the index).
    Cost: one round trip to list tables, one per table created; with the
    shell, a JVM start and one round trip to count the regions.
    Raises StoreUnavailableError when HBase cannot be reached,
    StoreRejectedError when it refuses (compression, namespace, rights).
    """
    layout = layout or Layout(table_prefix=store.table_name(""))
    check_namespace(layout)
    before = set(store.existing_tables())
    existing = tuple(store.table_name(t) for t in sorted(before))
    notes = []
    if layout.split_keys and WEBPAGE_TABLE in before:
        notes.append(f"{store.table_name(WEBPAGE_TABLE)} exists: its regions are left as they are "
                     "(split keys apply when init creates it)")
    use_shell = bool(layout.split_keys) and WEBPAGE_TABLE not in before
    if use_shell and not shell:
        raise UsageError("pre-splitting needs the HBase shell (Thrift1 has no split call): set hbase_shell "
                         "(e.g. 'hbase shell -n'), or run the script of `sitemapcrawl init --print-schema` "
                         "with the same options in the HBase shell")
    if not use_shell:
        try:
            created = store.create_tables(HBASE_COMPRESSION[layout.compression])
        except StoreRejectedError as exc:
            if not (shell and layout.namespace and "namespace" in str(exc)):
                raise
            use_shell = True
    if use_shell:
        assert shell is not None
        hbase_shell.run_script(shell, shell_script(layout))
        created = sorted(set(store.existing_tables()) - before)
        missing = [store.table_name(t) for t in TABLE_NAMES if t not in before and t not in created]
        if missing:
            raise StoreRejectedError(f"the HBase shell ({shell}) ran but {', '.join(missing)} does not exist; "
                                     "run `sitemapcrawl init --print-schema` in it by hand to see why")
    if WEBPAGE_TABLE in created and DUE_TABLE in created:
        # An empty webpage table has no row the due index could miss: the index starts built.
        mark_due_built(store, clock())
    regions = len(store.regions(WEBPAGE_TABLE)) if layout.split_keys and WEBPAGE_TABLE in created else None
    return InitResult(tuple(store.table_name(t) for t in created), existing, regions, tuple(notes))
