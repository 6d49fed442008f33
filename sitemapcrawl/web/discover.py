"""Finding a site's sitemaps: the one discovery path `detect` and `sitemap tree` share.

One function, so that the same site gives the same sitemaps through both
commands. For one origin, `discover_sitemaps` fetches robots.txt (capped at
`max_robots_bytes`) and keeps its proper `Sitemap:` lines, canonicalised
(relative ones resolved against where the text finally came from); when it
lists none and `probe_known_paths` asks for it, it tries the well-known paths
(`sitemaps.discovery`) robots.txt allows and keeps those that parse as a
sitemap with an entry, with their response, so the caller need not fetch
them again. A failing robots.txt means nothing is probed. robots.txt's
sitemaps are vouched for by its host (`sitemaps.scope`); probed ones are
not. `discover_sitemaps_async` takes the same steps on an event loop (the
steps between the requests are the same functions). The rules:
docs/sitemaps.md, Discovery. No HBase; pacing is the client's.

Cost: one request for robots.txt, plus one per well-known path when probing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass

from sitemapcrawl.config import Settings
from sitemapcrawl.errors import InvalidUrlError, SitemapError
from sitemapcrawl.model.webpage import RobotsStatus, SitemapSource
from sitemapcrawl.sitemaps.discovery import well_known_sitemap_urls
from sitemapcrawl.sitemaps.document import parse_sitemap
from sitemapcrawl.sitemaps.limits import SitemapLimits
from sitemapcrawl.sitemaps.scope import vouch_host
from sitemapcrawl.sitemaps.tree import EntrySink, Start, TreeNode, walk_tree
from sitemapcrawl.web import urls
from sitemapcrawl.web.http import AsyncHttpClient, HttpClient, HttpResponse
from sitemapcrawl.web.robots import RobotsPolicy, status_for_http
from sitemapcrawl.web.urlfilters import SitemapBlacklist
from sitemapcrawl.web.urls import CanonicalRules


@dataclass(frozen=True)
class Discovered:
    """One sitemap found for a site, and how."""

    url: str
    """Canonical URL."""
    source: SitemapSource
    """`robots` (a `Sitemap:` line) or `probe` (a well-known path)."""
    response: HttpResponse | None = None
    """For a probe: the response that proved it a sitemap."""


@dataclass(frozen=True)
class SiteSitemaps:
    """What discovery learned about one origin."""

    origin: str
    robots_url: str
    """Where the robots.txt text finally came from (after redirects)."""
    robots_status: RobotsStatus
    http_code: int | None
    error: str | None
    robots_text: str | None
    robots_truncated: bool
    policy: RobotsPolicy
    sitemaps: tuple[Discovered, ...]
    invalid_sitemap_lines: int
    """`Sitemap` lines that are malformed or name no usable URL."""


def is_real_sitemap(body: bytes, url: str, limits: SitemapLimits) -> bool:
    """Does this body parse as a sitemap with at least one entry? (sniffed, not trusted)."""
    try:
        document = parse_sitemap(body, url, limits=limits)
        return next(iter(document), None) is not None
    except SitemapError:
        return False


def discover_sitemaps(
    origin: str,
    client: HttpClient,
    settings: Settings,
    *,
    canonical: CanonicalRules,
    blacklist: SitemapBlacklist,
    probe: bool,
) -> SiteSitemaps:
    """robots.txt and (if asked, when it lists none) the well-known paths of one origin.

    Never raises for what the network or the site does: failures are in the
    result (`robots_status`, `error`).
    """
    site = read_robots(origin, client.get(robots_url(origin), max_bytes=settings.max_robots_bytes), settings,
                       canonical)
    if not _probing(site, probe):
        return site
    limits = SitemapLimits.from_settings(settings)
    found = [proof for candidate in probe_candidates(site, blacklist)
             if (proof := probed(candidate, client.get(candidate, max_bytes=settings.max_sitemap_bytes), canonical,
                                 limits)) is not None]
    return dataclasses.replace(site, sitemaps=tuple(found))


async def discover_sitemaps_async(origin: str, client: AsyncHttpClient, settings: Settings, *,
                                  canonical: CanonicalRules, blacklist: SitemapBlacklist,
                                  probe: bool) -> SiteSitemaps:
    """`discover_sitemaps` on the event loop of an `AsyncHttpClient` (detect), the same steps."""
    site = read_robots(origin, await client.get(robots_url(origin), max_bytes=settings.max_robots_bytes), settings,
                       canonical)
    if not _probing(site, probe):
        return site
    limits = SitemapLimits.from_settings(settings)
    found = [proof for candidate in probe_candidates(site, blacklist)
             if (proof := probed(candidate, await client.get(candidate, max_bytes=settings.max_sitemap_bytes),
                                 canonical, limits)) is not None]
    return dataclasses.replace(site, sitemaps=tuple(found))


def _probing(site: SiteSitemaps, probe: bool) -> bool:
    """Are the well-known paths tried? Only when asked, when robots.txt lists none and does not fail."""
    return probe and not site.sitemaps and site.robots_status is not RobotsStatus.ERROR


def probe_candidates(site: SiteSitemaps, blacklist: SitemapBlacklist) -> list[str]:
    """The well-known sitemap URLs of a site that its robots.txt allows and the blacklist does not name."""
    return [candidate for candidate in well_known_sitemap_urls(site.origin + "/")
            if site.policy.allowed(candidate) and not blacklist.match(candidate)]


def probed(candidate: str, response: HttpResponse, canonical: CanonicalRules,
           limits: SitemapLimits) -> Discovered | None:
    """A probed URL that answered with a sitemap of at least one entry, with its response; else None."""
    if response.status == 200 and not response.error and is_real_sitemap(response.body, response.url, limits):
        return Discovered(urls.canonicalize(candidate, canonical), SitemapSource.PROBE, response)
    return None


def robots_url(origin: str) -> str:
    """Where an origin's robots.txt is."""
    return origin + "/robots.txt"


def read_robots(origin: str, response: HttpResponse, settings: Settings, canonical: CanonicalRules) -> SiteSitemaps:
    """What one answer for robots.txt (redirects followed) says: its rules and its `Sitemap:` lines. No I/O.

    The part of discovery that needs no request beyond robots.txt: the fetch
    job fetches robots.txt on its own event loop and reads it here.
    """
    status = RobotsStatus.ERROR if response.error else status_for_http(response.status)
    text = response.body.decode("utf-8", errors="replace").lstrip("\ufeff") if status is RobotsStatus.OK else None
    policy = RobotsPolicy.from_text(status, text, settings.user_agent or "")
    error = response.error
    if status is RobotsStatus.ERROR and error is None:
        error = f"HTTP {response.status}"
    final_robots = response.url or robots_url(origin)
    invalid = policy.malformed_sitemap_lines
    found: list[Discovered] = []
    for raw in policy.sitemaps(final_robots):
        try:
            found.append(Discovered(urls.canonicalize(raw, canonical), SitemapSource.ROBOTS))
        except InvalidUrlError:
            invalid += 1
    first: dict[str, Discovered] = {}
    for item in found:
        first.setdefault(item.url, item)  # canonical forms may meet: the first of each, in order
    return SiteSitemaps(origin, final_robots, status, response.status, error, text,
                        response.truncated and status is RobotsStatus.OK, policy, tuple(first.values()), invalid)


def site_tree(
    url: str,
    client: HttpClient,
    settings: Settings,
    *,
    canonical: CanonicalRules,
    blacklist: SitemapBlacklist,
    probe: bool,
    strict: bool,
    on_entry: EntrySink | None = None,
) -> Iterator[TreeNode]:
    """The sitemap tree of the site at `url` (a homepage or a sitemap URL), as the crawl scopes it.

    The site's sitemaps come from `discover_sitemaps` (the same as `detect`
    finds); robots.txt-listed ones are vouched for by its host, a start URL
    that is a sitemap by its own host (as an injected one), and index children
    inherit (`sitemaps.scope`). Raises InvalidUrlError for a URL with no usable host.
    """
    origin = urls.origin(url, canonical)

    def discover(_url: str) -> list[Start]:
        site = discover_sitemaps(origin, client, settings, canonical=canonical, blacklist=blacklist,
                                 probe=probe)
        # The origin asked vouches, even when its robots.txt redirects elsewhere.
        robots_host = vouch_host(origin + "/")
        return [
            Start(item.url, "robots.txt", (robots_host,) if robots_host else ())
            if item.source is SitemapSource.ROBOTS
            else Start(item.url, "well-known", (), item.response)
            for item in site.sitemaps
        ]

    def same_site(a: str, b: str) -> bool:
        try:
            return urls.registered_domain_key(a) == urls.registered_domain_key(b)
        except InvalidUrlError:
            return False

    yield from walk_tree(url, client, limits=SitemapLimits.from_settings(settings), strict=strict,
                         discover=discover, same_site=same_site, on_entry=on_entry)
