"""Feeding a fetch: the batch's rows become items in politeness queues, robots.txt first where needed.

The rows of the batch (of fetch split K with `--split K/N`) are read in
chunks, each through a fresh short scanner (a long-lived one would expire
while the queues are busy): the member records in `batchrow`, then a
multi-get of their `webpage` rows; rows already fetched in this batch are
skipped, so a fetch is resumable. They go into one queue per politeness
key. The `host` row of each origin is the robots.txt cache (fetched again as
the queue's first request when missing, stale or failing past its retry
time), and each key's stored politeness state decides when its queue may
start (`fetcher.pacing.Pacing.start`).

Cost: proportional to the split's part of the batch: one range scan of
its records and one multi-get per `hbase_batch_size` rows; one multi-get of
host rows and one of politeness rows. Memory: a few hundred bytes per URL.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sitemapcrawl.errors import CellDecodeError, InvalidUrlError
from sitemapcrawl.fetcher.model import FetchCounts, FetchItem, FetchOptions, RobotsItem, RobotsRule
from sitemapcrawl.model.cells import column_names, decode
from sitemapcrawl.model.webpage import HOST_TABLE, FetchStatus, HostRow, RobotsStatus, WebPage
from sitemapcrawl.storage.batchrecords import batch_rows
from sitemapcrawl.storage.hosts import origin_key
from sitemapcrawl.storage.politeness import Resolver, queue_key
from sitemapcrawl.storage.store import Store
from sitemapcrawl.storage.tables import Unreadable
from sitemapcrawl.web import urls
from sitemapcrawl.web.robots import RobotsPolicy
from sitemapcrawl.web.rules import UrlRules
from sitemapcrawl.web.warc import Capture

log = logging.getLogger(__name__)

_READ_FIELDS = [
    "status", "fetch_time", "etag", "last_modified", "signature", "retries", "is_sitemap",
    "fetch_mark", "generate_mark", "fetch_split", "score", "depth", "radius",
    "warc_file", "warc_offset", "warc_record", "warc_date",
]
_ROBOTS_FIELDS = ["robots_fetch_time", "robots_status", "robots_retry_at", "robots_text", "crawl_delay"]


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


def read_batch(store: Store, batch_id: str, fetch_split: tuple[int, int] | None,
               chunk: int = 1000) -> Iterator[tuple[bytes, WebPage]]:
    """The batch's rows (this fetch split's), a host's rows in key order, chunk by chunk (`batchrecords.batch_rows`).

    Rows that cannot be decoded are logged and skipped.
    """
    unreadable = Unreadable()
    for rows in batch_rows(store, "generate_mark", batch_id, _READ_FIELDS, chunk, "fetch", unreadable,
                           fetch_split=fetch_split[0] if fetch_split is not None else None):
        yield from rows


@dataclass
class Feed:
    """What feeding found: the items, the robots.txt rules known, and what each queue key needs."""

    items: list[FetchItem] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    """Every URL of the batch (a redirect hop to one of them is not fetched twice)."""
    queues: dict[str, Hashable] = field(default_factory=dict)
    """Origin -> its queue key."""
    rules: dict[str, RobotsRule] = field(default_factory=dict)
    """Origin -> a robots.txt rule still fresh in the table."""
    robots_needed: dict[str, Hashable] = field(default_factory=dict)
    """Origin -> its queue, for origins whose robots.txt must be fetched first."""
    known_delays: dict[Hashable, float] = field(default_factory=dict)
    """Queue key -> the largest Crawl-delay (within the cap) its origins' host rows give, even stale ones."""


def item_for(row: WebPage, key: bytes, rules: UrlRules, queue: Hashable) -> FetchItem:
    """The fetch item of a batch row; InvalidUrlError for a URL without a usable host."""
    host = urls.host_key(row.url, rules.canonical)
    fetched_before = row.fetch_time is not None and row.status in (FetchStatus.FETCHED, FetchStatus.NOT_MODIFIED)
    return FetchItem(
        row.url, key, urls.origin(row.url, rules.canonical), host, queue,
        is_sitemap=bool(row.is_sitemap), etag=row.etag, last_modified=row.last_modified,
        signature=row.signature, fetch_time=row.fetch_time, retries=row.retries or 0,
        conditional=fetched_before, fetch_split=row.fetch_split, score=row.score, depth=row.depth,
        radius=row.radius, earlier=_earlier(row),
    )


def _earlier(row: WebPage) -> Capture | None:
    """The row's latest WARC response record, if one was written (`fetch --warc`)."""
    if not row.warc_record or not row.warc_date:
        return None
    return Capture(row.warc_file or "", row.warc_offset or 0, row.warc_record, row.warc_date)


def read_feed(store: Store, rules: UrlRules, options: FetchOptions, counts: FetchCounts, resolve: Resolver,
              now: datetime) -> Feed:
    """Read the batch and the robots.txt rules of its origins (known and fresh at `now`; see the module docstring)."""
    feed = Feed()
    for key, row in read_batch(store, options.batch_id, options.fetch_split, chunk=rules.settings.hbase_batch_size):
        feed.seen.add(row.url)
        if row.fetch_mark == options.batch_id:
            counts.already_done += 1
            continue
        try:
            host = urls.host_key(row.url, rules.canonical)
            feed.items.append(item_for(row, key, rules, queue_key(host, options.queue_by, resolve)))
        except InvalidUrlError as exc:
            log.warning("fetch: skipping %s: %s", row.url, exc)
    counts.total = len(feed.items)
    feed.queues = {item.origin: item.queue for item in feed.items}
    _load_robots(store, rules, feed, feed.queues, now)
    return feed


def _load_robots(store: Store, rules: UrlRules, feed: Feed, origins: dict[str, Hashable], now: datetime) -> None:
    settings = rules.settings
    user_agent = settings.user_agent or ""
    keys = {origin_key(origin): origin for origin in origins}
    found = store.rows(HOST_TABLE, list(keys), columns=column_names(HostRow, _ROBOTS_FIELDS))
    for key, origin in keys.items():
        queue = origins[origin]
        cells = found.get(key)
        rule = None
        if cells:
            try:
                row = decode(HostRow, origin, cells)
            except CellDecodeError as exc:
                log.warning("fetch: host row of %s unreadable (%s); fetching robots.txt again", origin, exc)
            else:
                rule = stored_rule(row, user_agent, now, settings.robots_max_age)
                if row.crawl_delay is not None and row.crawl_delay <= settings.max_crawl_delay:
                    feed.known_delays[queue] = max(feed.known_delays.get(queue, 0.0), row.crawl_delay)
        if rule is None:
            feed.robots_needed[origin] = queue
        else:
            feed.rules[origin] = rule


def queue_all(feed: Feed, add: Callable[[Hashable, FetchItem | RobotsItem], None]) -> None:
    """Put the robots.txt items first, then every URL, into the queues."""
    for origin, queue in feed.robots_needed.items():
        add(queue, RobotsItem(origin))
    for item in feed.items:
        add(item.queue, item)
