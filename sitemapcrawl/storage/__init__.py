"""The only code that talks to HBase: the store, table reads and writes, and the schema.

`store` is the connection pool, retries and the one write path (`gateways`
spreads connections over several Thrift gateways; `failures`
classifies HBase errors; `_happybase` is the one seam past happybase's
public API); `tables` reads and decodes rows with one policy for an
unreadable row; `batchrecords` keeps a batch's members where each phase
reads them; `dueindex` keeps the due rows in order and `readyqueue` reads
them best first; `schema` creates the tables as
`hbase-schema/` declares them; `hbase_shell` runs those scripts; `hosts`,
`politeness` and `history` own the host, politeness and sitemap history rows;
`vouchers` reads who vouches for a sitemap; `overlap` runs writes behind,
reads ahead of a job and small round-trip-bound calls side by side.
"""

#: What other packages may use of this one, module by module (tests/unit/test_layout.py refuses any other
#: name): a module or a name not here is this package's own.
FACE: dict[str, tuple[str, ...]] = {
    "batchrecords": (
        "batch_rows", "drop_records", "has_marked_rows", "has_records", "key_of_url", "listed_in_batch",
        "listed_sitemaps", "record_members", "record_work", "recorded_splits", "write_listed", "write_touching",
    ),
    "dueindex": (
        "DUE_FIELDS", "DueRead", "chunks", "due_index_marker", "mark_due_built", "promote", "rebuild_due", "sweep_due",
        "write_pages",
    ),
    "hbase_shell": ("run_script",),
    "history": (
        "ChangesCounts", "SitemapHistory", "change_output", "histories", "parse_counts", "parse_since",
        "parse_statuses", "record_parse", "record_statuses", "snapshot_lastmods", "snapshot_urls",
    ),
    "hosts": ("origin_key", "origins_in_table", "origins_of_host"),
    "overlap": ("WriteBehind", "read_ahead", "side_by_side"),
    "politeness": (
        "KeyGate", "KeyState", "POLITENESS_KEYS_START", "Resolver", "SLOW_DOWN_CODES", "host_of_origin", "load_states",
        "queue_key", "recovered", "request_end", "retry_after_seconds", "slowed", "state_rows",
    ),
    "readyqueue": ("HostQueue", "ReadyQueues"),
    "schema": (
        "HBASE_COMPRESSION", "Layout", "check_namespace", "read_split_keys", "seed_urls", "shell_script",
        "split_keys_from_urls",
    ),
    "store": ("Store",),
    "tables": ("Unreadable", "decode_host", "decode_page", "hosts", "pages", "read_page", "read_pages", "scan_pages"),
    "vouchers": ("vouchers_through_redirects",),
}
