"""The test web's access log: every request as the server saw it, for tests to judge the crawler.

Who was asked for what, when (monotonic start and end), with which answer;
per host: request counts, the least gap between requests and the most
requests at once, which is how tests check politeness. Thread-safe: the
server's threads add records while a test reads.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass


@dataclass(frozen=True)
class Access:
    """One request as the test web saw it. `start`/`end` are
    `time.monotonic()` when the request's headers had been read and when the
    answer had been written; `status` is 0 when the connection was reset or
    closed without an answer; `size` counts body bytes sent."""

    host: str
    port: int
    method: str
    target: str
    user_agent: str
    if_none_match: str
    if_modified_since: str
    status: int
    size: int
    start: float
    end: float

    @property
    def url(self) -> str:
        """The absolute URL that was asked for."""
        return f"http://{self.host}:{self.port}{self.target}"


class AccessLog:
    """The requests served so far, in memory, safe to use from any thread.

    Every query copies the records under a lock and then works on the copy.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: list[Access] = []

    def add(self, record: Access) -> None:
        """Append one record."""
        with self._lock:
            self._records.append(record)

    def clear(self) -> None:
        """Forget every record."""
        with self._lock:
            self._records.clear()

    def records(self, host: str | None = None) -> list[Access]:
        """The records (of `host` only, if given), in the order they ended."""
        with self._lock:
            recs = list(self._records)
        return recs if host is None else [r for r in recs if r.host == host]

    def __len__(self) -> int:
        with self._lock:
            return len(self._records)

    def requests_per_host(self) -> dict[str, int]:
        """Host -> number of requests."""
        counts: dict[str, int] = {}
        for r in self.records():
            counts[r.host] = counts.get(r.host, 0) + 1
        return counts

    def paths(self, host: str | None = None) -> list[str]:
        """The path+query of each request (of `host` only, if given), in order."""
        return [r.target for r in self.records(host)]

    def urls(self) -> list[str]:
        """The absolute URL of each request, in order."""
        return [r.url for r in self.records()]

    def was_fetched(self, url: str) -> bool:
        """Whether any request asked for `url` (absolute, path+query exact)."""
        return any(r.url == url for r in self.records())

    def count(self, url: str) -> int:
        """How many requests asked for `url`."""
        return sum(1 for r in self.records() if r.url == url)

    def min_gap(self, host: str) -> float | None:
        """The smallest time between the end of a request to `host` and the
        start of the next one (negative when two overlapped); None with fewer
        than two requests."""
        recs = sorted(self.records(host), key=lambda r: r.start)
        if len(recs) < 2:
            return None
        gaps = []
        last_end = recs[0].end
        for r in recs[1:]:
            gaps.append(r.start - last_end)
            last_end = max(last_end, r.end)
        return min(gaps)

    def max_concurrency(self, host: str) -> int:
        """The most requests to `host` that were in flight at one moment."""
        events = sorted(itertools.chain.from_iterable(
            ((r.start, 1), (r.end, -1)) for r in self.records(host)))
        # At equal times the -1 sorts first: a request ending as another starts
        # is not counted as overlapping.
        best = now = 0
        for _, step in events:
            now += step
            best = max(best, now)
        return best
