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

__all__ = [
    "batchrecords", "dueindex", "failures", "gateways", "hbase_shell", "history", "hosts", "overlap", "politeness",
    "readyqueue", "schema", "store", "tables", "vouchers",
]
