"""`inject`: seed URLs become rows, without losing what existing rows know.

A seed file has one URL per line, `#` comments, and optional tab-separated
`key=value` metadata (`score`, `fetchInterval`, `depth`, `radius`,
`sitemap=true`, `sitemaps=...`); an injected sitemap is vouched for by the
seed's host (`s:vb`). Bad lines are reported with their number and skipped:
a number not finite or out of its column's range (depth and radius
0..`MAX_HOPS`), or a line that is not valid UTF-8 (readers hand it in
decoded with `surrogateescape`, so the bad bytes are still visible here and
never become another URL). A reason quotes at most `DETAIL_LIMIT`
characters. The rules in full: docs/commands.md, inject.

Streaming: seeds are read, merged with the rows they meet and written in
chunks of `hbase_batch_size`, so a million seeds cost one chunk of memory.
Rows no batch has counted yet are counted as written (`scoring.new_rows`).
Cost per chunk: one multi-get of the existing rows, one batched write, and
the counting's few multi-gets and writes.
"""

from __future__ import annotations

import logging
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime
from itertools import islice
from typing import TypeVar

from sitemapcrawl.clock import Clock, utc_now
from sitemapcrawl.config import MAX_HOPS, MAX_NUMBER, TEN_YEARS, Settings
from sitemapcrawl.errors import InvalidUrlError
from sitemapcrawl.model.cells import encode
from sitemapcrawl.model.newrows import new_page
from sitemapcrawl.model.webpage import DUE_TABLE, WEBPAGE_TABLE, FetchStatus, SitemapSource, WebPage
from sitemapcrawl.safetext import printable
from sitemapcrawl.scoring import new_rows
from sitemapcrawl.sitemaps.scope import format_vouchers, merge_vouchers, parse_vouchers, vouch_host
from sitemapcrawl.storage.dueindex import DUE_FIELDS, write_pages
from sitemapcrawl.storage.store import Store
from sitemapcrawl.storage.tables import Unreadable, read_pages
from sitemapcrawl.web import rowkeys, urls
from sitemapcrawl.web.rules import UrlRules

log = logging.getLogger(__name__)

_TRUE = {"true", "yes", "1"}
_FALSE = {"false", "no", "0"}
_READ_FIELDS = list(dict.fromkeys(["status", "score", "depth", "radius", "is_sitemap", "sitemap_source",
                                   "vouched_by", *DUE_FIELDS, *new_rows.FIELDS]))
#: Characters of a bad line a rejection quotes at most.
DETAIL_LIMIT = 200
#: Bytes that were not UTF-8, as `surrogateescape` decoding keeps them.
_UNDECODABLE = re.compile("[\udc80-\udcff]")


@dataclass(frozen=True)
class Seed:
    """One URL to inject, canonical, with its metadata (None: not given)."""

    url: str
    line: int
    score: float | None = None
    fetch_interval: int | None = None
    depth: int | None = None
    radius: int | None = None
    is_seed: bool = True
    is_sitemap: bool = False
    vouched_by: tuple[str, ...] = ()
    """Hosts that vouch for this sitemap: the host of the seed line that named it."""


@dataclass(frozen=True)
class Rejected:
    """A seed line that was skipped, and why."""

    line: int
    reason: str
    """The kind of problem: `not a URL`, `not UTF-8`, `bad metadata`, `filtered`, `blacklisted`."""
    detail: str


@dataclass
class InjectCounts:
    """What an inject did; `rejected` counts skipped lines by kind of problem."""

    read: int = 0
    injected: int = 0
    updated: int = 0
    sitemaps: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    unreadable: Unreadable = field(default_factory=Unreadable)
    """Stored rows that did not decode: logged, and injected anew (their bad cells overwritten)."""

    def summary(self) -> str:
        """One line for the end of the command."""
        rejected = sum(self.rejected.values())
        kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(self.rejected.items()))
        return (
            f"read {self.read}, injected {self.injected}, updated {self.updated}, "
            f"sitemap rows {self.sitemaps}, rejected {rejected}" + (f" ({kinds})" if kinds else "")
            + (f"; {self.unreadable.rows} unreadable rows injected anew" if self.unreadable.rows else "")
        )


class SeedLineError(ValueError):
    """A seed line that cannot be injected; `reason` is its kind."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


def _number(key: str, value: str, kind: type[int] | type[float], minimum: float, maximum: float) -> float:
    """`value` as a number in `minimum..maximum` (the bounds the row's column reads back); SeedLineError otherwise."""
    try:
        number = kind(value)  # int() refuses more than 4,300 digits: "not a number" too
    except ValueError:
        raise SeedLineError("bad metadata", f"{key}={value!r} is not a number") from None
    if not math.isfinite(number):
        raise SeedLineError("bad metadata", f"{key}={value!r} is not a finite number")
    if not minimum <= number <= maximum:
        raise SeedLineError("bad metadata", f"{key}={value!r} is outside {int(minimum):_}..{int(maximum):_}")
    return number


def _canonical(url: str, rules: UrlRules, what: str) -> str:
    try:
        canonical = urls.canonicalize(url, rules.canonical)
    except InvalidUrlError as exc:
        raise SeedLineError("not a URL", f"{what}: {exc}") from None
    reason = rules.url_filter.reason(canonical)
    if reason is not None:
        raise SeedLineError("filtered", f"{what} {canonical}: {reason}")
    return canonical


def parse_seed_line(text: str, line: int, rules: UrlRules) -> list[Seed]:
    """The seeds one line gives: its URL, then any sitemaps it names.

    Blank and `#` lines give none. Raises SeedLineError for a bad URL, bad
    metadata, a filtered URL, or a blacklisted sitemap.
    """
    bad = _UNDECODABLE.search(text)
    if bad is not None:
        raise SeedLineError("not UTF-8", f"byte 0x{ord(bad.group()) - 0xDC00:02x} at column {bad.start() + 1} "
                            "is not UTF-8; the line is refused, not guessed at")
    text = text.strip()
    if not text or text.startswith("#"):
        return []
    url_text, *pairs = text.split("\t")
    url = _canonical(url_text.strip(), rules, "seed")
    seed = Seed(url, line)
    sitemap_urls: list[str] = []
    for pair in pairs:
        pair = pair.strip()
        if not pair:
            continue
        key, sep, value = pair.partition("=")
        key, value = key.strip(), value.strip()
        if not sep:
            raise SeedLineError("bad metadata", f"{pair!r} is not key=value")
        if key == "score":
            seed = replace(seed, score=_number(key, value, float, -MAX_NUMBER, MAX_NUMBER))
        elif key == "fetchInterval":
            seed = replace(seed, fetch_interval=int(_number(key, value, int, 1, TEN_YEARS)))
        elif key == "depth":
            seed = replace(seed, depth=int(_number(key, value, int, 0, MAX_HOPS)))
        elif key == "radius":
            seed = replace(seed, radius=int(_number(key, value, int, 0, MAX_HOPS)))
        elif key == "sitemap":
            if value.lower() not in _TRUE | _FALSE:
                raise SeedLineError("bad metadata", f"sitemap={value!r} is not true or false")
            seed = replace(seed, is_sitemap=value.lower() in _TRUE)
        elif key == "sitemaps":
            sitemap_urls.extend(_canonical(u, rules, "sitemap") for u in value.split())
        else:
            raise SeedLineError("bad metadata", f"unknown key {key!r}")
    for candidate in ([seed.url] if seed.is_sitemap else []) + sitemap_urls:
        reason = rules.blacklist.match(candidate)
        if reason is not None:
            raise SeedLineError("blacklisted", f"sitemap {candidate}: {reason}")
    voucher = tuple(host for host in [vouch_host(url)] if host is not None)
    if seed.is_sitemap:
        seed = replace(seed, vouched_by=voucher)
    sitemaps = [
        Seed(u, line, depth=seed.depth, radius=seed.radius, is_seed=False, is_sitemap=True, vouched_by=voucher)
        for u in sitemap_urls
    ]
    return [seed, *sitemaps]


N = TypeVar("N", int, float)


def _most(a: N | None, b: N | None) -> N | None:
    return b if a is None else a if b is None else max(a, b)


def _merge_seeds(old: Seed, new: Seed) -> Seed:
    """Two mentions of one URL in the same run: keep the most generous of each."""
    return Seed(
        old.url,
        old.line,
        score=_most(old.score, new.score),
        fetch_interval=new.fetch_interval if new.fetch_interval is not None else old.fetch_interval,
        depth=_most(old.depth, new.depth),
        radius=_most(old.radius, new.radius),
        is_seed=old.is_seed or new.is_seed,
        is_sitemap=old.is_sitemap or new.is_sitemap,
        vouched_by=tuple(dict.fromkeys(old.vouched_by + new.vouched_by)),
    )


def row_for_seed(seed: Seed, existing: WebPage | None, now: datetime, settings: Settings,
                 overwrite_score: bool) -> WebPage:
    """The cells to write for a seed, given the row it meets (None: a new row).

    A new row starts unfetched and due now (`newrows.new_page`). An existing row keeps its fetch
    state and schedule; depth and radius become the larger of old and new;
    its score changes only when `overwrite_score` is set (or it had none).
    Depth and radius of `seed` are resolved (defaults filled in) by the caller.
    """
    depth = seed.depth if seed.depth is not None else settings.seed_depth
    radius = seed.radius if seed.radius is not None else settings.seed_radius
    score = seed.score if seed.score is not None else settings.seed_score
    sitemap_fields: dict[str, object] = {}
    if seed.is_sitemap:
        sitemap_fields["is_sitemap"] = True
        if existing is None or existing.sitemap_source is None:
            sitemap_fields["sitemap_source"] = SitemapSource.SEED
        if seed.vouched_by:
            known = parse_vouchers(existing.vouched_by or ()) if existing is not None else {}
            direct = dict.fromkeys(seed.vouched_by, 0)
            sitemap_fields["vouched_by"] = format_vouchers(merge_vouchers(known, direct))
    if existing is None:
        return new_page(
            seed.url, now, seed.fetch_interval or settings.default_fetch_interval, score=score, depth=depth,
            radius=radius, also=WebPage(
                seed.url,
                seed=True if seed.is_seed else None,
                inject_mark=now,
                **sitemap_fields,  # type: ignore[arg-type]
            ))
    return WebPage(
        seed.url,
        status=None if existing.status is not None else FetchStatus.UNFETCHED,
        next_fetch=None if existing.status is not None else now,
        fetch_interval=seed.fetch_interval,
        score=score if existing.score is None or (overwrite_score and seed.score is not None) else None,
        depth=max(depth, existing.depth if existing.depth is not None else -1),
        radius=max(radius, existing.radius if existing.radius is not None else -1),
        seed=True if seed.is_seed else None,
        inject_mark=now,
        **sitemap_fields,  # type: ignore[arg-type]
    )


def seed_lines(lines: Iterable[str], rules: UrlRules, counts: InjectCounts,
               on_reject: Callable[[Rejected], None]) -> Iterator[Seed]:
    """Seeds of every good line, with depth and radius defaults filled in.

    A bad line is counted in `counts` and told to `on_reject` (its number, the
    reason and a short quote of it), never raised. No I/O.
    """
    settings = rules.settings
    for number, text in enumerate(lines, start=1):
        try:
            seeds = parse_seed_line(text, number, rules)
        except SeedLineError as exc:
            counts.read += 1
            counts.rejected[exc.reason] += 1
            on_reject(Rejected(number, exc.reason, printable(exc.detail, limit=DETAIL_LIMIT)))
            continue
        if seeds:
            counts.read += 1
        for seed in seeds:
            yield replace(
                seed,
                depth=settings.seed_depth if seed.depth is None else seed.depth,
                radius=settings.seed_radius if seed.radius is None else seed.radius,
            )


def inject(
    store: Store,
    lines: Iterable[str],
    rules: UrlRules,
    *,
    overwrite_score: bool = False,
    on_reject: Callable[[Rejected], None] = lambda rejected: None,
    on_progress: Callable[[int], None] = lambda lines_done: None,
    clock: Clock = utc_now,
) -> InjectCounts:
    """Inject seed lines into the `webpage` table; returns the counts.

    `on_reject` hears of every skipped line (the CLI prints it); `on_progress`
    hears how many lines were read after each chunk; `clock`, read once, is
    the time the rows are stamped with and due by. Raises
    StoreUnavailableError / TableMissingError from the store; a bad line never
    raises.
    """
    settings = rules.settings
    store.require_tables(WEBPAGE_TABLE, DUE_TABLE)
    now = clock()
    counts = InjectCounts()
    seeds = seed_lines(lines, rules, counts, on_reject)
    chunk_size = max(1, settings.hbase_batch_size)
    while True:
        chunk: dict[str, Seed] = {}
        for seed in islice(seeds, chunk_size):
            key = rowkeys.row_key(seed.url)
            chunk[key] = _merge_seeds(chunk[key], seed) if key in chunk else seed
        if not chunk:
            break
        keys = [key.encode("utf-8") for key in chunk]
        existing = read_pages(store, keys, _READ_FIELDS, "inject", counts.unreadable)
        puts = []
        before: dict[bytes, WebPage | None] = {}
        written: list[new_rows.Written] = []
        for encoded, seed in zip(keys, chunk.values(), strict=True):
            old = before[encoded] = existing.get(encoded)
            row = row_for_seed(seed, old, now, settings, overwrite_score)
            if old is None:
                counts.injected += 1
            else:
                counts.updated += 1
            counts.sitemaps += 1 if seed.is_sitemap else 0
            puts.append((encoded, encode(row)))
            written.append((encoded, old, row))
        write_pages(store, puts, before, now=now)  # with the due index entries of rows due now
        # In the row counts `serve` and the crawl's summary read: a seed no batch fetches is a row too.
        new_rows.count_written(store, written, "inject", counts.unreadable)
        on_progress(counts.read)
    log.info("inject: %s", counts.summary())
    return counts
