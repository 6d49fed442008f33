"""The only code that talks to HBase: the store, table reads and writes, and the schema.

`store` is the connection pool, retries and the one write path; `tables`
reads and decodes rows with one policy for an unreadable row and keeps the
batch records and the due index; `schema` creates the tables as
`hbase-schema/` declares them; `hbase_shell` runs those scripts; `hosts`,
`politeness` and `history` own the host, politeness and sitemap history rows;
`overlap` runs writes behind and reads ahead of a job.
"""

__all__ = [
    "batchrecords", "dueindex", "failures", "hbase_shell", "history", "hosts", "overlap", "politeness", "schema",
    "store", "tables",
]
