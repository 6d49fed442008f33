"""What one HTTP answer says about a URL: the facts a fetch records on its row. No I/O.

A fetch records facts only (status, HTTP code, validators, signature,
retries, errors, `retry_at`, the WARC record, the bot defence that answered
instead of the page (`web.challenge`), and from a page's 2xx answer
what it says about itself: robots directives, canonical, hreflang, read by
`web.pagesays` from its head and headers in every mode); the next fetch
time is `sitemapcrawl.model.schedule`'s, which updatedb runs. What each
outcome means: docs/commands.md, fetch.
"""

from __future__ import annotations

import hashlib
import zlib
from dataclasses import replace
from datetime import datetime, timedelta
from urllib.parse import urljoin

from sitemapcrawl.config import Settings
from sitemapcrawl.fetcher.model import FetchItem
from sitemapcrawl.model.schedule import SchedulePolicy, after_failure
from sitemapcrawl.model.webpage import FetchStatus, WebPage
from sitemapcrawl.storage.politeness import SLOW_DOWN_CODES, retry_after_seconds
from sitemapcrawl.web.challenge import challenge_of
from sitemapcrawl.web.http import HttpResponse
from sitemapcrawl.web.pagesays import page_says
from sitemapcrawl.web.urls import DEFAULT_RULES, CanonicalRules
from sitemapcrawl.web.warc import Capture

__all__ = ["capture_fields", "outcome_row", "retry_or_gone", "with_fields"]

_REDIRECT_CODES = frozenset({301, 302, 303, 307, 308})
_RETRY_CODES = frozenset({408, 429})
#: Room left in a cell for the row key, family and qualifier.
_CELL_MARGIN = 1024


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
                store_content: bool, rules: CanonicalRules = DEFAULT_RULES) -> WebPage:
    """The facts one HTTP answer gives (no marks, no redirect following, no next fetch time, no WARC record:
    `fetcher.write` records the exchange with the outcome and adds `capture_fields`).

    `rules` canonicalise the URLs a page names (its canonical, its alternates).
    """
    common: dict[str, object] = {"fetch_time": now, "error": "", "redirect_to": ""}
    if item.fetch_time is not None:
        common["prev_fetch_time"] = item.fetch_time
    code = response.status
    fields: dict[str, object] = dict(common)
    if code is None:
        fields.update(retry_or_gone(item, settings, response.error or "no answer"))
        return WebPage(item.url, **fields)  # type: ignore[arg-type]
    fields["http_code"] = code
    location = response.headers.get("location", "").strip()
    defence = challenge_of(code, response.headers, response.body)
    if defence is not None:
        # The site is not broken, we are blocked: no failure counted, asked again later (`deferred_interval`).
        fields.update(status=FetchStatus.DEFERRED, blocked_by=defence,
                      error=f"HTTP {code}: blocked by the site's bot defence ({defence})", **_retry_at(response, now))
    elif 200 <= code < 300:
        fields.update(retries=0, **_validators(response))
        fields.update(_content_fields(item, response, settings, item.is_sitemap or store_content, now))
        if not item.is_sitemap:
            fields.update(_self_description(item.url, response, settings, rules))
    elif code == 304:
        fields.update(status=FetchStatus.NOT_MODIFIED, retries=0, **_validators(response, keep=item))
    elif code in _REDIRECT_CODES and location:
        fields.update(status=FetchStatus.REDIRECT, retries=0, redirect_to=urljoin(item.url, location))
    elif code >= 500 or code in _RETRY_CODES:
        fields.update(retry_or_gone(item, settings, f"HTTP {code}"))
        if code in SLOW_DOWN_CODES:
            fields.update(_retry_at(response, now))
    else:
        fields.update(status=FetchStatus.GONE, retries=0, error=f"HTTP {code}")
    return WebPage(item.url, **fields)  # type: ignore[arg-type]


def _retry_at(response: HttpResponse, now: datetime) -> dict[str, object]:
    """`retry_at` from the answer's Retry-After header (seconds or an HTTP date, bounded), when it asks to wait."""
    asked = retry_after_seconds(response.headers.get("retry-after"), now)
    return {"retry_at": now + timedelta(seconds=asked)} if asked else {}


def _self_description(url: str, response: HttpResponse, settings: Settings,
                      rules: CanonicalRules) -> dict[str, object]:
    """What the page says about itself (`web.pagesays`), every field written (empty or 0: it says nothing),
    so what a page stopped saying leaves its row too."""
    says = page_says(url, response.headers, response.body, user_agent=settings.user_agent or "", rules=rules)
    return {"noindex": says.noindex, "nofollow": says.nofollow, "canonical": says.canonical,
            "robots": says.robots, "hreflang": tuple(f"{lang} {href}" for lang, href in says.alternates)}


def capture_fields(capture: Capture) -> dict[str, object]:
    """Where the answer's WARC record is; a response record (not a revisit) is also what later revisits refer to."""
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


def with_fields(row: WebPage, **changes: object) -> WebPage:
    """`row` with some fields replaced."""
    return replace(row, **changes)  # type: ignore[arg-type]
