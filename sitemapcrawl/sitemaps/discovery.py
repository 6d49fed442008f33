"""Where a site's sitemaps are announced or usually live.

`WELL_KNOWN_SITEMAP_PATHS` is taken from ultimate-sitemap-parser at import
time (its private `usp.tree._UNPUBLISHED_SITEMAP_PATHS` set, ordered so the
common names come first), falling back to the same list as documented for
usp 1.8 if a later version renames it. robots.txt `Sitemap:` lines come from
protego (`Protego.parse(text).sitemaps`), so no parser of our own is needed.
Pure functions: no network.
"""

from __future__ import annotations

from urllib.parse import urljoin, urlsplit

from protego import Protego

_DOCUMENTED_USP_PATHS = (
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


def _usp_paths() -> tuple[str, ...]:
    try:
        from usp import tree
    except ImportError:
        return _DOCUMENTED_USP_PATHS
    paths = getattr(tree, "_UNPUBLISHED_SITEMAP_PATHS", None)
    if not paths or not all(isinstance(path, str) for path in paths):
        return _DOCUMENTED_USP_PATHS
    order = {path: index for index, path in enumerate(_DOCUMENTED_USP_PATHS)}
    return tuple(sorted(paths, key=lambda path: (order.get(path, len(order)), path)))


#: Paths (relative to the site root) where sitemaps often are without being announced.
WELL_KNOWN_SITEMAP_PATHS: tuple[str, ...] = _usp_paths()


def site_root(url: str) -> str:
    """`scheme://host[:port]/` of `url` (ValueError for a URL without one)."""
    parts = urlsplit(url.strip())
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        raise ValueError(f"not an http(s) URL: {url!r}")
    return f"{parts.scheme.lower()}://{parts.netloc}/"


def robots_txt_url(url: str) -> str:
    """The robots.txt URL of the site of `url`."""
    return site_root(url) + "robots.txt"


def well_known_sitemap_urls(url: str) -> list[str]:
    """The well-known sitemap URLs of the site of `url`, most common first."""
    root = site_root(url)
    return [urljoin(root, path) for path in WELL_KNOWN_SITEMAP_PATHS]


def robots_sitemaps(robots_txt: str) -> list[str]:
    """The `Sitemap:` URLs of a robots.txt text, in order, without duplicates."""
    seen: dict[str, None] = {}
    for url in Protego.parse(robots_txt).sitemaps:
        seen.setdefault(url.strip(), None)
    return [url for url in seen if url]


def is_site_root(url: str) -> bool:
    """True when `url` names a site's root (a homepage), not a document."""
    return urlsplit(url.strip()).path in ("", "/")
