"""Settings, resolved once: defaults < TOML file < environment < flags.

Every setting is a field of `Settings`. The TOML file uses the field names
(`user_agent = "..."`, dashes allowed in place of underscores), the environment
uses `SITEMAPCRAWL_` and the name in capitals (`SITEMAPCRAWL_USER_AGENT`), and
the CLI hands in flags it was given. Every value is converted to the field's
type and checked (`RULES`: ranges, numbers finite; a choice: its Enum) when it is loaded;
a bad one stops the command with one line naming the setting, the value and
where it came from. Each setting remembers its source (`config show`).

Hand-written rather than pydantic-settings: the conversions are few (bool,
int, float, text, path, list of text, a choice of `modes`), and importing
pydantic would cost more than all of typer at every start of the command line.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import os
import re
import tomllib
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sitemapcrawl.errors import UsageError
from sitemapcrawl.modes import CrawlMode, LogFormat, QueueBy, ThriftProtocol, ThriftTransport, choices
from sitemapcrawl.urlparts import HTTP_SCHEMES, credentials_hidden

ENV_PREFIX = "SITEMAPCRAWL_"
#: What `effective` shows instead of a value that may be a credential.
HIDDEN = "(hidden)"
#: Settings known by an older name: the old name in a file or the environment sets the new one.
RENAMED = {"threads": "max_connections"}

#: Where the setting `hbase` points by default: this machine, at the Thrift1 gateway's own default port.
HBASE_HOST, HBASE_THRIFT_PORT = "127.0.0.1", 9090
#: Session-id parameter names stripped from paths and queries by default.
DEFAULT_SESSION_ID_NAMES = ("jsessionid", "phpsessid", "sid", "aspsessionid", "cfid", "cftoken")


@dataclass(frozen=True)
class Settings:
    """Every tunable of sitemapcrawl, with its default."""

    # --- HBase ---------------------------------------------------------------
    hbase: str = f"{HBASE_HOST}:{HBASE_THRIFT_PORT}"
    """HOST:PORT of the HBase Thrift1 gateway, or several, comma-separated (`rs1:9090,rs2:9090`): the
    connections spread over them round-robin, and one that stops answering is skipped (one warning line)
    and tried again after a back-off."""
    table_prefix: str = ""
    """Prefix for table names, so several crawls (or tests) share one HBase."""
    hbase_timeout_ms: int = 30_000
    """Socket timeout of each Thrift call (connect, send and each wait for a reply): a call that never
    returns fails after this long and is retried."""
    hbase_retries: int = 8
    """Attempts per HBase operation before giving up (reconnecting in between;
    pauses grow from 0.25 s to 5 s, so 8 attempts ride out a ~20 s restart)."""
    hbase_call_timeout: float = 120.0
    """Seconds an HBase operation may take with its retries: no retry starts after this, so a store that
    does not answer fails a command within `hbase_call_timeout` + `hbase_timeout_ms` (rides out a 45 s stall)."""
    hbase_batch_size: int = 1_000
    """Rows per batched write and per scanner round trip."""
    max_row_bytes: int = 8_388_608
    """Most bytes of one row and of one write call sent to HBase: a batched write is cut by bytes too, and a
    sitemap's history (its snapshot, a parse's changes) is spread over rows below this, so a Thrift gateway
    with a 256 MB heap is never handed one huge value."""
    hbase_transport: ThriftTransport = ThriftTransport.BUFFERED
    """Thrift transport: `buffered`, or `framed` for a gateway started with `-framed` (or `-hsha`, `-nonblocking`)."""
    hbase_protocol: ThriftProtocol = ThriftProtocol.BINARY
    """Thrift protocol: `binary`, or `compact` for a gateway started with `-compact`."""
    hbase_shell: str | None = None
    """Command that runs an HBase shell script, the file's path appended (`hbase shell -n`): init uses it
    for what Thrift1 cannot do (pre-split tables, create a namespace)."""

    # --- identity and politeness --------------------------------------------
    user_agent: str | None = None
    """User-Agent header; its product token is matched in robots.txt groups."""
    delay: float = 1.0
    """Seconds between the end of one request and the start of the next, per host."""
    http_connect_timeout: float = 10.0
    """Seconds to wait for a server to accept a connection."""
    http_read_timeout: float = 30.0
    """Seconds to wait for the next bytes of an answer."""
    http_deadline: float = 60.0
    """Seconds one request may take in all (connect, headers, body), however the bytes trickle in."""
    max_content_bytes: int = 10_000_000
    """Largest body read from a server (pages); bigger bodies are truncated."""
    max_robots_bytes: int = 500_000
    """Largest robots.txt read (Google reads 500 KiB); bigger files are truncated."""
    max_redirects: int = 5
    """Redirects followed per request."""
    http_proxy: str = ""
    """Proxy URL for http:// requests (`http://proxy:3128`); empty: none (the environment's is ignored)."""
    https_proxy: str = ""
    """Proxy URL for https:// requests (tunnelled with CONNECT); empty: none."""
    headers: tuple[str, ...] = ()
    """Request headers sent with every request, `Name: value` each (`--header`, repeatable; in the environment
    one a line); not User-Agent (`user_agent`). Their values are never shown (`config show`, warcinfo)."""
    netrc: Path | None = None
    """A netrc file (as curl, wget and requests read it): every request to a host it names as a `machine`
    (or, else, its `default`) carries that login as HTTP basic auth. Never stored: not in HBase, not in logs,
    and WARC request records hold `Authorization: [redacted]`."""
    robots_retry_interval: int = 3_600
    """Seconds before a robots.txt that failed (5xx, timeout) is tried again."""
    max_connections: int = 1_000
    """fetch, detect: requests in flight at once over all hosts (each host keeps its own pace); the hosts
    ready to be asked decide how many are, up to this. Kept-alive connections are reused per host."""
    threads_per_host: int = 1
    """fetch: requests in flight at once per queue (host, or IP with queue_by = "ip")."""
    queue_by: QueueBy = QueueBy.HOST
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
    warc_dir: str = ""
    """fetch, crawl, detect: write every request and response as WARC/1.1 files in this folder; empty: none."""
    warc_max_bytes: int = 1_000_000_000
    """A WARC file is closed and the next one begun once it holds this many bytes (gzipped)."""
    crawl_mode: CrawlMode = CrawlMode.MIXED
    """What the crawl fetches: `sitemap-only`, `mixed` or `links-only`."""
    lease_seconds: float = 60.0
    """A worker's claim on a split of a batch (of its fetch, parse or update) lasts this long unless refreshed."""
    splits: int | None = None
    """`--split auto`: the task count N where the batch scheduler sets none (a Kubernetes Indexed Job's
    `completions`); where it sets one, the two must agree."""
    batch_max_age: int = 7 * 24 * 3600
    """An unfinished batch generated longer ago than this is released (its rows freed), not finished."""
    dask_scheduler: str | None = None
    """`tcp://HOST:PORT` of a Dask scheduler: the phases' splits run as its tasks (`--dask`; needs the
    `dask` extra), not as local processes."""
    dask_reconnect_wait: float = 120.0
    """Seconds a run on Dask waits for a scheduler that went away to answer again (its lost tasks are then
    submitted again); after that it stops with one line saying what to do, and the next crawl finishes the batch."""

    log_format: LogFormat = LogFormat.TEXT
    """How stderr and `--log-file` are written: `text` (lines for a person), or `json` (one JSON object a
    line, with time, level, logger, message, and the command, batch and split where known, for a log shipper;
    no live progress display)."""

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
    max_sitemap_bytes: int = 52_428_800
    """Uncompressed bytes read per sitemap document (50 MiB, the protocol's limit since 2016; a document over
    the old 10 MB is read whole and reported as `over-10mb`); also caps decompression."""
    max_index_depth: int = 5
    """How deep sitemap indexes are followed (and how far a host's vouching passes down them)."""
    tree_max_documents: int = 10_000
    """The usp drop-in (`sitemap_tree_for_homepage`): most documents one tree reads (robots.txt's `Sitemap:`
    lines and index children included); the rest become InvalidSitemap."""
    tree_max_seconds: float = 600.0
    """The usp drop-in: seconds one tree may take; sitemaps not read by then become InvalidSitemap."""
    strict_scope: bool = True
    """Drop sitemap entries outside the sitemap's scope: the hosts that vouch for it, else its folder."""
    probe_known_paths: bool = False
    """detect and `sitemap tree`: probe the well-known sitemap paths of a host whose robots.txt lists none."""
    history_keep: int = 20
    """parse: parses of each sitemap whose changes the `history` table keeps (older ones are deleted)."""

    # --- sitemap quality (updatedb; sitemapcrawl/scoring/quality.py) ------------------
    sitemap_quality: bool = True
    """updatedb: rescore the sitemaps a batch touched and weight their URLs' priority (evidence counters)."""
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
    """Longer URLs are refused."""
    allowed_schemes: tuple[str, ...] = HTTP_SCHEMES
    """URL schemes kept; other URLs are refused."""
    session_id_names: tuple[str, ...] = DEFAULT_SESSION_ID_NAMES
    """Session-id parameter names (see `url_strip_session_ids`)."""
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
    sources: dict[str, str] = field(default_factory=dict, compare=False, repr=False)
    """Where each setting that is not a default came from: `file PATH`, `environment $NAME`, `flag --name`."""

    @property
    def hbase_gateways(self) -> tuple[tuple[str, int], ...]:
        """The (host, port) of each gateway `hbase` names, in the order given."""
        return tuple(_split_host_port(address) for address in self.hbase.split(","))


def _split_host_port(address: str) -> tuple[str, int]:
    """Split `HOST:PORT` (IPv6 as `[::1]:9090`); raise UsageError naming the address."""
    host, sep, port = address.strip().rpartition(":")
    if not sep or not host or not port.isdigit():
        raise UsageError(f"bad HBase address {address!r}: expected HOST:PORT")
    return host.strip("[]"), int(port)


# --- validation ----------------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    """What values a number setting accepts beyond its type: a range."""

    low: float | None = 0
    """Smallest value (None: no lower bound)."""
    high: float | None = None
    """Largest value (None: `MAX_NUMBER`)."""
    above: bool = False
    """`low` itself is refused (a timeout of 0 would never wait)."""

    def describe(self) -> str:
        """The accepted values in a few characters, e.g. `1..1000`, `> 0`, `<= 1`."""
        high = "" if self.high is None else _number(self.high)
        if self.low is None:
            return f"<= {high}" if high else "any"
        low = _number(self.low)
        if self.above:
            return f"> {low}" + (f", <= {high}" if high else "")
        return f"{low}..{high}" if high else f">= {low}"


def _number(value: float) -> str:
    return f"{int(value):_}" if float(value).is_integer() else f"{value:g}"


#: No number setting may exceed this (times and sizes far beyond any real crawl,
#: small enough to add to a date or multiply without overflow).
MAX_NUMBER = 2**53
#: Most fetch splits a batch may have (`generate --fetch-splits`): more than any
#: cluster runs fetchers, few enough that a registry row names each one cheaply.
MAX_FETCH_SPLITS = 4_096
#: Most splits a phase may have (`--split K/N`, `--workers`, the setting splits): the host
#: buckets of the row keys (`model.splits.BUCKETS`, which config sits below), as a split is
#: a range of them.
MAX_SPLITS = 256
#: Most hops a row may keep (seed `depth` / `radius`, the settings seed_depth and seed_radius).
MAX_HOPS = 1_000
_DAY = 86_400
#: The longest interval or age any setting, seed or stored row may give, seconds.
TEN_YEARS = 3_650 * _DAY

#: Ranges. A number setting not named here must be finite and in 0..MAX_NUMBER; a choice is one of
#: its Enum's values (`modes`); text, paths and lists are checked for their type only.
RULES: dict[str, Rule] = {
    "hbase_timeout_ms": Rule(1, 3_600_000),
    "hbase_retries": Rule(1, 100),
    "hbase_call_timeout": Rule(0, _DAY, above=True),
    "hbase_batch_size": Rule(1, 100_000),
    "max_row_bytes": Rule(2_097_152, 268_435_456),
    "delay": Rule(0, _DAY),
    "http_connect_timeout": Rule(0, _DAY, above=True),
    "http_read_timeout": Rule(0, _DAY, above=True),
    "http_deadline": Rule(0, _DAY, above=True),
    "max_content_bytes": Rule(1),
    "max_robots_bytes": Rule(1),
    "max_redirects": Rule(0, 100),
    "robots_retry_interval": Rule(0, TEN_YEARS),
    "max_connections": Rule(1, 100_000),
    "threads_per_host": Rule(1, 100),
    "max_crawl_delay": Rule(0, _DAY),
    "robots_max_age": Rule(0, TEN_YEARS),
    "fetch_retry_interval": Rule(0, TEN_YEARS),
    "max_fetch_retries": Rule(0, 1_000),
    "deferred_interval": Rule(0, TEN_YEARS),
    "max_cell_bytes": Rule(1),
    "warc_max_bytes": Rule(1_000),
    "lease_seconds": Rule(1, _DAY),
    "splits": Rule(1, MAX_SPLITS),
    "batch_max_age": Rule(1, TEN_YEARS),
    "dask_reconnect_wait": Rule(0, _DAY),
    "seed_score": Rule(-MAX_NUMBER),
    "seed_depth": Rule(0, MAX_HOPS),
    "seed_radius": Rule(0, MAX_HOPS),
    "default_fetch_interval": Rule(1, TEN_YEARS),
    "min_fetch_interval": Rule(1, TEN_YEARS),
    "max_fetch_interval": Rule(1, TEN_YEARS),
    "adaptive_inc_rate": Rule(0, 1),
    "adaptive_dec_rate": Rule(0, 1),
    "max_sitemap_urls": Rule(0),
    "max_sitemap_bytes": Rule(1),
    "max_index_depth": Rule(0, 100),
    "tree_max_documents": Rule(1, 100_000_000),
    "tree_max_seconds": Rule(0, TEN_YEARS, above=True),
    "history_keep": Rule(1, 10_000),
    "sitemap_demote_below": Rule(0, 1),
    "sitemap_blacklist_below": Rule(0, 1),
    "sitemap_demote_factor": Rule(0, 1),
    "sitemap_stale_days": Rule(1, 36_500),
    "max_url_length": Rule(16, 1_000_000),
}

#: Pairs (smaller, larger) whose order is checked once all sources are merged.
ORDERED: tuple[tuple[str, str], ...] = (
    ("min_fetch_interval", "max_fetch_interval"),
    ("sitemap_blacklist_below", "sitemap_demote_below"),
)

#: What the text settings with a format accept (checked in `_check`).
TEXT_FORMATS = {"hbase": "HOST:PORT[,HOST:PORT...]", "headers": "Name: value, one a line"}
#: List settings given one item a line (not comma-separated) as a single text.
LINE_LISTS = frozenset({"headers"})
#: One request header: a token, a colon, a value of visible characters, spaces and tabs.
HEADER_LINE = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+:[ \t]*[^\x00-\x08\x0a-\x1f\x7f]*")
_SHOWN = 80


def _shown(value: Any) -> str:
    """A value as a stderr line may show it: repr, control characters escaped, at most `_SHOWN` chars."""
    text = repr(value)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def field_types() -> dict[str, Any]:
    """Each setting's name and type (from the annotations of `Settings`)."""
    hints = typing.get_type_hints(Settings)
    return {f.name: hints[f.name] for f in dataclasses.fields(Settings) if f.name not in ("extra", "sources")}


def _convert(value: Any, target: Any) -> Any:
    """`value` as `target`; ValueError saying what is wrong otherwise."""
    if value is None:
        return None
    origin = typing.get_origin(target)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(target)
        if isinstance(value, str) and value == "" and type(None) in args:
            return None
        return _convert(value, next(a for a in args if a is not type(None)))
    if target is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off"):
            return False
        raise ValueError("expected true or false")
    if target is int:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise ValueError("expected a whole number")
        if isinstance(value, str):
            text = value.strip().replace("_", "")
            if not re.fullmatch(r"[+-]?\d{1,30}", text):
                raise ValueError("expected a whole number")
            return int(text)
        if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
            raise ValueError("expected a whole number")
        return int(value)
    if target is float:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise ValueError("expected a number")
        try:
            number = float(value)
        except ValueError:
            raise ValueError("expected a number") from None
        if not math.isfinite(number):
            raise ValueError("expected a finite number")
        return number
    if target is str:
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise ValueError("expected text")
        return str(value)
    if isinstance(target, type) and issubclass(target, enum.Enum):  # a named choice (`modes`)
        try:
            return target(value)
        except ValueError:
            raise ValueError(f"choose one of {choices(target)}") from None
    if target is Path:
        if not isinstance(value, (str, Path)) or not str(value):
            raise ValueError("expected a file path")
        return Path(value).expanduser()
    if origin is tuple:
        if isinstance(value, str):
            items: list[Any] = value.split(",")
        elif isinstance(value, (list, tuple)):
            items = list(value)
        else:
            raise ValueError("expected a list of text")
        if not all(isinstance(item, str) for item in items):
            raise ValueError("expected a list of text")
        return tuple(item.strip() for item in items if item.strip())
    return value


def _check(name: str, value: Any) -> None:
    """ValueError unless `value` is allowed for setting `name` (its type is already right)."""
    rule = RULES.get(name, Rule())
    if isinstance(value, bool) or value is None:
        return
    if name == "headers":
        for line in value:
            if not HEADER_LINE.fullmatch(line) or line.partition(":")[0].lower() == "user-agent":
                raise ValueError(f"expected Name: value (not User-Agent: see user_agent), not {_shown(line[:40])}")
    if isinstance(value, (int, float)):
        high = MAX_NUMBER if rule.high is None else rule.high
        low_ok = rule.low is None or (value > rule.low if rule.above else value >= rule.low)
        if not low_ok or value > high:
            raise ValueError(f"out of range (allowed: {Rule(rule.low, high, rule.above).describe()})")
        return
    if isinstance(value, str):
        if any(ord(char) < 32 or ord(char) == 127 for char in value):
            raise ValueError("control characters are not allowed")
        if name == "hbase":
            for address in value.split(","):
                try:
                    _, port = _split_host_port(address)
                except UsageError:
                    raise ValueError(f"expected HOST:PORT[,HOST:PORT...], not {address.strip()!r}") from None
                if not 0 < port < 65_536:
                    raise ValueError(f"port out of range (1..65535) in {address.strip()!r}")


def _setting(name: str, value: Any, target: Any, source: str) -> Any:
    """`value` converted to setting `name`'s type and checked; UsageError naming the setting and source."""
    if name in LINE_LISTS and isinstance(value, str):
        value = value.splitlines()  # a header value may hold commas
    try:
        converted = _convert(value, target)
        _check(name, converted)
    except ValueError as exc:
        raise UsageError(f"setting {name} from {source}: {_shown(value)}: {exc}") from None
    return converted


def _check_order(values: Mapping[str, Any], sources: Mapping[str, str]) -> None:
    for small, large in ORDERED:
        if values[small] > values[large]:
            raise UsageError(
                f"setting {small} ({values[small]!r}, from {sources.get(small, 'default')}) must not exceed "
                f"{large} ({values[large]!r}, from {sources.get(large, 'default')})")


#: A settings file larger than this is refused unread: real ones are a few KiB, and a
#: path such as /dev/zero or a log file given by mistake must not be read without end.
MAX_CONFIG_BYTES = 1 << 20


def _read_toml(path: Path) -> dict[str, Any]:
    """The settings in a TOML file, keys with `-` as `_`; UsageError in one line for any bad file.

    Reads at most `MAX_CONFIG_BYTES` + 1 bytes, whatever the file is (a device, a pipe).
    """
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_CONFIG_BYTES + 1)
        if len(raw) > MAX_CONFIG_BYTES:
            raise UsageError(f"config file {path}: larger than {MAX_CONFIG_BYTES:_} bytes; is it the right file?")
        data = tomllib.loads(raw.decode("utf-8"))
    except FileNotFoundError:
        raise UsageError(f"config file not found: {path}") from None
    except IsADirectoryError:
        raise UsageError(f"config file {path}: is a directory") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"config file {path}: not UTF-8 text (byte {exc.start})") from None
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"config file {path}: {_shown(str(exc))[1:-1]}") from None
    return {key.replace("-", "_"): value for key, value in data.items()}


def load_settings(
    config_file: Path | None = None,
    environ: Mapping[str, str] | None = None,
    flags: Mapping[str, Any] | None = None,
) -> Settings:
    """Build the settings once: defaults < TOML file < environment < flags, each value checked.

    `flags` holds only options the user gave (None means "not given"). Every
    value is converted to its setting's type and checked against `RULES`
    (numbers finite and in range, choices, no control characters). Raises
    UsageError, one line naming the setting, the value and where it came
    from, for an unreadable file or a bad value.

    Cost: one read of the file; a check per value given (defaults are not re-checked).
    """
    environ = os.environ if environ is None else environ
    types_by_name = field_types()
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    extra: dict[str, Any] = {}
    if config_file is not None:
        for given, value in _read_toml(config_file).items():
            key = RENAMED.get(given, given)
            if key in types_by_name:
                source = f"file {config_file}"
                values[key] = _setting(key, value, types_by_name[key], source)
                sources[key] = source
            else:
                extra[key] = value
    for name, target in types_by_name.items():
        for given in (*(old for old, new in RENAMED.items() if new == name), name):  # the current name wins
            if (env_name := ENV_PREFIX + given.upper()) in environ:
                values[name] = _setting(name, environ[env_name], target, f"environment ${env_name}")
                sources[name] = f"environment ${env_name}"
    settings = Settings(**values, extra=extra, sources=sources)
    return with_flags(settings, flags or {})


def with_flags(settings: Settings, flags: Mapping[str, Any]) -> Settings:
    """`settings` with the command-line `flags` that were given (not None), each checked.

    Raises UsageError naming the flag, as `load_settings` does.
    """
    types_by_name = field_types()
    values: dict[str, Any] = {}
    sources = dict(settings.sources)
    for name, value in flags.items():
        if value is not None:
            source = f"flag --{name.replace('_', '-')}"
            values[name] = _setting(name, value, types_by_name[name], source)
            sources[name] = source
    merged = dataclasses.replace(settings, **values, sources=sources) if values else settings
    _check_order({name: getattr(merged, name) for name in types_by_name}, sources)
    return merged


def effective(settings: Settings) -> list[tuple[str, Any, str]]:
    """Every setting as (name, value, source), values as JSON would hold them (paths and choices as text); the values of
    `headers` and a proxy URL's credentials hidden (`urlparts.credentials_hidden`)."""
    rows = []
    for name in field_types():
        value = getattr(settings, name)
        if name == "headers":
            value = [f"{line.partition(':')[0]}: {HIDDEN}" for line in value]
        elif name in ("http_proxy", "https_proxy"):
            value = credentials_hidden(value, HIDDEN)
        if isinstance(value, (Path, enum.Enum)):
            value = str(value)
        elif isinstance(value, tuple):
            value = list(value)
        rows.append((name, value, settings.sources.get(name, "default")))
    return rows
