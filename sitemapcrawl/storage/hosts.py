"""Origins (scheme://host[:port]) in the tables: their keys, and finding them.

The `host` table has one row per origin, keyed like a `webpage` row without
its path (`http://www.example.com:8080` -> `com.example.www:http:8080`), so
both tables sort the same way.
"""

from __future__ import annotations

from collections.abc import Iterator

from sitemapcrawl.errors import InvalidUrlError
from sitemapcrawl.model.webpage import WEBPAGE_TABLE
from sitemapcrawl.storage.store import Store
from sitemapcrawl.storage.tables import Unreadable, decode_page
from sitemapcrawl.web import rowkeys


def origin_key(origin: str) -> bytes:
    """The `host` table key of an origin (`scheme://host[:port]`, canonical); `tables.decode_host` reads it back."""
    return rowkeys.row_key(origin + "/")[:-1].encode("utf-8")


def _next_key_after_prefix(prefix: bytes) -> bytes:
    # Every key of the origin starts with `prefix` (which ends in "/"); the
    # next byte value after "/" ("0") skips all of them.
    return prefix[:-1] + bytes([prefix[-1] + 1])


#: Keys read per call of the skip scan: a table of many small origins is listed a page of origins a call.
_KEYS_PER_CALL = 64


def origins_in_table(store: Store, within: bytes = b"", unreadable: Unreadable | None = None) -> Iterator[str]:
    """Every origin with rows in `webpage` (whose keys start with `within`), in key order.

    A skip scan: each call reads the first keys (only keys: `_KEYS_PER_CALL` of them) from where the last
    one stopped, takes the origins among them, and the next call starts past the last origin's rows instead
    of reading them. A table of millions of rows on a few hundred hosts is listed in a few hundred calls, one
    of a thousand origins of a few rows each in a few dozen. A key that names no origin is stepped over,
    logged and counted in `unreadable` (`tables`).
    """
    start = within
    while True:
        keys = [key for key, _ in store.scan(WEBPAGE_TABLE, start=start, limit=_KEYS_PER_CALL,
                                             filter="FirstKeyOnlyFilter() AND KeyOnlyFilter()")]
        if not keys:
            return
        last_prefix = b""
        for key in keys:
            if not key.startswith(within):
                return
            slash = key.find(b"/")
            if slash < 0:  # not a webpage key; step past it
                start = key + b"\x00"
                continue
            prefix = key[: slash + 1]
            start = _next_key_after_prefix(prefix)
            if prefix == last_prefix:
                continue
            last_prefix = prefix
            try:
                origin = decode_page(prefix, {}).url[:-1]
            except InvalidUrlError as exc:
                (unreadable if unreadable is not None else Unreadable()).add("origins", key, exc)
                continue
            yield origin


def origins_of_host(store: Store, origin: str) -> list[str]:
    """The origins (any scheme, any port) the table knows for the host name of `origin`.

    `origin` is canonical (`scheme://host[:port]`); only its host name counts.
    A skip scan over the keys of that host name: one round trip per origin found.
    """
    key = rowkeys.row_key(origin + "/")
    # The key is `reversed-host:scheme[:port]/...`; an IPv6 host keeps its brackets.
    end = key.index("]:") + 1 if key.startswith("[") else key.index(":")
    return list(origins_in_table(store, key[: end + 1].encode("utf-8")))
