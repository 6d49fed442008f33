"""Who vouches for a stored sitemap: its own cells, the indexes that list it, the URLs that redirected to it.

A sitemap may list URLs of the hosts that vouch for it (`sitemaps.scope`):
its own host, the robots.txt files that name it (`s:cs`), the indexes above
it (`vb=` in their `il:` cells) and, through redirects, whoever vouched for
the URL that redirected here (`scope.vouchers_after_redirect`).
"""

from __future__ import annotations

import logging

from sitemapcrawl.config import Settings
from sitemapcrawl.errors import InvalidUrlError
from sitemapcrawl.model.linkvalues import InlinkKind, parse_inlink
from sitemapcrawl.model.webpage import WebPage
from sitemapcrawl.sitemaps.scope import ScopeContext, merge_vouchers, parse_vouchers, vouchers_after_redirect
from sitemapcrawl.storage.store import Store
from sitemapcrawl.storage.tables import Unreadable, read_pages
from sitemapcrawl.web import rowkeys, urls

__all__ = ["sitemap_vouchers", "vouchers_through_redirects"]

log = logging.getLogger(__name__)


def sitemap_vouchers(row: WebPage, max_index_depth: int) -> dict[str, int]:
    """Who vouches for a stored sitemap: host -> index levels, within `max_index_depth`.

    From its row (`s:vb`; the robots.txt files of `s:cs` at level 0) and from
    the `il:` cells of the indexes that list it (`vb=`); `row.inlinks` must
    have been read. No I/O.
    """
    passed: dict[str, int] = {}
    for text in (row.inlinks or {}).values():
        link = parse_inlink(text)
        if link is not None and link.kind is InlinkKind.INDEX and link.vouched_by:
            passed = merge_vouchers(passed, dict(link.vouched_by))
    cross = {host: 0 for host in ScopeContext(cross_submitted_from=row.cross_submitters or ()).vouching_hosts()}
    merged = merge_vouchers(parse_vouchers(row.vouched_by or ()), cross, passed)
    return {host: level for host, level in merged.items() if level <= max_index_depth}


_VOUCHING_FIELDS = ["vouched_by", "cross_submitters", "inlinks"]


def vouchers_through_redirects(store: Store, row: WebPage, settings: Settings, unreadable: Unreadable,
                               seen: frozenset[str] = frozenset()) -> dict[str, int]:
    """`sitemap_vouchers`, plus what reached the sitemap through redirects (`il:` redirect cells).

    The URLs that redirected here are read (their vouching columns and
    inlinks, one multi-get) and their vouchers carried over by
    `scope.vouchers_after_redirect`, following chains up to `max_redirects`
    long. A source row that does not decode is counted in `unreadable` and
    vouches for nothing. Cost: nothing without redirect cells; otherwise one
    multi-get for this row's sources and one for each source that was itself
    redirected to (a chain of n links: n multi-gets).
    """
    own = sitemap_vouchers(row, settings.max_index_depth)
    if len(seen) >= settings.max_redirects:
        return own
    sources: dict[bytes, tuple[str, bool]] = {}  # row key -> (redirecting URL, on the sitemap's site?)
    for source, text in (row.inlinks or {}).items():
        link = parse_inlink(text)
        if link is None or link.kind is not InlinkKind.REDIRECT or source in seen or source == row.url:
            continue
        try:
            key = rowkeys.row_key(source).encode("utf-8")
            sources[key] = source, urls.registered_domain_key(source) == urls.registered_domain_key(row.url)
        except InvalidUrlError as exc:
            log.warning("parse: %s: redirect source %s: %s", row.url, source[:200], exc)
    if not sources:
        return own
    found = read_pages(store, list(sources), _VOUCHING_FIELDS, "parse", unreadable)
    for key, (source, same) in sources.items():
        before = found.get(key)
        if before is None:
            continue
        carried = vouchers_through_redirects(store, before, settings, unreadable, seen | {row.url})
        own = merge_vouchers(own, vouchers_after_redirect(carried, source, row.url, same_site=same))
    return own
