"""Rows and runs shared by the fetch, politeness and reliability integration tests."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

from sitemapcrawl.config import Settings
from sitemapcrawl.jobs.fetch import FetchCounts, FetchOptions, fetch
from sitemapcrawl.model.cells import decode, encode
from sitemapcrawl.model.webpage import WEBPAGE_TABLE, FetchStatus, WebPage
from sitemapcrawl.storage import dueindex
from sitemapcrawl.storage.store import Store
from sitemapcrawl.web import rowkeys
from sitemapcrawl.web.http import PoliteHttpClient
from sitemapcrawl.web.rules import UrlRules

AGENT = "TestBot/1.0 (+http://127.0.0.1/bot)"
PAST = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1)


def add_rows(store: Store, *rows: WebPage) -> None:
    """Write whole rows under their row keys."""
    dueindex.write_pages(store, [(rowkeys.row_key(r.url).encode(), encode(r)) for r in rows])


def due(url: str, **fields: object) -> WebPage:
    """An unfetched row due an hour ago, with `fields` replaced."""
    row = WebPage(url, status=FetchStatus.UNFETCHED, next_fetch=PAST, score=1.0, depth=2, radius=0)
    return dataclasses.replace(row, **fields)  # type: ignore[arg-type]


def read(store: Store, url: str) -> WebPage:
    """The row of `url` as stored (every field None when there is none)."""
    return decode(WebPage, url, store.row(WEBPAGE_TABLE, rowkeys.row_key(url).encode()) or {})


def run_fetch(store: Store, settings: Settings, batch_id: str, **options: object) -> FetchCounts:
    """The fetch job over `batch_id` with a client of its own."""
    client = PoliteHttpClient.from_settings(settings)
    try:
        return fetch(store, client, UrlRules.from_settings(settings),
                     FetchOptions.from_settings(settings, batch_id, **options))
    finally:
        client.close()
