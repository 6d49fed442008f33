"""Walk a site's sitemaps: robots.txt, then well-known paths, then indexes, recursively.

The network stays outside: the walker is handed a `Fetcher` (anything with
`get(url, headers=None, max_bytes=None)` returning an object with `url`,
`status`, `body`, `error`, `truncated`; `sitemapcrawl.http.PoliteHttpClient`
is one). Nodes come out in pre-order as each sitemap has been read, so a
printer can stream the tree. Each document is counted while streamed and only
the child-sitemap URLs of an index are kept, so memory is that of one document
plus the pending URLs.

Well-known paths are probed only when robots.txt announces no sitemap (to stay
polite); probes that find nothing (404, an HTML page) are not reported as
nodes. Index children beyond `max_depth`, and children already read, are
reported as nodes with a problem and not followed (a loop is never followed).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Protocol

from sitemapcrawl.sitemaps.discovery import (
    is_site_root,
    robots_sitemaps,
    robots_txt_url,
    well_known_sitemap_urls,
)
from sitemapcrawl.sitemaps.document import parse_sitemap
from sitemapcrawl.sitemaps.limits import SitemapLimits
from sitemapcrawl.sitemaps.model import (
    NotASitemapError,
    ParseReport,
    SitemapError,
    SitemapKind,
    SitemapRef,
)
from sitemapcrawl.sitemaps.scope import ScopeContext


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
    context: ScopeContext
    quiet_miss: bool = False
    """A probe: an HTTP error or a non-sitemap is no node at all."""
    fallback: bool = False
    """The start URL: if it is not a sitemap, the site's sitemaps are looked for instead."""


def walk_tree(
    url: str, fetcher: Fetcher, *, limits: SitemapLimits, strict: bool = True
) -> Iterator[TreeNode]:
    """Yield the sitemap tree of the site at `url` (a homepage or a sitemap URL).

    From a homepage (or a start URL that turns out not to be a sitemap, like an
    HTML page), the sitemaps come from robots.txt, else from the well-known
    paths. Cost: one
    request per sitemap (plus robots.txt and the probes), paced by the fetcher.
    """
    visited: set[str] = set()
    if not is_site_root(url):
        start = _Todo(url, 0, "start", None, (), ScopeContext(strict=strict), fallback=True)
        found = False
        for node in _walk([start], fetcher, limits, visited):
            found = True
            yield node
        if found:
            return
    yield from _walk(_discover(url, fetcher, strict, limits), fetcher, limits, visited)


def _discover(url: str, fetcher: Fetcher, strict: bool, limits: SitemapLimits) -> list[_Todo]:
    robots = robots_txt_url(url)
    response = fetcher.get(robots, max_bytes=limits.max_bytes)
    listed: list[str] = []
    if response.error is None and response.status == 200:
        listed = robots_sitemaps(response.body.decode("utf-8", errors="replace"))
    if listed:
        context = ScopeContext(strict=strict, cross_submitted_from=(robots,))
        return [_Todo(sitemap, 0, "robots.txt", None, (), context) for sitemap in listed]
    context = ScopeContext(strict=strict)
    return [
        _Todo(probe, 0, "well-known", None, (), context, quiet_miss=True)
        for probe in well_known_sitemap_urls(url)
    ]


def _skipped(item: _Todo, error: str) -> TreeNode:
    return TreeNode(item.url, item.depth, item.via, item.parent, error=error)


def _walk(
    todo: list[_Todo], fetcher: Fetcher, limits: SitemapLimits, visited: set[str]
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
        node, children = _read(item, fetcher, limits)
        if node is None:
            continue
        visited.add(node.url)
        yield node
        ancestors = (*item.ancestors, item.url, node.url)
        for child in reversed(children):
            stack.append(_Todo(child, item.depth + 1, "index", node.url, ancestors, item.context))


def _read(
    item: _Todo, fetcher: Fetcher, limits: SitemapLimits
) -> tuple[TreeNode | None, list[str]]:
    """Fetch and count one sitemap: its node (None: a probe that found nothing), its children."""
    response = fetcher.get(item.url, max_bytes=limits.max_bytes)
    if response.error is not None or response.status != 200:
        if item.quiet_miss:
            return None, []
        return _skipped(item, response.error or f"HTTP {response.status}"), []
    try:
        document = parse_sitemap(response.body, response.url, limits=limits, scope=item.context)
    except SitemapError as exc:
        if (item.quiet_miss or item.fallback) and isinstance(exc, NotASitemapError):
            return None, []
        return _skipped(item, str(exc)), []
    children = [entry.loc for entry in document if isinstance(entry, SitemapRef)]
    report = document.report
    if response.truncated:
        problem = f"body cut off at {limits.max_bytes:,} bytes by the fetcher"
        report = dataclasses.replace(report, problems=(*report.problems, problem))
    node = TreeNode(
        response.url,
        item.depth,
        item.via,
        item.parent,
        kind=document.kind,
        report=report,
        children=len(children),
    )
    return node, children
