"""The fetch job's parts: what to fetch, in which order, how fast, and what to write.

`feed` reads a batch's members and hands out per-host work; `queues` keeps one
queue per politeness key; `pacing` spaces requests by crawl delay across
threads and processes; `work` fetches one URL (robots.txt, conditional GET,
redirects) into an outcome; `write` records outcomes and host times;
`model` holds the values they pass. `jobs.fetch` wires them together.
"""

__all__ = ["feed", "model", "pacing", "queues", "work", "write"]
