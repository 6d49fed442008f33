"""The jobs: each scans rows, does its work, writes rows, and returns counts.

A job never hands data to the next one through memory or files: all state is
in HBase, so every job can be stopped and run again.

Two kinds of module live here. A *job* is the work of one command (`JOBS`);
no module imports a job except `crawl`, which runs the others (and `cli`,
which calls one). A *part* (`PARTS`) is shared work that jobs import: the
batch registry and leases, politeness state, URL rules, origin keys, the
history table, the robots.txt check, the sitemap quality step of updatedb,
its row counts for serve, the pieces of fetch and the worker processes of `--workers` (`workers`; the
command lines of each phase's workers are crawl's, which runs the others). Parts import parts, never jobs.
`tests/unit/test_job_imports.py` holds every module here to this.
"""

#: Modules that are the work of one command: nothing under `jobs/` but `crawl` imports them.
JOBS = frozenset({"init", "inject", "detect", "generate", "fetch", "parse", "updatedb", "crawl", "readdb",
                  "export"})
#: Modules shared by jobs (the `batches` and `changes` commands call parts directly).
PARTS = frozenset({"batches", "leases", "politeness", "rules", "hosts", "history", "quality", "counters", "robots_txt",
                   "fetch_feed", "fetch_model", "fetch_pacing", "fetch_queues", "fetch_work", "fetch_write",
                   "workers"})
