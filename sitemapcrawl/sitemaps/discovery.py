"""Where a site's sitemaps usually live: URL arithmetic for discovery (no network).

`WELL_KNOWN_SITEMAP_PATHS` is kept here, in the project. Its source is
ultimate-sitemap-parser 1.8 (`usp/tree.py`, the paths it probes on a site
whose robots.txt lists no sitemap), reordered so the common names come
first; that list is private to usp, so it is not read from the package.
Fetching robots.txt and probing these paths is `sitemapcrawl.web.discover`'s job.
"""

from __future__ import annotations

from urllib.parse import urljoin, urlsplit

from sitemapcrawl.urlparts import HTTP_SCHEMES

#: Paths (relative to the site root) where sitemaps often are without being announced.
WELL_KNOWN_SITEMAP_PATHS: tuple[str, ...] = (
    "sitemap.xml",
    "sitemap.xml.gz",
    "sitemap_index.xml",
    "sitemap-index.xml",
    "sitemap_index.xml.gz",
    "sitemap-index.xml.gz",
    ".sitemap.xml",
    "sitemap",
    "admin/config/search/xmlsitemap",
    "sitemap/sitemap-index.xml",
    "sitemap_news.xml",
    "sitemap-news.xml",
    "sitemap_news.xml.gz",
    "sitemap-news.xml.gz",
)


def site_root(url: str) -> str:
    """`scheme://host[:port]/` of `url` (ValueError for a URL without one)."""
    parts = urlsplit(url.strip())
    if parts.scheme.lower() not in HTTP_SCHEMES or not parts.netloc:
        raise ValueError(f"not an http(s) URL: {url!r}")
    return f"{parts.scheme.lower()}://{parts.netloc}/"


def well_known_sitemap_urls(url: str) -> list[str]:
    """The well-known sitemap URLs of the site of `url`, most common first."""
    root = site_root(url)
    return [urljoin(root, path) for path in WELL_KNOWN_SITEMAP_PATHS]


def is_site_root(url: str) -> bool:
    """True when `url` names a site's root (a homepage), not a document."""
    return urlsplit(url.strip()).path in ("", "/")
