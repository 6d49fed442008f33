"""The URL rules every job applies, built once per command from the settings."""

from __future__ import annotations

from dataclasses import dataclass

from sitemapcrawl.config import Settings
from sitemapcrawl.web.urlfilters import SitemapBlacklist, UrlFilter
from sitemapcrawl.web.urls import CanonicalRules


@dataclass(frozen=True)
class UrlRules:
    """Canonicalisation rules, the URL filter and the sitemap blacklist, together.

    Building it reads the filter and blacklist files once; raises UsageError
    for an unreadable file or a bad line (naming file and line).
    """

    settings: Settings
    canonical: CanonicalRules
    url_filter: UrlFilter
    blacklist: SitemapBlacklist

    @classmethod
    def from_settings(cls, settings: Settings) -> UrlRules:
        """Read the configured files and compile the rules."""
        return cls(
            settings,
            CanonicalRules.from_settings(settings),
            UrlFilter.from_settings(settings),
            SitemapBlacklist.from_settings(settings),
        )
