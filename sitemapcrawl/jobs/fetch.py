"""`fetch`: fetch one generated batch politely, with queues per host and a pool of threads.

Nutch's queue-based fetcher over HBase rows:

- Feeding: the batch's rows (`k:gen` = batch id, and `m:pa` = K with
  `--partition K/N`, both tested by the server) are read in chunks, each
  through a fresh short scanner (a long-lived one would expire while the
  queues are busy), into one FIFO queue per host key (`urls.host_key`), or
  per IP address with `queue_by = "ip"`. Rows whose fetch mark already holds
  the batch id were done by an earlier run and are skipped: a fetch is
  resumable. Memory: a few hundred bytes per URL of the batch.
- Politeness (`fetch_queues.FetchQueues`): at most `threads_per_host`
  requests in flight per queue, at least `delay` seconds from the end of one
  request to the start of the next, robots.txt `Crawl-delay` honoured when it
  is longer, up to `max_crawl_delay`; beyond it the host's URLs are deferred
  (status `deferred`, due again after `deferred_interval`), as Nutch does.
- robots.txt: the `host` table row is the cache. A row that is missing or
  older than `robots_max_age` (or failing and past its retry time) is
  fetched again, as the first request of its queue, with the same code as
  `detect` (`detect.check_origin`), and written back. Every URL is checked
  against it; a disallowed URL is `blocked_robots`; while robots.txt fails
  (5xx, no answer) the origin's URLs are deferred until its retry time.
- HTTP (`http.PoliteHttpClient.fetch_one`): the user agent on every request,
  connect and read timeouts, a body cap (`max_content_bytes`, or
  `max_sitemap_bytes` for sitemaps: reading stops, `f:tr` = 1), conditional
  GET from the server's own `ETag` and `Last-Modified` of the last successful
  fetch (never from a sitemap's `<lastmod>`; a URL never fetched gets none).
- Redirects are recorded (`redirect`, `f:rd` = target). A target on the same
  host is followed in the same queue (so each hop is paced), up to
  `max_redirects` hops, unless it is in the batch anyway, already fetched, or
  filtered; it joins the batch (marks set) so its own row holds its outcome.
  A target on another host becomes a new row (`unfetched`, due now, the
  source's score, depth and radius) and is fetched in a later batch, under
  that host's politeness. A sitemap's target stays a sitemap (`s:sm`, source
  `redirect`); a same-host hop also gets its redirect inlink at once, so
  parse scopes it by who vouched for its source in the same batch.
- Outcomes are data on the row, never exceptions: status, HTTP code, content
  type, ETag, Last-Modified, MD5 signature, content-changed time, fetch time
  (and the one before), retries, error, and the fetch mark. 404, 410 and other
  client errors are `gone`; 5xx, 408, 429, timeouts and connection failures
  are `retry`, due again after `fetch_retry_interval` x 2^(retries-1), and
  `gone` after `max_fetch_retries` failures in a row.
- Content: sitemap bodies are always kept in `c:raw` (gzip-compressed by the
  row model) for the parse job to read; page bodies only with
  `store_content` (`--store-content`, which mixed and links-only crawls need
  for outlinks). Parsing is not done during fetch: fetch threads stay on the
  network and parse can be rerun on its own. A compressed body larger than
  HBase's cell limit (`max_cell_bytes`, `hbase.client.keyvalue.maxsize`,
  10 MB by default) is not written: the row becomes `too_large`.
- Stopping: `time_limit` stops handing out URLs after a duration, and
  `min_throughput` (pages/s, measured over `throughput_window` seconds after
  a `warmup`) stops a fetch stalled on slow hosts. A KeyboardInterrupt stops
  handing out too; requests in flight finish and every finished outcome is
  written. What was not fetched keeps its row untouched (no fetch mark):
  the same batch can be fetched again, and after updatedb it is due again.
- Workers never touch HBase: they hand outcomes to the calling thread, which
  writes them in batches of `hbase_batch_size` (or once a second).
"""

from __future__ import annotations

import hashlib
import logging
import socket
import threading
import time
import zlib
from collections import Counter
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from urllib.parse import urljoin

from sitemapcrawl import urls
from sitemapcrawl.config import Settings
from sitemapcrawl.errors import CellDecodeError, InvalidUrlError, UsageError
from sitemapcrawl.http import HttpResponse, SingleRequestClient, conditional_headers
from sitemapcrawl.jobs.detect import check_origin, robots_host_row
from sitemapcrawl.jobs.fetch_queues import FetchQueues, Lease
from sitemapcrawl.jobs.hosts import origin_key
from sitemapcrawl.jobs.rules import UrlRules
from sitemapcrawl.linkvalues import Inlink, InlinkKind, format_inlink
from sitemapcrawl.modes import QueueBy
from sitemapcrawl.robots import RobotsPolicy
from sitemapcrawl.store import Store
from sitemapcrawl.webpage import (
    HOST_TABLE,
    WEBPAGE_TABLE,
    FetchStatus,
    HostRow,
    RobotsStatus,
    SitemapSource,
    WebPage,
    column_names,
    decode,
    encode,
    equals_filter,
)

log = logging.getLogger(__name__)

_REDIRECT_CODES = frozenset({301, 302, 303, 307, 308})
_RETRY_CODES = frozenset({408, 429})
#: Room left in a cell for the row key, family and qualifier.
_CELL_MARGIN = 1024
_READ_FIELDS = [
    "status", "fetch_time", "etag", "last_modified", "signature", "retries", "is_sitemap",
    "fetch_mark", "generate_mark", "partition", "score", "depth", "radius",
]
_ROBOTS_FIELDS = ["robots_fetch_time", "robots_status", "robots_retry_at", "robots_text", "crawl_delay"]


def parse_partition(text: str) -> tuple[int, int]:
    """`K/N` -> (K, N), 0 <= K < N; UsageError otherwise."""
    k, slash, n = text.partition("/")
    if not slash or not k.strip().isdigit() or not n.strip().isdigit():
        raise UsageError(f"--partition {text!r}: expected K/N, e.g. 0/4")
    part, parts = int(k), int(n)
    if parts < 1 or part >= parts:
        raise UsageError(f"--partition {text!r}: K must be in 0..N-1")
    return part, parts


@dataclass(frozen=True)
class FetchOptions:
    """How one fetch run works; `from_settings` fills what the settings say."""

    batch_id: str
    partition: tuple[int, int] | None = None
    threads: int = 8
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

    @classmethod
    def from_settings(cls, settings: Settings, batch_id: str, **given: object) -> FetchOptions:
        """Options from the settings, overridden by the `given` ones that are not None."""
        try:
            queue_by = QueueBy(settings.queue_by)
        except ValueError:
            raise UsageError(f"queue_by {settings.queue_by!r}: choose host or ip") from None
        values: dict[str, object] = {
            "threads": settings.threads, "threads_per_host": settings.threads_per_host,
            "delay": settings.delay, "queue_by": queue_by, "store_content": settings.store_content,
        }
        values.update({k: v for k, v in given.items() if v is not None})
        options = cls(batch_id, **values)  # type: ignore[arg-type]
        options.check()
        return options

    def check(self) -> None:
        """Raise UsageError naming the first bad option."""
        if not self.batch_id:
            raise UsageError("--batch is required")
        if self.threads < 1 or self.threads_per_host < 1:
            raise UsageError("--threads and --threads-per-host must be at least 1")
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
    partition: int | None = None
    score: float | None = None
    depth: int | None = None
    radius: int | None = None
    chain: tuple[str, ...] = ()
    """URLs that redirected here in this run (empty for a row of the batch)."""


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
class Outcome:
    """Cells for one row, and the cells to add when the row does not exist yet."""

    key: bytes
    row: WebPage
    if_new: WebPage | None = None


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
    """URLs of the batch (this partition) still to fetch when the run began."""
    already_done: int = 0
    done: int = 0
    bytes: int = 0
    requests: int = 0
    robots_fetched: int = 0
    redirects_followed: int = 0
    new_rows: int = 0
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


# ------------------------------------------------------------ outcomes ---


def retry_or_gone(item: FetchItem, now: datetime, settings: Settings, error: str) -> dict[str, object]:
    """The fields of a failed fetch: retry later (interval doubling per retry) or, at the limit, gone."""
    retries = item.retries + 1
    if retries >= settings.max_fetch_retries:
        return {"status": FetchStatus.GONE, "retries": retries, "error": error}
    wait = settings.fetch_retry_interval * 2 ** (retries - 1)
    return {"status": FetchStatus.RETRY, "retries": retries, "error": error,
            "next_fetch": now + timedelta(seconds=wait)}


def _content_fields(item: FetchItem, response: HttpResponse, settings: Settings, keep: bool,
                    now: datetime) -> dict[str, object]:
    body = response.body
    signature = hashlib.md5(body, usedforsecurity=False).hexdigest()
    fields: dict[str, object] = {
        "status": FetchStatus.FETCHED, "signature": signature, "truncated": response.truncated,
        "content_type": response.headers.get("content-type", ""),
    }
    if signature != item.signature:
        fields["content_changed"] = now
    if keep:
        limit = settings.max_cell_bytes - _CELL_MARGIN
        # gzip never grows data by more than a few bytes per 16 KiB block.
        size = len(body) if len(body) + len(body) // 1000 + 64 <= limit else len(zlib.compress(body, 6)) + 18
        if size > limit:
            fields["status"] = FetchStatus.TOO_LARGE
            fields["error"] = (f"compressed body of {size} bytes is over the HBase cell limit of "
                               f"{settings.max_cell_bytes} bytes; not stored")
        else:
            fields["content"] = body
    return fields


def outcome_row(item: FetchItem, response: HttpResponse, now: datetime, settings: Settings,
                store_content: bool) -> WebPage:
    """The row fields one HTTP answer gives (no marks, no redirect following)."""
    common: dict[str, object] = {"fetch_time": now, "error": "", "redirect_to": ""}
    if item.fetch_time is not None:
        common["prev_fetch_time"] = item.fetch_time
    code = response.status
    fields: dict[str, object] = dict(common)
    if code is None:
        fields.update(retry_or_gone(item, now, settings, response.error or "no answer"))
        return WebPage(item.url, **fields)  # type: ignore[arg-type]
    fields["http_code"] = code
    location = response.headers.get("location", "").strip()
    if 200 <= code < 300:
        fields.update(retries=0, **_validators(response))
        fields.update(_content_fields(item, response, settings, item.is_sitemap or store_content, now))
    elif code == 304:
        fields.update(status=FetchStatus.NOT_MODIFIED, retries=0, **_validators(response, keep=item))
    elif code in _REDIRECT_CODES and location:
        fields.update(status=FetchStatus.REDIRECT, retries=0, redirect_to=urljoin(item.url, location))
    elif code >= 500 or code in _RETRY_CODES:
        fields.update(retry_or_gone(item, now, settings, f"HTTP {code}"))
    else:
        fields.update(status=FetchStatus.GONE, retries=0, error=f"HTTP {code}")
    return WebPage(item.url, **fields)  # type: ignore[arg-type]


def _validators(response: HttpResponse, keep: FetchItem | None = None) -> dict[str, str]:
    """ETag and Last-Modified as sent; on a 304 without them, the old ones stay."""
    etag = response.headers.get("etag", "")
    modified = response.headers.get("last-modified", "")
    if keep is not None:
        return {k: v for k, v in (("etag", etag), ("last_modified", modified)) if v}
    return {"etag": etag, "last_modified": modified}


def stored_rule(row: HostRow, user_agent: str, now: datetime, max_age: int) -> RobotsRule | None:
    """The robots.txt rule a host row holds, or None when it must be fetched again."""
    if row.robots_status is None or row.robots_fetch_time is None:
        return None
    if row.robots_status is RobotsStatus.ERROR:
        if row.robots_retry_at is None or row.robots_retry_at <= now:
            return None
        return RobotsRule(RobotsPolicy.from_text(RobotsStatus.ERROR, None, user_agent),
                          retry_at=row.robots_retry_at, error="robots.txt failing")
    if row.robots_fetch_time + timedelta(seconds=max_age) <= now:
        return None
    policy = RobotsPolicy.from_text(row.robots_status, row.robots_text, user_agent)
    return RobotsRule(policy, crawl_delay=policy.crawl_delay)


# -------------------------------------------------------------- feeding ---


def _batch_filter(batch_id: str, partition: tuple[int, int] | None) -> str:
    text = equals_filter(WebPage, "generate_mark", batch_id)
    if partition is not None:
        text += " AND " + equals_filter(WebPage, "partition", partition[0])
    return text


def read_batch(store: Store, batch_id: str, partition: tuple[int, int] | None,
               chunk: int = 1000) -> Iterator[tuple[bytes, WebPage]]:
    """The batch's rows (this partition's), in key order, each chunk through a fresh scanner.

    Rows whose cells cannot be decoded are logged and skipped.
    """
    columns = column_names(WebPage, _READ_FIELDS)
    row_filter = _batch_filter(batch_id, partition)
    start = b""
    while True:
        rows = list(store.scan(WEBPAGE_TABLE, start=start, columns=columns, filter=row_filter, limit=chunk))
        for key, cells in rows:
            try:
                yield key, decode(WebPage, urls.url_from_row_key(key.decode("utf-8")), cells)
            except (InvalidUrlError, CellDecodeError, UnicodeDecodeError) as exc:
                log.warning("fetch: skipping row %r: %s", key[:200], exc)
        if len(rows) < chunk:
            return
        start = rows[-1][0] + b"\x00"


class _Resolver:
    """Host name -> IP address, cached (for `queue_by = ip`); the name itself when unresolvable."""

    def __init__(self) -> None:
        self._cache: dict[str, str] = {}

    def __call__(self, host: str) -> str:
        if host not in self._cache:
            try:
                self._cache[host] = str(socket.getaddrinfo(host.strip("[]"), None)[0][4][0])
            except (OSError, UnicodeError):
                self._cache[host] = host
        return self._cache[host]


# --------------------------------------------------------------- the run ---


class _Run:
    """The state of one fetch run shared by the worker threads."""

    def __init__(self, store: Store, client: SingleRequestClient, rules: UrlRules, options: FetchOptions,
                 now: Callable[[], datetime]) -> None:
        self.store = store
        self.client = client
        self.rules = rules
        self.settings = rules.settings
        self.options = options
        self.now = now
        self.user_agent = rules.settings.user_agent or ""
        self.queues: FetchQueues[FetchItem | RobotsItem] = FetchQueues(options.delay, options.threads_per_host)
        self.robots: dict[str, RobotsRule] = {}
        self.robots_pending: set[str] = set()
        self.seen: set[str] = set()
        self.lock = threading.Lock()
        self.outcomes: list[Outcome] = []
        self.host_rows: list[HostRow] = []
        self.unwritten: list[Outcome] = []
        self.unwritten_hosts: list[HostRow] = []
        self.counts = FetchCounts(options.batch_id)
        self.resolve = _Resolver()

    # ------------------------------------------------------------ feeding --

    def queue_key(self, host: str) -> Hashable:
        return self.resolve(host) if self.options.queue_by is QueueBy.IP else host

    def item_for(self, row: WebPage, key: bytes) -> FetchItem:
        host = urls.host_key(row.url, self.rules.canonical)
        fetched_before = row.fetch_time is not None and row.status in (FetchStatus.FETCHED,
                                                                       FetchStatus.NOT_MODIFIED)
        return FetchItem(
            row.url, key, urls.origin(row.url, self.rules.canonical), host, self.queue_key(host),
            is_sitemap=bool(row.is_sitemap), etag=row.etag, last_modified=row.last_modified,
            signature=row.signature, fetch_time=row.fetch_time, retries=row.retries or 0,
            conditional=fetched_before, partition=row.partition, score=row.score, depth=row.depth,
            radius=row.radius,
        )

    def feed(self) -> None:
        """Read the batch into the queues, robots.txt first where it is needed."""
        items: list[FetchItem] = []
        for key, row in read_batch(self.store, self.options.batch_id, self.options.partition,
                                   chunk=self.settings.hbase_batch_size):
            self.seen.add(row.url)
            if row.fetch_mark == self.options.batch_id:
                self.counts.already_done += 1
                continue
            try:
                items.append(self.item_for(row, key))
            except InvalidUrlError as exc:
                log.warning("fetch: skipping %s: %s", row.url, exc)
        self.counts.total = len(items)
        self.load_robots({item.origin: item.queue for item in items})
        for item in items:
            self.queues.add(item.queue, item)

    def load_robots(self, origins: dict[str, Hashable]) -> None:
        keys = {origin_key(origin): origin for origin in origins}
        found = self.store.rows(HOST_TABLE, list(keys), columns=column_names(HostRow, _ROBOTS_FIELDS))
        now = self.now()
        for key, origin in keys.items():
            cells = found.get(key)
            rule = None
            if cells:
                try:
                    rule = stored_rule(decode(HostRow, origin, cells), self.user_agent, now,
                                       self.settings.robots_max_age)
                except CellDecodeError as exc:
                    log.warning("fetch: host row of %s unreadable (%s); fetching robots.txt again", origin, exc)
            if rule is None:
                self.robots_pending.add(origin)
                self.queues.add(origins[origin], RobotsItem(origin))
            else:
                self.adopt(origin, origins[origin], rule)

    def adopt(self, origin: str, queue: Hashable, rule: RobotsRule) -> None:
        """Start using a robots.txt rule; a Crawl-delay within the cap slows the queue."""
        with self.lock:
            self.robots[origin] = rule
            self.robots_pending.discard(origin)
        delay = rule.crawl_delay
        if delay is not None and delay <= self.settings.max_crawl_delay and delay > self.queues.delay(queue):
            self.queues.set_delay(queue, delay)

    # ------------------------------------------------------------ working --

    def work(self) -> None:
        """One worker thread: take ready items until the queues are finished or closed."""
        while True:
            lease = self.queues.take(timeout=0.5)
            if lease is None:
                if self.queues.finished or self.queues.closed:
                    return
                continue
            try:
                item = lease.item
                if isinstance(item, RobotsItem):
                    self.fetch_robots(lease, item)
                else:
                    self.fetch_page(lease, item)
            except Exception:
                # A bug must not hang the run: give the slot back and go on. An
                # origin whose robots.txt could not be handled is treated as
                # failing, so its URLs are deferred instead of waiting forever.
                log.exception("fetch: unexpected error on %s", lease.item)
                if isinstance(lease.item, RobotsItem):
                    retry_at = self.now() + timedelta(seconds=self.settings.robots_retry_interval)
                    policy = RobotsPolicy.from_text(RobotsStatus.ERROR, None, self.user_agent)
                    self.adopt(lease.item.origin, lease.key,
                               RobotsRule(policy, retry_at=retry_at, error="robots.txt could not be read"))
                self.queues.release(lease)

    def fetch_robots(self, lease: Lease[FetchItem | RobotsItem], item: RobotsItem) -> None:
        report = check_origin(item.origin, self.client, self.rules, probe_known_paths=False)
        ended = time.monotonic()
        now = self.now()
        policy = RobotsPolicy.from_text(report.robots_status, report.robots_text, self.user_agent)
        host_row = robots_host_row(report, now, self.settings.robots_retry_interval)
        failing = report.robots_status is RobotsStatus.ERROR
        rule = RobotsRule(policy, crawl_delay=report.crawl_delay,
                          retry_at=host_row.robots_retry_at if failing else None,
                          error=f"robots.txt failing: {report.error}" if failing else None)
        self.adopt(item.origin, lease.key, rule)
        with self.lock:
            self.host_rows.append(host_row)
            self.counts.robots_fetched += 1
            self.counts.requests += 1
        self.queues.release(lease, ended=ended)

    def fetch_page(self, lease: Lease[FetchItem | RobotsItem], item: FetchItem) -> None:
        with self.lock:
            rule = self.robots.get(item.origin)
            needs_robots = rule is None and item.origin not in self.robots_pending
            if needs_robots:
                self.robots_pending.add(item.origin)
        if rule is None:
            # robots.txt of this origin is not known yet (a redirect hop, or
            # fetched right now by another slot): first robots.txt, then this.
            self.queues.add(lease.key, item, front=True)
            if needs_robots:
                self.queues.add(lease.key, RobotsItem(item.origin), front=True)
            self.queues.release(lease, pause=0.0 if needs_robots else 0.05)
            return
        now = self.now()
        if rule.error is not None:
            self.queues.release(lease)
            self.record(item, WebPage(item.url, status=FetchStatus.DEFERRED, error=rule.error, fetch_time=now,
                                      next_fetch=rule.retry_at))
            return
        if not rule.policy.allowed(item.url):
            self.queues.release(lease)
            self.record(item, WebPage(item.url, status=FetchStatus.BLOCKED_ROBOTS, fetch_time=now,
                                      error="disallowed by robots.txt"))
            return
        if rule.crawl_delay is not None and rule.crawl_delay > self.settings.max_crawl_delay:
            self.queues.release(lease)
            self.defer_origin(lease.key, item, rule.crawl_delay, now)
            return
        max_bytes = self.settings.max_sitemap_bytes if item.is_sitemap else self.settings.max_content_bytes
        headers = conditional_headers(item.etag, item.last_modified) if item.conditional else {}
        response = self.client.fetch_one(item.url, headers=headers, max_bytes=max_bytes)
        self.queues.release(lease, ended=time.monotonic())
        now = self.now()
        row = outcome_row(item, response, now, self.settings, self.options.store_content)
        with self.lock:
            self.counts.requests += 1
            self.counts.bytes += len(response.body)
        if row.status is FetchStatus.REDIRECT and row.redirect_to:
            row = self.redirect(lease.key, item, row, now)
        self.record(item, row)

    def defer_origin(self, queue: Hashable, item: FetchItem, delay: float, now: datetime) -> None:
        """Crawl-delay over the cap: this URL and the origin's waiting ones are deferred."""
        error = f"robots.txt Crawl-delay {delay:g} s is over the cap of {self.settings.max_crawl_delay:g} s"
        later = now + timedelta(seconds=self.settings.deferred_interval)
        waiting = self.queues.remove(queue, lambda it: isinstance(it, FetchItem) and it.origin == item.origin)
        for deferred in [item, *waiting]:
            assert isinstance(deferred, FetchItem)
            self.record(deferred, WebPage(deferred.url, status=FetchStatus.DEFERRED, error=error, fetch_time=now,
                                          next_fetch=later))

    def redirect(self, queue: Hashable, item: FetchItem, row: WebPage, now: datetime) -> WebPage:
        """Follow a same-host redirect in this queue, or make the target a new row."""
        assert row.redirect_to is not None
        try:
            target = urls.canonicalize(row.redirect_to, self.rules.canonical)
            why = self.rules.url_filter.reason(target)
        except InvalidUrlError as exc:
            return _with(row, error=f"redirect target unusable: {exc}")
        row = _with(row, redirect_to=target)
        if why is not None:
            return _with(row, error=f"redirect target filtered: {why}")
        chain = (*item.chain, item.url)
        if target in chain:
            return _with(row, error="redirect loop")
        target_host = urls.host_key(target, self.rules.canonical)
        defaults = WebPage(target, status=FetchStatus.UNFETCHED, next_fetch=now,
                           fetch_interval=self.settings.default_fetch_interval, score=item.score,
                           depth=item.depth, radius=item.radius)
        if item.is_sitemap:
            # A sitemap that moved stays a sitemap; parse scopes it by who vouched for its source.
            defaults = _with(defaults, sitemap_source=SitemapSource.REDIRECT)
        if target_host != item.host:
            marks = WebPage(target, is_sitemap=True) if item.is_sitemap else WebPage(target)
            with self.lock:
                self.outcomes.append(Outcome(urls.row_key(target).encode(), marks, defaults))
            return row
        if len(chain) > self.settings.max_redirects:
            return _with(row, error=f"more than {self.settings.max_redirects} redirects")
        with self.lock:
            if target in self.seen:
                return row  # in the batch anyway, or fetched already: not twice
            self.seen.add(target)
            self.counts.redirects_followed += 1
            self.counts.total += 1
        hop = FetchItem(target, urls.row_key(target).encode(), urls.origin(target, self.rules.canonical),
                        target_host, queue, is_sitemap=item.is_sitemap, partition=item.partition,
                        score=item.score, depth=item.depth, radius=item.radius, chain=chain)
        self.queues.add(queue, hop, front=True)
        return row

    def record(self, item: FetchItem, row: WebPage) -> None:
        """Queue a finished URL's cells (with the batch marks) for the writer."""
        batch = self.options.batch_id
        marks: dict[str, object] = {"fetch_mark": batch}
        if_new = None
        if item.chain:  # a redirect hop joins the batch
            marks.update(generate_mark=batch, batch_id=batch, partition=item.partition)
            if_new = WebPage(item.url, next_fetch=self.now(), fetch_interval=self.settings.default_fetch_interval,
                             score=item.score, depth=item.depth, radius=item.radius)
            if item.is_sitemap:
                # The redirect inlink updatedb would write, now: parse (this batch) reads who
                # vouched for the source from it.
                depth = item.depth if item.depth is not None else self.settings.seed_depth
                radius = item.radius if item.radius is not None else self.settings.seed_radius
                link = format_inlink(Inlink(InlinkKind.REDIRECT, depth, radius, batch))
                marks.update(is_sitemap=True, inlinks={item.chain[-1]: link})
                if_new = _with(if_new, sitemap_source=SitemapSource.REDIRECT)
        row = _with(row, **marks)
        status = row.status.value if row.status else "unknown"
        with self.lock:
            self.outcomes.append(Outcome(item.key, row, if_new))
            self.counts.done += 1
            self.counts.by_status[status] += 1
            self.counts.by_host.setdefault(item.host, Counter())[status] += 1

    # ------------------------------------------------------------ writing --

    def flush(self) -> None:
        """Write what finished. Taken outcomes stay until written, so an
        interrupted write is sent again by the next flush (puts are idempotent)."""
        with self.lock:
            self.unwritten.extend(self.outcomes)
            self.unwritten_hosts.extend(self.host_rows)
            self.outcomes, self.host_rows = [], []
        self.write(self.unwritten, self.unwritten_hosts)
        self.unwritten, self.unwritten_hosts = [], []

    def write(self, outcomes: list[Outcome], host_rows: list[HostRow]) -> None:
        """Write outcomes; rows that must exist first get their defaults when they do not."""
        if host_rows:
            self.store.write(HOST_TABLE, [(origin_key(r.origin), encode(r)) for r in host_rows])
        if not outcomes:
            return
        maybe_new = [o.key for o in outcomes if o.if_new is not None]
        existing = set(self.store.rows(WEBPAGE_TABLE, maybe_new, columns=column_names(WebPage, ["status"])))
        puts = []
        for outcome in outcomes:
            cells = {}
            if outcome.if_new is not None and outcome.key not in existing:
                cells.update(encode(outcome.if_new))
                existing.add(outcome.key)
                with self.lock:
                    self.counts.new_rows += 1
            cells.update(encode(outcome.row))
            if cells:
                puts.append((outcome.key, cells))
        self.store.write(WEBPAGE_TABLE, puts)


def _with(row: WebPage, **changes: object) -> WebPage:
    return replace(row, **changes)  # type: ignore[arg-type]


class _Monitor:
    """Decides when to stop handing out URLs: time limit, throughput."""

    def __init__(self, options: FetchOptions, started: float) -> None:
        self.options = options
        self.started = started
        self.window_start = started
        self.window_done = 0

    def reason_to_stop(self, now: float, done: int) -> str | None:
        options = self.options
        if options.time_limit is not None and now - self.started >= options.time_limit:
            return f"time limit of {options.time_limit:g} s"
        if options.min_throughput is None or now - self.started < options.warmup:
            return None
        if now - self.window_start >= options.throughput_window:
            rate = (done - self.window_done) / (now - self.window_start)
            self.window_start, self.window_done = now, done
            if rate < options.min_throughput:
                return f"throughput {rate:.2f} pages/s below {options.min_throughput:g}"
        return None


def fetch(
    store: Store,
    client: SingleRequestClient,
    rules: UrlRules,
    options: FetchOptions,
    *,
    on_progress: Callable[[FetchProgress], None] = lambda progress: None,
    now: Callable[[], datetime] | None = None,
) -> FetchCounts:
    """Fetch the batch (or one partition of it); return the counts (see the module docstring).

    Per-URL failures are data on the rows. Raises UsageError (bad options, no
    user agent), TableMissingError or StoreUnavailableError. A
    KeyboardInterrupt stops the run cleanly (outcomes written, `stopped` set)
    instead of propagating; a second one stops waiting for requests in flight.
    """
    options.check()
    if not rules.settings.user_agent:
        raise UsageError("a user agent is required to fetch: pass --user-agent, set "
                         "SITEMAPCRAWL_USER_AGENT, or set user_agent in the config file")
    store.require_tables(WEBPAGE_TABLE, HOST_TABLE)
    clock = now or (lambda: datetime.now(UTC).replace(microsecond=0))
    run = _Run(store, client, rules, options, clock)
    started = time.monotonic()
    run.feed()
    counts = run.counts
    if counts.total == 0:
        log.info("fetch: %s", counts.summary())
        return counts
    workers = [threading.Thread(target=run.work, name=f"fetch-{i}", daemon=True)
               for i in range(min(options.threads, max(1, run.queues.pending)))]
    for worker in workers:
        worker.start()
    monitor = _Monitor(options, started)
    last_write = time.monotonic()
    try:
        while any(w.is_alive() for w in workers):
            workers[0].join(0.2)
            tick = time.monotonic()
            with run.lock:
                waiting = len(run.outcomes)
            if waiting >= run.settings.hbase_batch_size or tick - last_write >= 1.0:
                run.flush()
                last_write = tick
            reason = counts.stopped or monitor.reason_to_stop(tick, counts.done)
            if reason and not counts.stopped:
                counts.stopped = reason
                run.queues.close()
            on_progress(_progress(run, tick - started))
    except KeyboardInterrupt:
        counts.stopped = "interrupted"
        run.queues.close()
        try:
            for worker in workers:
                worker.join()
        except KeyboardInterrupt:
            log.warning("fetch: not waiting for requests in flight")
    finally:
        run.flush()
        counts.seconds = time.monotonic() - started
    on_progress(_progress(run, counts.seconds))
    log.info("fetch: %s", counts.summary())
    return counts


def _progress(run: _Run, elapsed: float) -> FetchProgress:
    counts = run.counts
    return FetchProgress(counts.done, counts.total, counts.done / elapsed if elapsed > 0 else 0.0,
                         counts.bytes, counts.errors, run.queues.active_queues())
