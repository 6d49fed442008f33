"""The named choices shared by settings, the command line and the jobs.

They live here, below `config` and the jobs, so that `config` can validate a
setting against them, `cli` can offer them as choices without importing a
job module (which would cost start-up time), and every job takes the crawl
mode from here rather than from another job.
"""

from __future__ import annotations

import enum


class CrawlMode(enum.StrEnum):
    """Which rows a crawl fetches."""

    SITEMAP_ONLY = "sitemap-only"
    MIXED = "mixed"
    LINKS_ONLY = "links-only"


def choices(kind: type[enum.Enum]) -> str:
    """The values of a choice as a message or the docs list them: `host, ip`."""
    return ", ".join(str(member.value) for member in kind)


class CountMode(enum.StrEnum):
    """What `max_per_host` counts per: the host name or the registered domain."""

    HOST = "host"
    DOMAIN = "domain"


class QueueBy(enum.StrEnum):
    """What one politeness queue stands for."""

    HOST = "host"
    IP = "ip"


class UpdateStep(enum.StrEnum):
    """What part of updatedb a run does: all of it, or one of its two steps, spread then merge (an engine's
    tasks run them as two phases, so no task waits for another)."""

    ALL = "all"
    SPREAD = "spread"
    MERGE = "merge"


class LogFormat(enum.StrEnum):
    """How log lines and messages are written on stderr and in `--log-file`."""

    TEXT = "text"
    JSON = "json"


class ExportFormat(enum.StrEnum):
    """What `export` writes."""

    CSV = "csv"
    JSONL = "jsonl"
    PARQUET = "parquet"


class AuditList(enum.StrEnum):
    """The audit's lists (`report`, `serve`, `export --audit`), in the order the report shows them; what puts a
    row on each: `sitemapcrawl.model.audit`."""

    HTTP_ERROR = "http-error"
    REDIRECT = "redirect"
    BLOCKED = "blocked"
    BLOCKED_BY_SITE = "blocked-by-site"
    NOINDEX = "noindex"
    CANONICAL = "canonical"
    HREFLANG_NO_RETURN = "hreflang-no-return"
    LASTMOD_SUSPECT = "lastmod-suspect"
    NEWS_STALE = "news-stale"
    ORPHANS = "orphans"
    UNLISTED = "unlisted"
    MULTI_LISTED = "multi-listed"


class ThriftTransport(enum.StrEnum):
    """How bytes travel to the HBase Thrift1 gateway (its `-framed` flag, or not)."""

    BUFFERED = "buffered"
    FRAMED = "framed"


class ThriftProtocol(enum.StrEnum):
    """How Thrift calls are encoded (the gateway's `-compact` flag, or not)."""

    BINARY = "binary"
    COMPACT = "compact"


class Compression(enum.StrEnum):
    """Block compression of the tables' families; `none` writes HBase's NONE."""

    NONE = "none"
    GZ = "gz"
    SNAPPY = "snappy"
