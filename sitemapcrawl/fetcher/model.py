"""The values of a fetch run: its options, the items its queues hold, its counts.

No I/O. `jobs/fetch.py` runs the job; `fetcher.feed` fills the queues,
`fetcher.engine` makes the requests, `fetcher.write` writes the outcomes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable
from dataclasses import dataclass, field
from datetime import datetime

from sitemapcrawl.config import MAX_FETCH_SPLITS, Settings
from sitemapcrawl.errors import UsageError
from sitemapcrawl.model.splits import parse_share
from sitemapcrawl.model.webpage import FetchStatus
from sitemapcrawl.modes import QueueBy
from sitemapcrawl.web.robots import RobotsPolicy
from sitemapcrawl.web.warc import Capture

__all__ = ["FetchCounts", "FetchItem", "FetchOptions", "FetchProgress", "QueueBy", "RobotsItem", "RobotsRule",
           "parse_split"]


def parse_split(text: str, option: str = "--split") -> tuple[int, int]:
    """`K/N` -> (K, N), 0 <= K < N <= `MAX_FETCH_SPLITS`; UsageError naming `option` otherwise."""
    return parse_share(text, option, MAX_FETCH_SPLITS)


@dataclass(frozen=True)
class FetchOptions:
    """How one fetch run works; `from_settings` fills what the settings say."""

    batch_id: str
    fetch_split: tuple[int, int] | None = None
    connections: int = 1000
    """Requests in flight at once, over all hosts (`max_connections`)."""
    threads_per_host: int = 1
    delay: float = 1.0
    queue_by: QueueBy = QueueBy.HOST
    store_content: bool = False
    time_limit: float | None = None
    """Seconds after which no new URL is started."""
    min_throughput: float | None = None
    """Pages/s below which (after `warmup`) no new URL is started."""
    warmup: float = 30.0
    throughput_window: float = 5.0
    wait: bool = False
    """When another worker holds the split, wait for its lease to expire instead of stopping."""

    @classmethod
    def from_settings(cls, settings: Settings, batch_id: str, **given: object) -> FetchOptions:
        """Options from the settings, overridden by the `given` ones that are not None."""
        values: dict[str, object] = {
            "connections": settings.max_connections, "threads_per_host": settings.threads_per_host,
            "delay": settings.delay, "queue_by": settings.queue_by, "store_content": settings.store_content,
        }
        values.update({k: v for k, v in given.items() if v is not None})
        options = cls(batch_id, **values)  # type: ignore[arg-type]
        options.check()
        return options

    def check(self) -> None:
        """Raise UsageError naming the first bad option."""
        if not self.batch_id:
            raise UsageError("--batch is required")
        if self.connections < 1 or self.threads_per_host < 1:
            raise UsageError("--max-connections and --threads-per-host must be at least 1")
        if self.delay < 0:
            raise UsageError(f"--delay must not be negative, not {self.delay}")
        for name, value in (("--time-limit", self.time_limit), ("--min-throughput", self.min_throughput)):
            if value is not None and value <= 0:
                raise UsageError(f"{name} must be positive, not {value}")
        if self.warmup < 0 or self.throughput_window <= 0:
            raise UsageError("--warmup must not be negative")


@dataclass(frozen=True, slots=True)
class FetchItem:
    """One URL to fetch, with what its row knows (only what the fetch needs)."""

    url: str
    key: bytes
    origin: str
    host: str
    queue: Hashable
    is_sitemap: bool = False
    etag: str | None = None
    last_modified: str | None = None
    signature: str | None = None
    fetch_time: datetime | None = None
    retries: int = 0
    conditional: bool = False
    """Send If-None-Match / If-Modified-Since (the row was fetched before)."""
    fetch_split: int | None = None
    score: float | None = None
    depth: int | None = None
    radius: int | None = None
    chain: tuple[str, ...] = ()
    """URLs that redirected here in this run (empty for a row of the batch)."""
    earlier: Capture | None = None
    """The row's latest WARC response record, which a 304's revisit record refers to."""


@dataclass(frozen=True)
class RobotsItem:
    """Fetch an origin's robots.txt, as the first request of its queue."""

    origin: str


@dataclass(frozen=True)
class RobotsRule:
    """What the fetch knows of one origin's robots.txt."""

    policy: RobotsPolicy
    crawl_delay: float | None = None
    retry_at: datetime | None = None
    error: str | None = None


@dataclass(frozen=True)
class FetchProgress:
    """A snapshot for a progress display."""

    done: int
    total: int
    pages_per_s: float
    bytes: int
    errors: int
    active_queues: int


@dataclass
class FetchCounts:
    """What a fetch did, by status and by host."""

    batch_id: str
    total: int = 0
    """URLs of the batch (this fetch split) still to fetch when the run began."""
    already_done: int = 0
    done: int = 0
    bytes: int = 0
    requests: int = 0
    robots_fetched: int = 0
    redirects_followed: int = 0
    new_rows: int = 0
    dropped: int = 0
    """Outcomes not written because the batch was released while this run fetched it."""
    by_status: Counter[str] = field(default_factory=Counter)
    by_host: dict[str, Counter[str]] = field(default_factory=dict)
    stopped: str | None = None
    """Why the run stopped before the end (time limit, throughput, interrupted)."""
    seconds: float = 0.0

    @property
    def errors(self) -> int:
        """URLs that failed this time (retry or gone)."""
        return self.by_status[FetchStatus.RETRY.value] + self.by_status[FetchStatus.GONE.value]

    @property
    def left(self) -> int:
        """URLs of the batch not reached in this run."""
        return max(0, self.total - self.done)

    def summary(self) -> str:
        """One line for the end of the command."""
        statuses = ", ".join(f"{s} {n}" for s, n in sorted(self.by_status.items()))
        rate = self.done / self.seconds if self.seconds > 0 else 0.0
        line = (f"batch {self.batch_id}: {self.done} of {self.total} done ({statuses or 'nothing'}), "
                f"{self.bytes} bytes, {rate:.1f} pages/s, hosts {len(self.by_host)}")
        if self.already_done:
            line += f", {self.already_done} done before"
        if self.stopped:
            line += f"; stopped: {self.stopped}, {self.left} left for a later run"
        return line

    def host_lines(self, limit: int = 10) -> list[str]:
        """The busiest hosts, one line each: pages and statuses."""
        ranked = sorted(self.by_host.items(), key=lambda kv: (-sum(kv[1].values()), kv[0]))
        return [f"{host}: {sum(c.values())} ({', '.join(f'{s} {n}' for s, n in sorted(c.items()))})"
                for host, c in ranked[:limit]]
