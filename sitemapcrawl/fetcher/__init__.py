"""The fetch job's parts: what to fetch, in which order, how fast, and what to write.

`feed` reads a batch's members and the robots.txt rules of their origins;
`queues` keeps one queue per politeness key; `pacing` spaces requests by
crawl delay across runs and processes; `engine` fetches every ready host
from one event loop (robots.txt, conditional GET, redirects); `outcomes`
turns an answer into the facts on a row; `write` records outcomes and host
times; `model` holds the values they pass. `jobs.fetch` wires them together.
"""

#: What other packages may use of this one, module by module (tests/unit/test_layout.py refuses any other
#: name): a module or a name not here is this package's own.
FACE: dict[str, tuple[str, ...]] = {
    "engine": ("Engine", "host_budget"),
    "feed": ("queue_all", "read_feed"),
    "model": ("FetchCounts", "FetchItem", "FetchOptions", "FetchProgress", "RobotsItem", "parse_split"),
    "pacing": ("Pacing", "StateWrite"),
    "queues": ("FetchQueues",),
    "write": ("Outbox", "Writer"),
}
