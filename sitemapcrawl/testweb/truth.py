"""What a test web holds, computed from its description, for comparing a
crawl with: page URLs, what each sitemap lists, the link graph and hop
distances, robots.txt answers.

The truth is about the *description* served on a given port: run-time
changes (`TestWebServer.set_fault`, `touch`) do not alter it, but the
description's initial faults are reported (`faults`) and robots.txt faults
are applied to robots answers the way RFC 9309 says a crawler should (5xx:
disallow everything; 4xx: allow everything; redirect: the target's rules).
Redirects between pages are not edges of the link graph.

Cost: the constructor is cheap; each question walks the description when
asked (page ranges and generated sitemap entries are built on the fly), so a
big web costs memory only for the answers actually requested.
"""

from __future__ import annotations

import functools
import re
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urldefrag, urljoin, urlsplit

from sitemapcrawl.testweb.model import (
    ROBOTS_PATH,
    Entry,
    Fault,
    FaultSpec,
    Page,
    Robots,
    RobotsGroup,
    Site,
    Sitemap,
    Web,
    expand_ref,
)

_ROBOTS_REDIRECT_HOPS = 5


@dataclass(frozen=True)
class ListedEntry:
    """A sitemap entry with its URL resolved and whether it is in the
    sitemap's scope (same scheme, host and port, under the sitemap's folder)."""

    url: str
    entry: Entry
    in_scope: bool


@dataclass(frozen=True)
class SitemapChange:
    """One change of a sitemap between two webs: `kind` is added, removed,
    lastmod, changefreq or priority; `old`/`new` the hint's raw text ("" absent)."""

    sitemap: str
    url: str
    kind: str
    old: str = ""
    new: str = ""


class Truth:
    """Answers about `web` as served on `port` (see the module docstring)."""

    def __init__(self, web: Web, port: int) -> None:
        self.web = web
        self.port = port
        self._sites = {s.host: s for s in web.sites}
        self._robots: dict[str, tuple[Robots | None | Literal[False], str]] = {}
        self._listed: dict[bool, frozenset[str]] = {}

    # --- addresses -------------------------------------------------------

    def base_url(self, site: Site | str) -> str:
        """``http://HOST:PORT/`` of a site (or of its host address)."""
        host = site.host if isinstance(site, Site) else site
        return f"http://{host}:{self.port}/"

    def url(self, site: Site | str, path: str) -> str:
        """The absolute URL of `path` (a reference) on `site`."""
        return urljoin(self.base_url(site), self._expand(path))

    def site_of(self, url: str) -> Site | None:
        """The site serving `url`, or None if it is outside the web."""
        parts = urlsplit(url)
        if parts.scheme != "http" or parts.port != self.port or parts.hostname is None:
            return None
        return self._sites.get(parts.hostname)

    def _expand(self, ref: str) -> str:
        return expand_ref(ref, self.port, self.web.hosts)

    # --- pages -----------------------------------------------------------

    def page_urls(self) -> frozenset[str]:
        """Every page URL of every site (explicit pages and page ranges)."""
        return frozenset(self.url(s, p) for s in self.web.sites for p in s.page_paths())

    def faults(self) -> dict[str, FaultSpec]:
        """The description's initial faults, by absolute URL."""
        return {self.url(s, path): f for s in self.web.sites for path, f in s.faults}

    def outlinks(self, site: Site, page: Page, follow_nofollow: bool = False) -> tuple[str, ...]:
        """The absolute URLs `page` links to, resolved against its
        ``<base href>`` (if any), fragments dropped, http(s) only.

        Links with rel=nofollow, and all links of a page whose meta robots
        says nofollow, are left out unless `follow_nofollow`.
        """
        if not (follow_nofollow or page.follows_links):
            return ()
        page_url = self.url(site, page.path)
        base = urljoin(page_url, self._expand(page.base_href)) if page.base_href else page_url
        out: list[str] = []
        for link in page.links:
            if link.nofollow and not follow_nofollow:
                continue
            url = urldefrag(urljoin(base, self._expand(link.href))).url
            if urlsplit(url).scheme in ("http", "https") and url not in out:
                out.append(url)
        return tuple(out)

    def link_graph(self, follow_nofollow: bool = False) -> dict[str, tuple[str, ...]]:
        """Page URL -> the URLs it links to (see `outlinks`), for every page."""
        return {self.url(s, p.path): self.outlinks(s, p, follow_nofollow)
                for s in self.web.sites for p in s.iter_pages()}

    def seeds(self) -> tuple[str, ...]:
        """The home pages (each site's `seeds`) link reachability starts from."""
        return tuple(self.url(s, p) for s in self.web.sites for p in s.seeds)

    def hops(self, seeds: Iterable[str] | None = None,
             follow_nofollow: bool = False) -> dict[str, int]:
        """Breadth-first link distance of every URL reachable from `seeds`
        (default: `seeds()`), seeds at 0. URLs that are not pages (404s,
        outside the web) are reached but lead nowhere."""
        graph = self.link_graph(follow_nofollow)
        dist: dict[str, int] = {}
        queue: deque[str] = deque()
        for seed in self.seeds() if seeds is None else seeds:
            if seed not in dist:
                dist[seed] = 0
                queue.append(seed)
        while queue:
            url = queue.popleft()
            for nxt in graph.get(url, ()):
                if nxt not in dist:
                    dist[nxt] = dist[url] + 1
                    queue.append(nxt)
        return dist

    def link_reachable(self, follow_nofollow: bool = False) -> frozenset[str]:
        """URLs of the web's hosts reachable by links from the seeds."""
        return frozenset(u for u in self.hops(follow_nofollow=follow_nofollow)
                         if self.site_of(u) is not None)

    def link_only(self, follow_nofollow: bool = False) -> frozenset[str]:
        """URLs reachable by links that no sitemap lists."""
        return self.link_reachable(follow_nofollow) - self.sitemap_listed()

    # --- sitemaps --------------------------------------------------------

    def sitemaps(self) -> dict[str, Sitemap]:
        """Every described sitemap, by absolute URL."""
        return {self.url(s, sm.path): sm for s in self.web.sites for sm in s.sitemaps}

    def sitemap(self, url: str) -> Sitemap:
        """The sitemap served at `url`; KeyError names the URL if there is none."""
        site = self.site_of(url)
        parts = urlsplit(url)
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        found = site.lookup(target) if site else None
        if not isinstance(found, Sitemap):
            raise KeyError(f"no sitemap at {url}")
        return found

    def entries(self, sitemap_url: str) -> Iterator[ListedEntry]:
        """The entries of the sitemap at `sitemap_url`, resolved, lazily."""
        sm = self.sitemap(sitemap_url)
        parts = urlsplit(sitemap_url)
        folder = parts.path.rsplit("/", 1)[0] + "/"
        for e in sm.all_entries():
            url = urljoin(sitemap_url, self._expand(e.loc))
            u = urlsplit(url)
            scoped = (u.scheme, u.netloc) == (parts.scheme, parts.netloc) and u.path.startswith(
                folder)
            yield ListedEntry(url, e, scoped)

    def listed_by(self, sitemap_url: str, in_scope_only: bool = False) -> tuple[str, ...]:
        """The URLs a sitemap lists (for an index: its child sitemaps), in order."""
        return tuple(e.url for e in self.entries(sitemap_url) if e.in_scope or not in_scope_only)

    def children(self, index_url: str) -> tuple[str, ...]:
        """The child sitemap URLs of an index (empty for a urlset)."""
        return self.listed_by(index_url) if self.sitemap(index_url).index else ()

    def sitemap_listed(self, in_scope_only: bool = False) -> frozenset[str]:
        """URLs listed by any urlset/text/feed sitemap of the web (kept once
        computed: generated sitemaps make this the costly question)."""
        if in_scope_only not in self._listed:
            self._listed[in_scope_only] = frozenset(
                u for url, sm in self.sitemaps().items() if not sm.index
                for u in self.listed_by(url, in_scope_only))
        return self._listed[in_scope_only]

    def discoverable_sitemaps(self) -> frozenset[str]:
        """Sitemap URLs found from robots.txt Sitemap lines, then through
        indexes, that the web really serves as sitemaps."""
        known = self.sitemaps()
        found: set[str] = set()
        todo = [u for s in self.web.sites for u in self.robots_sitemaps(s)]
        while todo:
            url = todo.pop()
            if url in found or url not in known:
                continue
            found.add(url)
            if known[url].index:
                todo.extend(self.children(url))
        return frozenset(found)

    def sitemap_changes(self, before: Truth) -> list[SitemapChange]:
        """What changed in the sitemaps served both `before` and now (same port), as a crawler
        comparing two parses of each sees it: URLs added, removed, and each hint (lastmod,
        changefreq, priority) whose text moved. Raw hint text, as written in the descriptions;
        sitemaps present in only one of the two are left out (nothing to compare)."""
        found: list[SitemapChange] = []
        old_maps = before.sitemaps()
        for url in sorted(self.sitemaps().keys() & old_maps.keys()):
            old = {e.url: e.entry for e in before.entries(url)}
            new = {e.url: e.entry for e in self.entries(url)}
            for loc in sorted(old.keys() | new.keys()):
                if loc not in old:
                    found.append(SitemapChange(url, loc, "added"))
                elif loc not in new:
                    found.append(SitemapChange(url, loc, "removed"))
                else:
                    for kind in ("lastmod", "changefreq", "priority"):
                        was, now = getattr(old[loc], kind), getattr(new[loc], kind)
                        if was != now:
                            found.append(SitemapChange(url, loc, kind, was, now))
        return found

    # --- robots.txt ------------------------------------------------------

    def robots_sitemaps(self, site: Site | str) -> tuple[str, ...]:
        """The proper ``Sitemap:`` lines of the robots.txt a site really
        serves (after a redirect, the target's), resolved against the URL it
        came from (relative ones included); none without a robots.txt."""
        site = site if isinstance(site, Site) else self.web.site(site)
        robots, robots_url = self._effective_robots(site)
        if not isinstance(robots, Robots):
            return ()
        return tuple(urljoin(robots_url, self._expand(s)) for s in robots.sitemaps)

    def _effective_robots(self, site: Site) -> tuple[Robots | None | Literal[False], str]:
        """The robots.txt rules in force for `site` and the URL they came
        from: a `Robots`, None (allow all: 4xx, or a redirect out of the
        web) or False (disallow all: 5xx, reset, too many redirects)."""
        if site.host not in self._robots:
            self._robots[site.host] = self._follow_robots(site)
        return self._robots[site.host]

    def _follow_robots(self, site: Site) -> tuple[Robots | None | Literal[False], str]:
        url = self.url(site, ROBOTS_PATH)
        for _ in range(_ROBOTS_REDIRECT_HOPS):
            fault = dict(site.faults).get(ROBOTS_PATH)
            if fault is None or fault.kind in (Fault.SLOW, Fault.TRICKLE, Fault.OVERSIZED,
                                               Fault.WRONG_TYPE):
                return site.robots, url
            if fault.kind in (Fault.NOT_FOUND, Fault.GONE):
                return None, url
            if fault.kind is not Fault.REDIRECT:
                return False, url
            url = urljoin(url, self._expand(fault.target))
            next_site = self.site_of(url)
            if next_site is None or urlsplit(url).path != ROBOTS_PATH:
                return None, url
            site = next_site
        return False, url

    def is_allowed(self, agent: str, url: str) -> bool:
        """Whether robots.txt lets `agent` (a product token such as
        ``"sitemapcrawl"``) fetch `url`; URLs outside the web are allowed.

        Longest matching rule wins, Allow wins a tie, ``*`` and ``$`` work as
        in RFC 9309; the groups naming `agent` (case-insensitively) apply,
        else the ``*`` groups.
        """
        site = self.site_of(url)
        if site is None or urlsplit(url).path == ROBOTS_PATH:
            return True
        robots, _ = self._effective_robots(site)
        if robots is None:
            return True
        if robots is False:
            return False
        parts = urlsplit(url)
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        best_len, allowed = -1, True
        for group in _groups_for(robots, agent):
            for rules, verdict in ((group.disallow, False), (group.allow, True)):
                for pattern in rules:
                    longer = len(pattern) > best_len or (len(pattern) == best_len and verdict)
                    if pattern and longer and _rule_matches(pattern, target):
                        best_len, allowed = len(pattern), verdict
        return allowed

    def disallowed(self, agent: str) -> frozenset[str]:
        """Pages, sitemap-listed and link-reachable URLs of the web that
        robots.txt forbids to `agent`."""
        candidates = self.page_urls() | self.sitemap_listed() | self.link_reachable()
        return frozenset(u for u in candidates if not self.is_allowed(agent, u))

    def crawl_delay(self, site: Site | str, agent: str) -> float | None:
        """The Crawl-delay robots.txt gives `agent` on `site`, if any."""
        site = site if isinstance(site, Site) else self.web.site(site)
        robots, _ = self._effective_robots(site)
        if not isinstance(robots, Robots):
            return None
        delays = [g.crawl_delay for g in _groups_for(robots, agent) if g.crawl_delay is not None]
        return delays[0] if delays else None

    # --- everything ------------------------------------------------------

    def to_json(self, agent: str = "sitemapcrawl") -> dict[str, object]:
        """All of the above as JSON-ready data (lists sorted where unordered)."""
        return {
            "web": self.web.name,
            "port": self.port,
            "sites": [
                {
                    "host": s.host,
                    "name": s.name,
                    "base_url": self.base_url(s),
                    "robots_sitemaps": list(self.robots_sitemaps(s)),
                    "crawl_delay": self.crawl_delay(s, agent),
                }
                for s in self.web.sites
            ],
            "pages": sorted(self.page_urls()),
            "sitemaps": {
                url: {"format": sm.format.value, "index": sm.index,
                      "urls": list(self.listed_by(url))}
                for url, sm in self.sitemaps().items()
            },
            "discoverable_sitemaps": sorted(self.discoverable_sitemaps()),
            "sitemap_listed": sorted(self.sitemap_listed()),
            "link_only": sorted(self.link_only()),
            "hops": dict(sorted(self.hops().items())),
            "faults": {u: f.kind.value for u, f in sorted(self.faults().items())},
            "agent": agent,
            "disallowed": sorted(self.disallowed(agent)),
        }


def _groups_for(robots: Robots, agent: str) -> list[RobotsGroup]:
    """The groups naming `agent`, or else the ``*`` groups."""
    token = agent.split("/")[0].strip().lower()
    named = [g for g in robots.groups if any(a.strip().lower() == token for a in g.agents)]
    return named or [g for g in robots.groups if any(a.strip() == "*" for a in g.agents)]


@functools.lru_cache(maxsize=1024)
def _rule_regex(pattern: str) -> re.Pattern[str]:
    anchored = pattern.endswith("$")
    body = pattern[:-1] if anchored else pattern
    return re.compile(".*".join(re.escape(part) for part in body.split("*"))
                      + ("$" if anchored else ""))


def _rule_matches(pattern: str, target: str) -> bool:
    return _rule_regex(pattern).match(target) is not None
