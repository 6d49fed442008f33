"""Strict sitemap scope: which URLs a sitemap may list (sitemaps.org "location").

A sitemap at http://example.com/catalog/sitemap.xml may list URLs on the same
scheme, host and port under /catalog/ only; a sitemap index may list sitemaps
anywhere on its own scheme, host and port. When the robots.txt of another host
lists the sitemap (cross-submission), that host's URLs are in scope too: the
caller passes those robots.txt URLs in `ScopeContext`.

Cost: one `startswith` per URL in the common case; `urlsplit` and dot-segment
removal only for URLs that do not match a prefix as written. `open_prefixes`
and `folder_prefixes` let the urlset reader check a clean URL's form and
scope in one go.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from sitemapcrawl.sitemaps.normalize import is_normal_loc

if TYPE_CHECKING:
    from sitemapcrawl.config import Settings

_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class ScopeContext:
    """What the caller knows about a sitemap's scope beyond its own URL."""

    strict: bool = True
    """Drop entries outside the scope (off: keep every http(s) URL)."""
    cross_submitted_from: tuple[str, ...] = ()
    """URLs of robots.txt files (or any URL on those hosts) that listed this sitemap."""

    @classmethod
    def from_settings(
        cls, settings: Settings, cross_submitted_from: Iterable[str] = ()
    ) -> ScopeContext:
        """The context for `settings.strict_scope` and the listing robots.txt URLs."""
        return cls(strict=settings.strict_scope, cross_submitted_from=tuple(cross_submitted_from))


def _origin(url: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) in lower case with the default port filled in, or None."""
    try:
        parts = urlsplit(url.strip())
        scheme = parts.scheme.lower()
        host = parts.hostname
        port = parts.port
    except (ValueError, UnicodeError):
        return None
    if scheme not in _DEFAULT_PORTS or not host:
        return None
    return scheme, host.lower(), port or _DEFAULT_PORTS[scheme]


def _prefix_text(origin: tuple[str, str, int], folder: str) -> str:
    scheme, host, port = origin
    netloc = f"[{host}]" if ":" in host else host
    if port != _DEFAULT_PORTS[scheme]:
        netloc = f"{netloc}:{port}"
    return f"{scheme}://{netloc}{folder}"


def _folder(path: str) -> str:
    """The directory of a sitemap's path: everything up to its last "/"."""
    return path[: path.rfind("/") + 1] or "/"


class Scope:
    """Decides whether one sitemap may list a URL (see module docstring)."""

    def __init__(self, prefixes: Iterable[tuple[tuple[str, str, int], str]], strict: bool) -> None:
        self.strict = strict
        self._rules = tuple(prefixes)
        self._texts = tuple(_prefix_text(origin, folder) for origin, folder in self._rules)
        # For the urlset reader's fast path: a `loc` text that is ASCII, printable
        # and without space, and starts with one of `open_prefixes` (or with one
        # of `folder_prefixes` and has no "/." that could climb out of the
        # folder), is normal as written (`is_normal_loc`: the prefix holds the
        # whole host and port) and allowed. Any path is allowed under a "/"
        # folder, and anything at all when scope is not strict.
        normal = [
            (text, folder)
            for text, (_origin, folder) in zip(self._texts, self._rules, strict=True)
            if is_normal_loc(text)
        ]
        self.open_prefixes = tuple(text for text, folder in normal if folder == "/" or not strict)
        self.folder_prefixes = tuple(text for text, folder in normal if folder != "/" and strict)

    @classmethod
    def for_document(
        cls, url: str, *, index: bool, context: ScopeContext | None = None
    ) -> Scope:
        """The scope of the sitemap at `url` (an index: its whole origin).

        A document without an http(s) URL (a local file) has no scope: nothing
        is dropped (`strict` is then False).
        """
        context = context or ScopeContext()
        origin = _origin(url)
        if origin is None:
            return cls([], strict=False)
        rules = [(origin, "/" if index else _folder(urlsplit(url.strip()).path))]
        for other in context.cross_submitted_from:
            other_origin = _origin(other)
            if other_origin is not None:
                rules.append((other_origin, "/"))
        return cls(rules, context.strict)

    @property
    def prefixes(self) -> tuple[str, ...]:
        """The URL prefixes in scope, for messages (`http://host/folder/`)."""
        return self._texts

    def allows(self, loc: str) -> bool:
        """True when `loc` (an http(s) URL) is in scope, or scope is not strict."""
        if not self.strict:
            return True
        if loc.startswith(self._texts) and "/." not in loc:
            return True
        return self._allows_slow(loc)

    def _allows_slow(self, loc: str) -> bool:
        origin = _origin(loc)
        if origin is None:
            return False
        path = urlsplit(loc).path or "/"
        clean = "/" + posixpath.normpath(path).lstrip("/")
        if path.endswith("/") and not clean.endswith("/"):
            clean += "/"
        return any(
            origin == rule_origin and clean.startswith(folder)
            for rule_origin, folder in self._rules
        )
