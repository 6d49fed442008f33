"""sitemapcrawl: an HBase-backed, sitemap-focused web crawler.

The package root is above every floor: it wires defaults that a low floor
names but may not import. `default_sitemap_fetcher` is the HTTP client
`sitemaps.sitemap_tree_for_homepage` uses when it is given no web client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sitemapcrawl.config import Settings
    from sitemapcrawl.web.http import PoliteHttpClient

__version__ = "0.1.0"


def default_sitemap_fetcher(settings: Settings | None = None, delay: float | None = None) -> PoliteHttpClient:
    """Our polite HTTP client for the usp drop-in, from `settings` (default: the environment's).

    One request at a time per host, `delay` seconds apart: the argument, else
    the `delay` setting where it was set, else none (as usp fetches), and
    longer for a host whose robots.txt asks for a Crawl-delay (`honour_robots`).
    The user agent is the settings' or `sitemapcrawl/VERSION`. Cost: imports
    `web.http` (aiohttp) on the first call, nothing at import.
    """
    import dataclasses
    import os

    from sitemapcrawl.config import load_settings
    from sitemapcrawl.web.http import PoliteHttpClient

    settings = settings or load_settings(environ=os.environ)
    if not settings.user_agent:
        settings = dataclasses.replace(settings, user_agent=f"sitemapcrawl/{__version__}")
    pace = delay if delay is not None else settings.delay if "delay" in settings.sources else 0.0
    return PoliteHttpClient.from_settings(dataclasses.replace(settings, delay=pace),
                                          max_bytes=settings.max_sitemap_bytes)
