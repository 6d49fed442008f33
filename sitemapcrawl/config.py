"""Settings, resolved once: defaults < TOML file < environment < flags.

Every setting is a field of `Settings`. The TOML file uses the field names
(`user_agent = "..."`, dashes allowed in place of underscores), the environment
uses `SITEMAPCRAWL_` and the name in capitals (`SITEMAPCRAWL_USER_AGENT`), and
the CLI hands in flags it was given. Values from text (environment) are
converted to the field's type; a value of the wrong type names the setting and
where it came from.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sitemapcrawl.errors import UsageError

ENV_PREFIX = "SITEMAPCRAWL_"

#: Session-id parameter names stripped from paths and queries by default.
DEFAULT_SESSION_ID_NAMES = (
    "jsessionid",
    "phpsessid",
    "sid",
    "aspsessionid",
    "cfid",
    "cftoken",
)


@dataclass(frozen=True)
class Settings:
    """Every tunable of sitemapcrawl, with its default."""

    # --- HBase ---------------------------------------------------------------
    hbase: str = "127.0.0.1:9090"
    """HOST:PORT of the HBase Thrift1 server."""
    table_prefix: str = ""
    """Prefix for table names, so several crawls (or tests) share one HBase."""
    hbase_timeout_ms: int = 30_000
    """Socket timeout of each Thrift call."""
    hbase_retries: int = 8
    """Attempts per HBase operation before giving up (reconnecting in between;
    pauses grow from 0.25 s to 5 s, so 8 attempts ride out a ~20 s restart)."""
    hbase_batch_size: int = 1_000
    """Rows per batched write and per scanner round trip."""

    # --- identity and politeness --------------------------------------------
    user_agent: str | None = None
    """User-Agent header; its product token is matched in robots.txt groups."""
    delay: float = 1.0
    """Seconds between the end of one request and the start of the next, per host."""
    http_connect_timeout: float = 10.0
    http_read_timeout: float = 30.0
    max_content_bytes: int = 10_000_000
    """Largest body read from a server (pages); bigger bodies are truncated."""
    max_robots_bytes: int = 500_000
    """Largest robots.txt read (Google reads 500 KiB); bigger files are truncated."""
    max_redirects: int = 5
    robots_retry_interval: int = 3_600
    """Seconds before a robots.txt that failed (5xx, timeout) is tried again."""
    threads: int = 8
    """Worker threads for jobs that talk to many hosts (one host per thread at a time)."""
    threads_per_host: int = 1
    """fetch: requests in flight at once per queue (host, or IP with queue_by = "ip")."""
    queue_by: str = "host"
    """fetch: what one politeness queue is: `host` (the host name) or `ip` (its address)."""
    max_crawl_delay: float = 30.0
    """fetch: a robots.txt Crawl-delay above this defers the host's URLs (as Nutch does)."""
    robots_max_age: int = 86_400
    """fetch: seconds a stored robots.txt is trusted before it is fetched again."""
    fetch_retry_interval: int = 3_600
    """fetch: seconds before a failed URL (5xx, timeout) is due again; doubles per retry."""
    max_fetch_retries: int = 3
    """fetch: failed fetches in a row after which a URL becomes gone."""
    deferred_interval: int = 86_400
    """fetch: seconds before a deferred URL (crawl delay too long, robots.txt failing) is due again."""
    store_content: bool = False
    """fetch: keep page bodies in the content family (sitemap bodies are always kept)."""
    max_cell_bytes: int = 10_485_760
    """HBase's `hbase.client.keyvalue.maxsize`: a compressed body larger than this is not stored."""
    crawl_mode: str = "mixed"
    """What the crawl fetches: `sitemap-only`, `mixed` or `links-only`."""

    # --- seeds ---------------------------------------------------------------
    seed_score: float = 1.0
    """Score of a seed that gives none."""
    seed_depth: int = 2
    """Hops allowed within a seed's site, when the seed line gives no `depth`."""
    seed_radius: int = 0
    """Hops allowed after leaving the seed's site, when the seed line gives no `radius`."""
    default_fetch_interval: int = 30 * 24 * 3600
    """Seconds between fetches of a page with no hints (Nutch's default: 30 days)."""

    # --- schedule (updatedb) and parse ------------------------------------------
    min_fetch_interval: int = 3_600
    """schedule: shortest interval between fetches of a row, seconds (changefreq and adaptive)."""
    max_fetch_interval: int = 365 * 24 * 3600
    """schedule: longest interval between fetches of a row, seconds."""
    adaptive_inc_rate: float = 0.4
    """schedule: an unchanged page's interval grows by this fraction (Nutch's INC_RATE)."""
    adaptive_dec_rate: float = 0.2
    """schedule: a changed page's interval shrinks by this fraction (Nutch's DEC_RATE)."""
    max_outlinks_per_page: int = 1_000
    """parse: outlinks kept per HTML page, first ones in document order."""

    # --- sitemaps ------------------------------------------------------------
    max_sitemap_urls: int = 50_000
    """Entries kept per sitemap document (sitemaps.org limit)."""
    max_sitemap_bytes: int = 10_000_000
    """Uncompressed bytes read per sitemap document; also caps decompression."""
    max_index_depth: int = 5
    """How deep sitemap indexes are followed."""
    strict_scope: bool = True
    """Drop sitemap entries outside the sitemap's scheme, host, port and folder."""

    # --- sitemap quality (updatedb; sitemapcrawl/quality.py) ------------------
    sitemap_quality: bool = True
    """updatedb: score every sitemap and weight its URLs' priority (two scans of the listed rows)."""
    sitemap_demote_below: float = 0.7
    """A sitemap scoring under this is demoted: its entries' priority counts `sitemap_demote_factor` as much."""
    sitemap_blacklist_below: float = 0.2
    """A sitemap scoring under this is blacklisted automatically (the reason goes to `s:bl`)."""
    sitemap_demote_factor: float = 0.5
    """What a demoted sitemap's weight (its score) is multiplied by."""
    sitemap_stale_days: int = 365
    """A sitemap whose newest date is older than this many days starts losing freshness."""
    sitemap_trusted: tuple[str, ...] = ()
    """Sitemap URLs pinned as trusted: never demoted or blacklisted by quality; priority counts in full."""
    sitemap_blocked: tuple[str, ...] = ()
    """Sitemap URLs pinned as blocked: blacklisted whatever their quality."""

    # --- URL rules -----------------------------------------------------------
    url_filter: Path | None = None
    """File of ordered +regex / -regex lines; first match wins."""
    sitemap_blacklist: Path | None = None
    """File of host names, URL prefixes or re:REGEX lines whose sitemaps are skipped."""
    max_url_length: int = 2_048
    allowed_schemes: tuple[str, ...] = ("http", "https")
    session_id_names: tuple[str, ...] = DEFAULT_SESSION_ID_NAMES
    strip_www: bool = False
    """Strip a leading `www.` from hosts (off: it changes which server is asked)."""
    url_lowercase: bool = True
    """Canonical URLs: lowercase the scheme and the host."""
    url_idn_to_punycode: bool = True
    """Canonical URLs: write international host names as punycode."""
    url_strip_userinfo: bool = True
    """Canonical URLs: drop `user:password@` (off: such URLs are refused)."""
    url_strip_default_port: bool = True
    """Canonical URLs: drop `:80` from http and `:443` from https."""
    url_remove_fragment: bool = True
    """Canonical URLs: drop `#fragment`."""
    url_resolve_dot_segments: bool = True
    """Canonical URLs: resolve `.` and `..` path segments."""
    url_normalize_percent: bool = True
    """Canonical URLs: decode escaped unreserved characters, uppercase escapes, escape the rest."""
    url_strip_session_ids: bool = True
    """Canonical URLs: remove `session_id_names` from paths (`;jsessionid=`) and queries."""
    url_drop_empty_query: bool = True
    """Canonical URLs: drop empty query parameters (`&&`) and a bare trailing `?`."""

    extra: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """Keys of the TOML file that no field names (kept, so a warning can name them)."""

    @property
    def hbase_host(self) -> str:
        """The host part of `hbase`."""
        return split_host_port(self.hbase)[0]

    @property
    def hbase_port(self) -> int:
        """The port part of `hbase`."""
        return split_host_port(self.hbase)[1]


def split_host_port(address: str) -> tuple[str, int]:
    """Split `HOST:PORT` (IPv6 as `[::1]:9090`); raise UsageError naming the address."""
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise UsageError(f"bad HBase address {address!r}: expected HOST:PORT")
    return host.strip("[]"), int(port)


def _field_types() -> dict[str, Any]:
    hints = typing.get_type_hints(Settings)
    return {f.name: hints[f.name] for f in dataclasses.fields(Settings) if f.name != "extra"}


def _convert(name: str, value: Any, target: Any, source: str) -> Any:
    """Convert `value` to the type of setting `name`; UsageError says where it came from."""
    if value is None:
        return None
    origin = typing.get_origin(target)
    args = typing.get_args(target)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        if isinstance(value, str) and value == "" and type(None) in args:
            return None
        return _convert(name, value, inner[0], source)
    try:
        if target is bool:
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in ("1", "true", "yes", "on"):
                return True
            if text in ("0", "false", "no", "off"):
                return False
            raise ValueError(value)
        if target is int:
            if isinstance(value, bool):
                raise ValueError(value)
            return int(value)
        if target is float:
            return float(value)
        if target is str:
            return str(value)
        if target is Path:
            return Path(value).expanduser()
        if origin is tuple:
            items = value.split(",") if isinstance(value, str) else list(value)
            return tuple(str(item).strip() for item in items if str(item).strip())
    except (TypeError, ValueError):
        pass
    else:
        return value
    raise UsageError(f"setting {name!r} from {source}: cannot use {value!r}")


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except FileNotFoundError:
        raise UsageError(f"config file not found: {path}") from None
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"config file {path}: {exc}") from None
    return {key.replace("-", "_"): value for key, value in data.items()}


def load_settings(
    config_file: Path | None = None,
    environ: Mapping[str, str] | None = None,
    flags: Mapping[str, Any] | None = None,
) -> Settings:
    """Build the settings once: defaults < TOML file < environment < flags.

    `flags` holds only options the user gave (None means "not given"). Raises
    UsageError for an unreadable file or a value of the wrong type.
    """
    environ = os.environ if environ is None else environ
    types_by_name = _field_types()
    values: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    if config_file is not None:
        for key, value in _read_toml(config_file).items():
            if key in types_by_name:
                values[key] = _convert(key, value, types_by_name[key], f"file {config_file}")
            else:
                extra[key] = value
    for name, target in types_by_name.items():
        env_name = ENV_PREFIX + name.upper()
        if env_name in environ:
            values[name] = _convert(name, environ[env_name], target, f"${env_name}")
    for name, value in (flags or {}).items():
        if value is not None:
            values[name] = _convert(name, value, types_by_name[name], f"--{name.replace('_', '-')}")
    return Settings(**values, extra=extra)
