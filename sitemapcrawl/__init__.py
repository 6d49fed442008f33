"""sitemapcrawl: an HBase-backed, sitemap-focused web crawler.

The package root is above every floor: it wires defaults that a low floor
names but may not import. `default_sitemap_fetcher` is the HTTP client
`sitemaps.sitemap_tree_for_homepage` uses when it is given no web client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sitemapcrawl.web.http import PoliteHttpClient

__version__ = "0.1.0"


def default_sitemap_fetcher() -> PoliteHttpClient:
    """Our polite HTTP client, from the environment's settings (defaults < `SITEMAPCRAWL_*`).

    The user agent is the settings' or `sitemapcrawl/VERSION`. Cost: imports
    `web.http` (requests) on the first call, nothing at import.
    """
    import dataclasses
    import os

    from sitemapcrawl.config import load_settings
    from sitemapcrawl.web.http import PoliteHttpClient

    settings = load_settings(environ=os.environ)
    if not settings.user_agent:
        settings = dataclasses.replace(settings, user_agent=f"sitemapcrawl/{__version__}")
    return PoliteHttpClient.from_settings(settings, max_bytes=settings.max_sitemap_bytes)
