"""Working a fetch: worker threads take ready items, make the requests and record the facts.

`Worker.request` is the one place a page request is made: robots.txt checked
first (fetched as its queue's first request when the table has no fresh
copy, by the same code `detect` runs), the user agent, timeouts, the body
caps, a conditional GET, redirects followed within the host's queue. It
records facts only (status, HTTP code, validators, signature, retries,
errors, `retry_at`); the next fetch time is `sitemapcrawl.model.schedule`'s,
which updatedb runs. What each outcome means: docs/commands.md, fetch.

Cost: one request per item (plus one per redirect hop and per missing
robots.txt); memory of the bodies in flight, each capped.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
import zlib
from collections import Counter
from collections.abc import Callable, Hashable
from dataclasses import replace
from datetime import datetime, timedelta
from urllib.parse import urljoin

from sitemapcrawl.config import Settings
from sitemapcrawl.errors import InvalidUrlError
from sitemapcrawl.fetcher.model import FetchCounts, FetchItem, FetchOptions, RobotsItem, RobotsRule
from sitemapcrawl.fetcher.pacing import Pacing
from sitemapcrawl.fetcher.queues import FetchQueues, Lease
from sitemapcrawl.fetcher.write import Outcome, Writer
from sitemapcrawl.model.linkvalues import Inlink, InlinkKind, format_inlink
from sitemapcrawl.model.newrows import new_page
from sitemapcrawl.model.schedule import SchedulePolicy, after_failure
from sitemapcrawl.model.webpage import FetchStatus, RobotsStatus, SitemapSource, WebPage
from sitemapcrawl.storage.politeness import SLOW_DOWN_CODES, retry_after_seconds
from sitemapcrawl.web import rowkeys, urls
from sitemapcrawl.web.http import HttpResponse, SingleRequestClient, conditional_headers
from sitemapcrawl.web.robots import RobotsPolicy
from sitemapcrawl.web.robots_txt import check_origin, robots_host_row
from sitemapcrawl.web.rules import UrlRules

log = logging.getLogger(__name__)

_REDIRECT_CODES = frozenset({301, 302, 303, 307, 308})
_RETRY_CODES = frozenset({408, 429})
#: Room left in a cell for the row key, family and qualifier.
_CELL_MARGIN = 1024


# ------------------------------------------------------------ outcomes ---


def retry_or_gone(item: FetchItem, settings: Settings, error: str) -> dict[str, object]:
    """The fields of a failed fetch: retry, or gone after `max_fetch_retries` in a row (no next fetch time)."""
    status, retries = after_failure(item.retries, SchedulePolicy.from_settings(settings))
    return {"status": status, "retries": retries, "error": error}


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
        # The cell limit, and the row limit we keep ourselves to (`max_row_bytes`), whichever is lower.
        cap = min(settings.max_cell_bytes, settings.max_row_bytes)
        limit = cap - _CELL_MARGIN
        # gzip never grows data by more than a few bytes per 16 KiB block.
        size = len(body) if len(body) + len(body) // 1000 + 64 <= limit else len(zlib.compress(body, 6)) + 18
        if size > limit:
            fields["status"] = FetchStatus.TOO_LARGE
            fields["error"] = (f"compressed body of {size} bytes is over the cell limit of {cap} bytes "
                               "(the lower of max_cell_bytes and max_row_bytes); not stored")
        else:
            fields["content"] = body
    return fields


def outcome_row(item: FetchItem, response: HttpResponse, now: datetime, settings: Settings,
                store_content: bool) -> WebPage:
    """The facts one HTTP answer gives (no marks, no redirect following, no next fetch time)."""
    common: dict[str, object] = {"fetch_time": now, "error": "", "redirect_to": ""}
    if item.fetch_time is not None:
        common["prev_fetch_time"] = item.fetch_time
    code = response.status
    fields: dict[str, object] = dict(common)
    if response.capture is not None:
        fields.update(_capture_fields(response))
    if code is None:
        fields.update(retry_or_gone(item, settings, response.error or "no answer"))
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
        fields.update(retry_or_gone(item, settings, f"HTTP {code}"))
        asked = retry_after_seconds(response.headers.get("retry-after"), now) if code in SLOW_DOWN_CODES else None
        if asked:
            fields["retry_at"] = now + timedelta(seconds=asked)
    else:
        fields.update(status=FetchStatus.GONE, retries=0, error=f"HTTP {code}")
    return WebPage(item.url, **fields)  # type: ignore[arg-type]


def _capture_fields(response: HttpResponse) -> dict[str, object]:
    """Where the answer's WARC record is; a response record (not a revisit) is also what later revisits refer to."""
    capture = response.capture
    assert capture is not None
    fields: dict[str, object] = {"warc_file": capture.file, "warc_offset": capture.offset}
    if not capture.revisit:
        fields.update(warc_record=capture.record_id, warc_date=capture.date)
    return fields


def _validators(response: HttpResponse, keep: FetchItem | None = None) -> dict[str, str]:
    """ETag and Last-Modified as sent; on a 304 without them, the old ones stay."""
    etag = response.headers.get("etag", "")
    modified = response.headers.get("last-modified", "")
    if keep is not None:
        return {k: v for k, v in (("etag", etag), ("last_modified", modified)) if v}
    return {"etag": etag, "last_modified": modified}


def _with(row: WebPage, **changes: object) -> WebPage:
    return replace(row, **changes)  # type: ignore[arg-type]


# -------------------------------------------------------------- workers ---


class Worker:
    """What the worker threads of one run share: queues, robots.txt rules, counts (see the module docstring).

    `work` is the body of each thread. Counts and rules change under one lock;
    the queues, the pacing and the writer have their own.
    """

    def __init__(self, client: SingleRequestClient, rules: UrlRules, options: FetchOptions,
                 queues: FetchQueues[FetchItem | RobotsItem], pacing: Pacing, writer: Writer, counts: FetchCounts,
                 seen: set[str], now: Callable[[], datetime]) -> None:
        self.client = client
        self.rules = rules
        self.settings = rules.settings
        self.options = options
        self.queues = queues
        self.pacing = pacing
        self.writer = writer
        self.counts = counts
        self.seen = seen
        self.now = now
        self.user_agent = rules.settings.user_agent or ""
        self.longest_robots = (self.settings.max_redirects + 1) * (self.settings.http_deadline + self.settings.delay)
        """The longest a robots.txt request may take: each redirect hop has its own deadline and delay."""
        self.lock = threading.Lock()
        self.robots: dict[str, RobotsRule] = {}
        self.robots_pending: set[str] = set()

    def expect_robots(self, origins: list[str]) -> None:
        """These origins' robots.txt items are queued: their URLs wait for them."""
        with self.lock:
            self.robots_pending.update(origins)

    def adopt(self, origin: str, queue: Hashable, rule: RobotsRule) -> None:
        """Start using a robots.txt rule; a Crawl-delay within the cap slows the queue."""
        with self.lock:
            self.robots[origin] = rule
            self.robots_pending.discard(origin)
        delay = rule.crawl_delay
        if delay is not None and delay <= self.settings.max_crawl_delay:
            self.pacing.raise_delay(queue, delay)

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

    def held_back(self, lease: Lease[FetchItem | RobotsItem], item: FetchItem | RobotsItem) -> bool:
        """While HBase takes no writes (`Writer.ready`), put the item back and say True: no request now."""
        if self.writer.ready():
            return False
        self.queues.add(lease.key, item, front=True)
        self.queues.release(lease, pause=0.2)
        return True

    def fetch_robots(self, lease: Lease[FetchItem | RobotsItem], item: RobotsItem) -> None:
        """Fetch an origin's robots.txt (the first request of its queue) and start using it."""
        if self.held_back(lease, item):
            return
        if not self.pacing.begin(lease.key, self.longest_robots):
            self.queues.release(lease)  # the run is stopping: no new request
            return
        try:
            report = check_origin(item.origin, self.client, self.rules, probe_known_paths=False)
        except Exception:
            self.pacing.answered(lease.key, None, None)  # it ended, whatever went wrong (see `work`)
            raise
        self.pacing.answered(lease.key, report.http_code, None)
        ended = time.monotonic()
        now = self.now()
        policy = RobotsPolicy.from_text(report.robots_status, report.robots_text, self.user_agent)
        host_row = robots_host_row(report, now, self.settings.robots_retry_interval)
        failing = report.robots_status is RobotsStatus.ERROR
        rule = RobotsRule(policy, crawl_delay=report.crawl_delay,
                          retry_at=host_row.robots_retry_at if failing else None,
                          error=f"robots.txt failing: {report.error}" if failing else None)
        self.adopt(item.origin, lease.key, rule)
        self.writer.add_host_row(host_row)
        with self.lock:
            self.counts.robots_fetched += 1
            self.counts.requests += 1
        self.queues.release(lease, ended=ended)

    def fetch_page(self, lease: Lease[FetchItem | RobotsItem], item: FetchItem) -> None:
        """Check a URL against robots.txt and the crawl delay cap, fetch it, record the facts."""
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
                                      retry_at=rule.retry_at))
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
        if self.held_back(lease, item):
            return
        if not self.pacing.begin(lease.key, self.settings.http_deadline):
            self.queues.release(lease)  # the run is stopping: no new request, the row stays as it was
            return
        response = self.request(item)
        self.pacing.answered(lease.key, response.status, response.headers.get("retry-after"))
        self.queues.release(lease, ended=time.monotonic())
        now = self.now()
        row = outcome_row(item, response, now, self.settings, self.options.store_content)
        with self.lock:
            self.counts.requests += 1
            self.counts.bytes += len(response.body)
        if row.status is FetchStatus.REDIRECT and row.redirect_to:
            row = self.redirect(lease.key, item, row, now)
        self.record(item, row)

    def request(self, item: FetchItem) -> HttpResponse:
        """The one place a page request is made: its size cap and conditional headers."""
        max_bytes = self.settings.max_sitemap_bytes if item.is_sitemap else self.settings.max_content_bytes
        headers = conditional_headers(item.etag, item.last_modified) if item.conditional else {}
        return self.client.fetch_one(item.url, headers=headers, max_bytes=max_bytes, refers=item.earlier)

    def defer_origin(self, queue: Hashable, item: FetchItem, delay: float, now: datetime) -> None:
        """Crawl-delay over the cap: this URL and the origin's waiting ones are deferred."""
        error = f"robots.txt Crawl-delay {delay:g} s is over the cap of {self.settings.max_crawl_delay:g} s"
        waiting = self.queues.remove(queue, lambda it: isinstance(it, FetchItem) and it.origin == item.origin)
        for deferred in [item, *waiting]:
            assert isinstance(deferred, FetchItem)
            self.record(deferred, WebPage(deferred.url, status=FetchStatus.DEFERRED, error=error, fetch_time=now))

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
        defaults = new_page(target, now, self.settings.default_fetch_interval, score=item.score,
                            depth=item.depth, radius=item.radius)
        if item.is_sitemap:
            # A sitemap that moved stays a sitemap; parse scopes it by who vouched for its source.
            defaults = _with(defaults, sitemap_source=SitemapSource.REDIRECT)
        if target_host != item.host:
            marks = WebPage(target, is_sitemap=True) if item.is_sitemap else WebPage(target)
            self.writer.add(Outcome(rowkeys.row_key(target).encode(), marks, defaults))
            return row
        if len(chain) > self.settings.max_redirects:
            return _with(row, error=f"more than {self.settings.max_redirects} redirects")
        with self.lock:
            if target in self.seen:
                return row  # in the batch anyway, or fetched already: not twice
            self.seen.add(target)
            self.counts.redirects_followed += 1
            self.counts.total += 1
        hop = FetchItem(target, rowkeys.row_key(target).encode(), urls.origin(target, self.rules.canonical),
                        target_host, queue, is_sitemap=item.is_sitemap, partition=item.partition,
                        score=item.score, depth=item.depth, radius=item.radius, chain=chain)
        self.queues.add(queue, hop, front=True)
        return row

    def record(self, item: FetchItem, row: WebPage) -> None:
        """Hand a finished URL's facts (with the batch marks) to the writer."""
        batch = self.options.batch_id
        marks: dict[str, object] = {"fetch_mark": batch}
        if_new = None
        if item.chain:  # a redirect hop joins the batch
            marks.update(generate_mark=batch, batch_id=batch, partition=item.partition)
            # Its status comes from `row` (the outcome), which the writer puts over these.
            if_new = new_page(item.url, self.now(), self.settings.default_fetch_interval, score=item.score,
                              depth=item.depth, radius=item.radius)
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
        self.writer.add(Outcome(item.key, row, if_new), at_once=self.pacing.paced(item.queue))
        with self.lock:
            self.counts.done += 1
            self.counts.by_status[status] += 1
            self.counts.by_host.setdefault(item.host, Counter())[status] += 1
