"""Sitemap scope: which URLs a sitemap may list, by the folder rule or by vouching.

The sitemaps.org folder rule loses most of what real sites publish (sitemaps
kept in folders, pages all over the host), so a sitemap a host vouches for
(its robots.txt lists it, an index it vouches for lists it within
`max_index_depth` levels, or it was injected for a seed) may list any URL on
that host; a sitemap nobody vouches for keeps the folder rule. A dropped
entry has a reason, `folder` or `host` (`Scope.why_not`). The rules, with
a worked example: docs/sitemaps.md, Sitemap scope.

The jobs record who vouches on the sitemap's row and hand it in through
`ScopeContext`; this module only decides. Pure: no HBase, no network.
Cost: one `startswith` per URL in the common case; `urlsplit` and dot-segment
removal only for URLs that do not match a prefix as written, and the reason
of a drop only for dropped URLs.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from sitemapcrawl.sitemaps.normalize import is_normal_loc
from sitemapcrawl.urlparts import DEFAULT_PORTS, HTTP_SCHEMES, host_port, origin_parts

if TYPE_CHECKING:
    from sitemapcrawl.config import Settings

#: Drop reasons, as the per-sitemap counts name them.
FOLDER = "folder"
HOST = "host"


def _host_text(scheme: str, host: str, port: int) -> str:
    return host_port(host, None if port == DEFAULT_PORTS[scheme] else port)


def vouch_host(url: str) -> str | None:
    """The host a URL belongs to for vouching: `name`, or `name:port` off the default port.

    `http://WWW.Example.com/x` and `https://www.example.com:443/` -> `www.example.com`;
    `http://127.0.0.2:8700/` -> `127.0.0.2:8700`. None for a URL that is not http(s).
    """
    origin = origin_parts(url)
    return None if origin is None else _host_text(*origin)


def host_of(text: str) -> str | None:
    """A vouching host from a URL or a bare host (`Example.com`, `h:8080`), or None."""
    text = text.strip()
    return vouch_host(text if "://" in text else f"http://{text}/")


def _prefix_text(origin: tuple[str, str, int], folder: str) -> str:
    scheme, host, port = origin
    return f"{scheme}://{_host_text(scheme, host, port)}{folder}"


def _folder(path: str) -> str:
    """The directory of a sitemap's path: everything up to its last "/"."""
    return path[: path.rfind("/") + 1] or "/"


# ------------------------------------------------------------- vouchers ---


def merge_vouchers(*groups: Mapping[str, int]) -> dict[str, int]:
    """Host -> the fewest index levels it vouches through, over several sources."""
    merged: dict[str, int] = {}
    for group in groups:
        for host, level in group.items():
            if host not in merged or level < merged[host]:
                merged[host] = level
    return merged


def inherited_vouchers(vouchers: Mapping[str, int], max_index_depth: int) -> dict[str, int]:
    """What an index's children inherit: each host one level further, within `max_index_depth`.

    A host that vouches for an index at level L vouches for its children at
    L + 1; beyond `max_index_depth` levels the vouching stops (the children
    keep the folder rule, as the index's own depth limit stops a tree walk).
    """
    return {host: level + 1 for host, level in vouchers.items() if level + 1 <= max_index_depth}


def vouchers_after_redirect(
    vouchers: Mapping[str, int], original: str, final: str, *, same_site: bool
) -> dict[str, int]:
    """Who vouches for a sitemap read at `final` after a redirect from `original`.

    The hosts that vouched for the original URL still do. When the sitemap's
    own host vouched for it and the redirect stays within the same registered
    domain (`same_site`, e.g. http://example.com/ -> https://www.example.com/),
    the final host vouches too: the site moved its own sitemap. A redirect to
    another registered domain vouches for nothing new: the document there
    keeps the folder rule for its own host.
    """
    out = dict(vouchers)
    source, target = vouch_host(original), vouch_host(final)
    if source is not None and target is not None and source in vouchers and same_site:
        out = merge_vouchers(out, {target: vouchers[source]})
    return out


def format_vouchers(vouchers: Mapping[str, int]) -> tuple[str, ...]:
    """`HOST LEVEL` lines, sorted by host (the text of the row's column)."""
    return tuple(f"{host} {level}" for host, level in sorted(vouchers.items()))


def parse_vouchers(lines: Iterable[str]) -> dict[str, int]:
    """Inverse of `format_vouchers`; lines that are not `HOST LEVEL` are skipped."""
    out: dict[str, int] = {}
    for line in lines:
        host_text, _, level_text = line.strip().rpartition(" ")
        host = host_of(host_text) if host_text else None
        if host is None or not level_text.isdigit():
            continue
        out = merge_vouchers(out, {host: int(level_text)})
    return out


# ---------------------------------------------------------------- scope ---


@dataclass(frozen=True)
class ScopeContext:
    """What the caller knows about a sitemap's scope beyond its own URL."""

    strict: bool = True
    """Drop entries outside the scope (off: keep every http(s) URL)."""
    cross_submitted_from: tuple[str, ...] = ()
    """URLs of robots.txt files (or any URL on those hosts) that listed this sitemap:
    each such host vouches for it."""
    vouched_by: tuple[str, ...] = ()
    """Hosts (or URLs on them) that vouch for this sitemap (see the module docstring)."""

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        cross_submitted_from: Iterable[str] = (),
        vouched_by: Iterable[str] = (),
    ) -> ScopeContext:
        """The context for `settings.strict_scope`, the listing robots.txt URLs and the vouchers."""
        return cls(
            strict=settings.strict_scope,
            cross_submitted_from=tuple(cross_submitted_from),
            vouched_by=tuple(vouched_by),
        )

    def vouching_hosts(self) -> tuple[str, ...]:
        """Every host that vouches, in a stable order, without duplicates."""
        hosts = (host_of(text) for text in (*self.vouched_by, *self.cross_submitted_from))
        return tuple(dict.fromkeys(host for host in hosts if host is not None))


class Scope:
    """Decides whether one sitemap may list a URL (see module docstring)."""

    def __init__(
        self,
        prefixes: Iterable[tuple[tuple[str, str, int], str]],
        strict: bool,
        vouchers: Iterable[str] = (),
        own_host: str | None = None,
    ) -> None:
        self.strict = strict
        self._rules = tuple(prefixes)
        self._vouchers = frozenset(vouchers)
        self._own_host = own_host
        host_prefixes = [
            f"{scheme}://{host}/" for host in sorted(self._vouchers) for scheme in HTTP_SCHEMES
        ]
        self._texts = (
            *(_prefix_text(origin, folder) for origin, folder in self._rules),
            *host_prefixes,
        )
        # For the urlset reader's fast path: a `loc` text that is ASCII, printable
        # and without space, and starts with one of `open_prefixes` (or with one
        # of `folder_prefixes` and has no "/." that could climb out of the
        # folder), is normal as written (`is_normal_loc`: the prefix holds the
        # whole host and port) and allowed. Any path is allowed under a "/"
        # folder or a vouching host, and anything at all when scope is not strict.
        folders = [folder for _origin, folder in self._rules] + ["/"] * len(host_prefixes)
        normal = [
            (text, folder)
            for text, folder in zip(self._texts, folders, strict=True)
            if is_normal_loc(text)
        ]
        self.open_prefixes = tuple(text for text, folder in normal if folder == "/" or not strict)
        self.folder_prefixes = tuple(text for text, folder in normal if folder != "/" and strict)

    @classmethod
    def for_document(
        cls, url: str, *, index: bool, context: ScopeContext | None = None
    ) -> Scope:
        """The scope of the sitemap at `url` (an index: its whole origin), widened by vouchers.

        A document without an http(s) URL (a local file) has no scope: nothing
        is dropped (`strict` is then False).
        """
        context = context or ScopeContext()
        origin = origin_parts(url)
        if origin is None:
            return cls([], strict=False)
        rules = [(origin, "/" if index else _folder(urlsplit(url.strip()).path))]
        return cls(rules, context.strict, context.vouching_hosts(), _host_text(*origin))

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

    def why_not(self, loc: str) -> str | None:
        """Why `loc` is out of scope (`FOLDER` or `HOST`), or None when it is allowed.

        Called for dropped entries only, so it may cost a `urlsplit`.
        """
        if self.allows(loc):
            return None
        host = vouch_host(loc)
        return FOLDER if host is not None and host == self._own_host else HOST

    def _allows_slow(self, loc: str) -> bool:
        origin = origin_parts(loc)
        if origin is None:
            return False
        if self._vouchers and _host_text(*origin) in self._vouchers:
            return True
        path = urlsplit(loc).path or "/"
        clean = "/" + posixpath.normpath(path).lstrip("/")
        if path.endswith("/") and not clean.endswith("/"):
            clean += "/"
        return any(
            origin == rule_origin and clean.startswith(folder)
            for rule_origin, folder in self._rules
        )
