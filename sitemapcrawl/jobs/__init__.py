"""The jobs: each is the work of one command; it scans rows, does its work, writes rows, returns counts.

A job never hands data to the next one through memory or files: all state is
in HBase, so every job can be stopped and run again. Jobs import the parts
below them (fetcher, scoring, batch, storage, web, model), never another job,
except `crawl`, the one loop that runs the others.
"""

__all__ = ["crawl", "detect", "export", "fetch", "generate", "init", "inject", "parse", "readdb", "updatedb"]
