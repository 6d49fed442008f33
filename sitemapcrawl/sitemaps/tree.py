"""Walk a site's sitemaps: its discovered sitemaps (or a start URL), then indexes, recursively.

The network stays outside: `walk_tree` is handed a `Fetcher` (anything whose
`get` returns an object with `url`, `status`, `body`, `error`, `truncated`;
`sitemapcrawl.web.http.PoliteHttpClient` is one) and a `discover` function
(`sitemapcrawl.web.discover` gives the one `detect` uses). Nodes come out in
pre-order as each sitemap has been read, so a printer can stream the tree.
Scope is the crawl's (`scope`): sitemaps `discover` names are vouched for by
its host, a start URL that is a sitemap by its own host, index children
inherit within `max_depth`, a redirect follows `scope.vouchers_after_redirect`.
Probes that find nothing are not nodes; children too deep or already read
are nodes with a problem, not followed (a loop is never followed).

Cost: one request per sitemap; memory of one document plus the pending URLs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from sitemapcrawl.sitemaps.discovery import is_site_root
from sitemapcrawl.sitemaps.document import parse_sitemap
from sitemapcrawl.sitemaps.limits import SitemapLimits
from sitemapcrawl.sitemaps.model import (
    NotASitemapError,
    PageEntry,
    ParseReport,
    ProblemKind,
    SitemapError,
    SitemapKind,
    SitemapRef,
    add_problem_counts,
)
from sitemapcrawl.sitemaps.scope import (
    ScopeContext,
    inherited_vouchers,
    vouch_host,
    vouchers_after_redirect,
)


class Fetched(Protocol):
    """What the walker reads from a fetch result."""

    @property
    def url(self) -> str: ...
    @property
    def status(self) -> int | None: ...
    @property
    def body(self) -> bytes: ...
    @property
    def error(self) -> str | None: ...
    @property
    def truncated(self) -> bool: ...


class Fetcher(Protocol):
    """The one network call the walker makes (never raises; failures in `error`)."""

    def get(
        self, url: str, headers: Mapping[str, str] | None = None, max_bytes: int | None = None
    ) -> Fetched: ...


@dataclass(frozen=True)
class Start:
    """A sitemap a site announces (or that a probe found): where a walk begins."""

    url: str
    via: str
    """`robots.txt` or `well-known`."""
    vouched_by: tuple[str, ...] = ()
    """Hosts that vouch for it (robots.txt's host)."""
    fetched: Fetched | None = None
    """The response already read (a probe), so it is not fetched twice."""


@dataclass(frozen=True)
class TreeNode:
    """One sitemap of the tree, as read (or why it was not)."""

    url: str
    depth: int
    """0 for sitemaps found from robots.txt, well-known paths or the start URL."""
    via: str
    """How it was found: `start`, `robots.txt`, `well-known` or `index`."""
    parent: str | None = None
    kind: SitemapKind | None = None
    report: ParseReport | None = None
    children: int = 0
    """Child sitemaps listed (indexes)."""
    error: str | None = None
    """Why it could not be read (HTTP error, not a sitemap, loop, depth limit)."""


@dataclass(frozen=True)
class _Todo:
    url: str
    depth: int
    via: str
    parent: str | None
    ancestors: tuple[str, ...]
    vouchers: Mapping[str, int] = field(default_factory=dict)
    """Host -> index levels: who vouches for this sitemap."""
    quiet_miss: bool = False
    """A probe: an HTTP error or a non-sitemap is no node at all."""
    fallback: bool = False
    """The start URL: if it is not a sitemap, the site's sitemaps are looked for instead."""
    fetched: Fetched | None = None


def _no_sites(url: str) -> Iterable[Start]:
    return ()


def _never_same(a: str, b: str) -> bool:
    return False


#: Hears each page entry of each urlset as it is read: (sitemap URL, entry).
EntrySink = Callable[[str, PageEntry], None]


def walk_tree(
    url: str,
    fetcher: Fetcher,
    *,
    limits: SitemapLimits,
    strict: bool = True,
    discover: Callable[[str], Iterable[Start]] = _no_sites,
    same_site: Callable[[str, str], bool] = _never_same,
    on_entry: EntrySink | None = None,
) -> Iterator[TreeNode]:
    """Yield the sitemap tree of the site at `url` (a homepage or a sitemap URL).

    From a homepage (or a start URL that turns out not to be a sitemap, like an
    HTML page), the sitemaps come from `discover(url)`. `same_site(a, b)` tells
    whether two URLs share a registered domain (for redirects). `on_entry`
    hears every page entry (the no-database inventory of `sitemap tree
    --entries`), before its sitemap's node. Cost: one request per sitemap
    (plus discovery's), paced by the fetcher.
    """
    visited: set[str] = set()
    if not is_site_root(url):
        own = vouch_host(url)
        start = _Todo(url, 0, "start", None, (), {own: 0} if own else {}, fallback=True)
        found = False
        for node in _walk([start], fetcher, limits, strict, same_site, visited, on_entry):
            found = True
            yield node
        if found:
            return
    todo = [
        _Todo(item.url, 0, item.via, None, (), dict.fromkeys(item.vouched_by, 0),
              quiet_miss=item.fetched is not None, fetched=item.fetched)
        for item in discover(url)
    ]
    yield from _walk(todo, fetcher, limits, strict, same_site, visited, on_entry)


def _skipped(item: _Todo, error: str) -> TreeNode:
    return TreeNode(item.url, item.depth, item.via, item.parent, error=error)


def _walk(
    todo: list[_Todo],
    fetcher: Fetcher,
    limits: SitemapLimits,
    strict: bool,
    same_site: Callable[[str, str], bool],
    visited: set[str],
    on_entry: EntrySink | None = None,
) -> Iterator[TreeNode]:
    stack = list(reversed(todo))
    while stack:
        item = stack.pop()
        if item.url in item.ancestors:
            yield _skipped(item, "loop: lists one of its own ancestors, not followed")
            continue
        if item.url in visited:
            yield _skipped(item, "already read elsewhere in the tree, not followed")
            continue
        if item.depth > limits.max_depth:
            yield _skipped(item, f"index depth limit {limits.max_depth} reached, not followed")
            continue
        visited.add(item.url)
        node, children, vouchers = _read(item, fetcher, limits, strict, same_site, on_entry)
        if node is None:
            continue
        visited.add(node.url)
        yield node
        ancestors = (*item.ancestors, item.url, node.url)
        passed_on = inherited_vouchers(vouchers, limits.max_depth)
        for child in reversed(children):
            stack.append(_Todo(child, item.depth + 1, "index", node.url, ancestors, passed_on))


def _read(
    item: _Todo,
    fetcher: Fetcher,
    limits: SitemapLimits,
    strict: bool,
    same_site: Callable[[str, str], bool],
    on_entry: EntrySink | None = None,
) -> tuple[TreeNode | None, list[str], Mapping[str, int]]:
    """Fetch and count one sitemap: its node (None: a probe that found nothing), its children
    and who vouches for it (after any redirect)."""
    response = item.fetched or fetcher.get(item.url, max_bytes=limits.max_bytes)
    if response.error is not None or response.status != 200:
        if item.quiet_miss:
            return None, [], {}
        return _skipped(item, response.error or f"HTTP {response.status}"), [], {}
    vouchers = item.vouchers
    if response.url != item.url:
        vouchers = vouchers_after_redirect(vouchers, item.url, response.url,
                                           same_site=same_site(item.url, response.url))
    context = ScopeContext(strict=strict, vouched_by=tuple(vouchers))
    try:
        document = parse_sitemap(response.body, response.url, limits=limits, scope=context)
    except SitemapError as exc:
        if (item.quiet_miss or item.fallback) and isinstance(exc, NotASitemapError):
            return None, [], {}
        return _skipped(item, str(exc)), [], {}
    children = []
    for entry in document:
        if isinstance(entry, SitemapRef):
            children.append(entry.loc)
        elif on_entry is not None:
            on_entry(response.url, entry)
    report = document.report
    if response.truncated:
        problem = f"body cut off at {limits.max_bytes:,} bytes by the fetcher"
        report = dataclasses.replace(report, problems=(*report.problems, problem), problem_counts=add_problem_counts(
            report.problem_counts, [(ProblemKind.BODY_CUT, 1)]))
    node = TreeNode(
        response.url,
        item.depth,
        item.via,
        item.parent,
        kind=document.kind,
        report=report,
        children=len(children),
    )
    return node, children, vouchers
