"""The generate order: how good a due row is to fetch next, as a number and as index key text.

A row's rank is its score (1 when unset) + its sitemap priority weighted by
the quality of the sitemaps listing it (the plain priority when unweighted,
0.5 when unset) + a bonus below `DEPTH_BONUS` for rows with more hops left +
a jitter below `JITTER` from the row key (ties broken the same way every
run; one host's rows do not come in a block), and `NEW_URL_BOOST` on top
for an unfetched URL a re-parsed sitemap newly listed. `rank_order` is that
rank in whole nano-units: the one value both the ranked due queue
(`sitemapcrawl.model.due`) and a full scan sort by, so both choose the same
rows. Ties of order go to the smaller row key. Pure: no I/O.
"""

from __future__ import annotations

import zlib

from sitemapcrawl.model.webpage import WebPage

#: Largest bonus for shallow rows (many hops left); smaller than any priority step.
DEPTH_BONUS = 0.05
#: Largest tie-breaking jitter.
JITTER = 1e-6
#: Added to the rank of a URL a re-parsed sitemap newly listed (`s:nw`) while it is unfetched: far above
#: any score + priority, so new entries (a news sitemap's new articles) are fetched in the next round.
NEW_URL_BOOST = 1e6
#: The fields a rank is made of (a writer that changes one moves the row's queue entry).
RANK_FIELDS = ["score", "priority", "weighted_priority", "depth", "new_in_sitemap", "fetch_time"]
#: Rank units per 1.0 of rank: the order keeps nine decimals, finer than the jitter's steps that matter.
UNITS = 10**9
#: Digits of an order in a key; orders beyond +-(LIMIT - 1) units are held at the limit (a score of 1e10).
ORDER_DIGITS = 20
_LIMIT = 10**(ORDER_DIGITS - 1)


def sitemap_priority(row: WebPage) -> float:
    """The sitemap part of a row's rank: `s:wp`, else the plain `s:pr` (no `s:wp` is stored where it would
    say the same), else the protocol's default 0.5. `row` must hold both fields."""
    if row.weighted_priority is not None:
        return row.weighted_priority
    return row.priority if row.priority is not None else 0.5


def rank(row: WebPage, key: bytes) -> float:
    """The generate rank of a row with row key `key`: higher first (see the module docstring)."""
    return unjittered_rank(row) + JITTER * zlib.crc32(key) / 2**32


def unjittered_rank(row: WebPage) -> float:
    """`rank` but the jitter: what the row's RANK_FIELDS give (the key adds the jitter last)."""
    score = row.score if row.score is not None else 1.0
    priority = sitemap_priority(row)
    hops = max(0, row.depth) if row.depth is not None else 0
    boost = NEW_URL_BOOST if row.new_in_sitemap and row.fetch_time is None else 0.0
    return boost + score + priority + DEPTH_BONUS * hops / (hops + 1)


def rank_order(row: WebPage, key: bytes) -> int:
    """`rank` in whole units of 1/UNITS, held within the key's digits: what generate sorts by."""
    return order_of(unjittered_rank(row), key)


def order_of(unjittered: float, key: bytes) -> int:
    """`rank_order` of a row whose `unjittered_rank` is given: for a writer ranking many rows of equal
    rank fields (their ranks differ by the jitter of their keys alone)."""
    ranked = unjittered + JITTER * zlib.crc32(key) / 2**32
    return max(-_LIMIT + 1, min(_LIMIT - 1, round(ranked * UNITS)))


def order_text(order: int) -> bytes:
    """An order as fixed-width key text that sorts best first (the higher the order, the smaller the text)."""
    return b"%0*d" % (ORDER_DIGITS, _LIMIT - order)


def order_of_text(text: bytes) -> int:
    """The order an `order_text` stands for (ValueError for text that is not one)."""
    if len(text) != ORDER_DIGITS or not text.isdigit():
        raise ValueError(f"not an order: {text!r}")
    return _LIMIT - int(text)
