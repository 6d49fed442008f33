"""robots.txt rules per host: what a fetched robots.txt means for our crawler.

Parsing is protego's (spec-complete, forgiving, no I/O); this module adds the
crawler's conventions on top, as Google and Nutch apply them:

- 2xx: the rules apply (a body over the size cap is truncated, not refused);
- 4xx (404, 410, 403 …): no robots.txt, everything is allowed;
- 5xx, a timeout or a connection error: everything is disallowed until the
  next try, because the site may be overloaded.

Text in, answers out: fetching belongs to the jobs (through `http.py`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from urllib.parse import urljoin

from protego import Protego

from sitemapcrawl.model.webpage import RobotsStatus

_PRODUCT = re.compile(r"\s*([A-Za-z0-9_\-.]+)")
# A proper Sitemap line: the key, a colon, one URL token, maybe a comment.
_SITEMAP_LINE = re.compile(r"\s*sitemap\s*:\s*(\S+)\s*(?:#.*)?", re.IGNORECASE)
_SITEMAP_KEY = re.compile(r"\s*sitemap\b", re.IGNORECASE)


def _resolve(base: str, value: str) -> str:
    """`value` resolved against `base`; as it is when it cannot be (`http://[broken`):
    the caller's canonicalisation then rejects and counts it."""
    try:
        return urljoin(base, value)
    except ValueError:
        return value


def product_token(user_agent: str) -> str:
    """The name robots.txt groups are matched against: `MyBot/1.2 (+url)` -> `MyBot`.

    For a browser-like `Mozilla/5.0 (compatible; MyBot/1.2; …)` the token is the
    first product inside the comment that is not Mozilla, as crawlers do.
    """
    inside = re.search(r"\(compatible;\s*([A-Za-z0-9_\-.]+)", user_agent)
    if user_agent.lower().startswith("mozilla/") and inside:
        return inside.group(1)
    match = _PRODUCT.match(user_agent)
    return match.group(1) if match else user_agent.strip()


def status_for_http(code: int | None) -> RobotsStatus:
    """What an HTTP outcome of a robots.txt fetch means (None: no answer at all)."""
    if code is not None and 200 <= code < 300:
        return RobotsStatus.OK
    if code is not None and 400 <= code < 500:
        return RobotsStatus.MISSING
    return RobotsStatus.ERROR


@dataclass(frozen=True)
class RobotsPolicy:
    """The rules of one host's robots.txt for one user agent."""

    status: RobotsStatus
    agent: str
    text: str = ""
    _parser: Protego | None = None

    @classmethod
    def from_text(cls, status: RobotsStatus, text: str | None, user_agent: str) -> RobotsPolicy:
        """Rules from a robots.txt body; `text` only matters when status is OK."""
        if status is not RobotsStatus.OK:
            return cls(status, product_token(user_agent))
        return cls(status, product_token(user_agent), text or "", Protego.parse(text or ""))

    def allowed(self, url: str) -> bool:
        """May our agent fetch `url`? Missing robots.txt: yes; an erroring one: no."""
        if self.status is RobotsStatus.MISSING:
            return True
        if self.status is RobotsStatus.ERROR or self._parser is None:
            return False
        return bool(self._parser.can_fetch(url, self.agent))

    @property
    def crawl_delay(self) -> float | None:
        """`Crawl-delay` of the group that applies to our agent, in seconds."""
        if self._parser is None:
            return None
        delay = self._parser.crawl_delay(self.agent)
        # `Crawl-delay: inf` or `nan` is no delay a server can mean; the cell would not read back either.
        return None if delay is None or not math.isfinite(float(delay)) else float(delay)

    def sitemaps(self, robots_url: str) -> list[str]:
        """`Sitemap:` URLs in file order, relative ones resolved against `robots_url`.

        `robots_url` is the URL the text was finally read from (after
        redirects). The values are protego's; duplicates are dropped; the group
        does not matter (Sitemap is global). Only values that stand on a proper
        `Sitemap: URL` line count: protego also takes `Sitemap /x.xml` without
        a colon and values with spaces in them, which would become sitemap rows
        that can never be fetched; `malformed_sitemap_lines` counts what is
        left out.
        """
        return list(dict.fromkeys(_resolve(robots_url, value) for value in self._sitemap_values()[0]))

    @property
    def malformed_sitemap_lines(self) -> int:
        """Lines that start with `Sitemap` but are not `Sitemap: URL`."""
        return self._sitemap_values()[1]

    def _sitemap_values(self) -> tuple[list[str], int]:
        """protego's `Sitemap` values that stand on a proper line, and the malformed lines."""
        if self._parser is None:
            return [], 0
        proper: set[str] = set()
        malformed = 0
        for line in self.text.splitlines():
            match = _SITEMAP_LINE.fullmatch(line)
            if match:
                proper.add(match.group(1))
            elif _SITEMAP_KEY.match(line):
                malformed += 1
        return [value for value in self._parser.sitemaps if value in proper], malformed
