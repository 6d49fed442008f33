"""The row model: every HBase column, its meaning and its value format.

This is the only module (with `hbase-schema/`) that knows column names. A row
is a `WebPage` (table `webpage`, one per URL), a `HostRow` (table `host`,
one per scheme+host+port) or a `BatchRow` (table `batch`, one per batch id:
what generate made, which phases finished, who holds each share) or a `DueRow`
(table `due`, the index of next fetch times generate reads). Jobs build partial rows (only the fields they set)
and `encode` turns them into cells; `decode` turns cells back into a row,
raising `CellDecodeError` naming the row and the column for a bad value.
Given the fields a job asked for, `decode` makes a row on which any other
field raises `FieldNotReadError` instead of reading as None. Both are on
every crawl's hot path: they work from tables computed once at import.

Values are UTF-8 text a person can read in `hbase shell`: numbers as decimal
strings, times as fixed-width UTC `YYYY-MM-DDTHH:MM:SSZ` (they sort and
compare as strings, so server-side filters work on them), flags as `1`.
The exceptions are the map families (inlinks, outlinks: the qualifier is a
URL) and the content family (gzip-compressed bytes).
"""

from __future__ import annotations

import dataclasses
import enum
import gzip
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

from sitemapcrawl.errors import CellDecodeError, FieldNotReadError
from sitemapcrawl.sitemaps.model import ChangeFreq

TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"

WEBPAGE_TABLE = "webpage"
HOST_TABLE = "host"
HISTORY_TABLE = "history"
BATCH_TABLE = "batch"
BATCHROW_TABLE = "batchrow"
DUE_TABLE = "due"


class FetchStatus(enum.StrEnum):
    """Where a URL stands in the crawl (column `f:st`)."""

    UNFETCHED = "unfetched"
    FETCHED = "fetched"
    NOT_MODIFIED = "not_modified"
    REDIRECT = "redirect"
    GONE = "gone"
    RETRY = "retry"
    BLOCKED_ROBOTS = "blocked_robots"
    TOO_LARGE = "too_large"
    DEFERRED = "deferred"


class SitemapSource(enum.StrEnum):
    """How a sitemap row came to be (column `s:src`)."""

    SEED = "seed"
    ROBOTS = "robots"
    INDEX = "index"
    PROBE = "probe"
    LINK = "link"
    REDIRECT = "redirect"
    """A sitemap URL redirected here."""


class QualityState(enum.StrEnum):
    """What the sitemap quality filter made of a sitemap (column `s:qst`; see `sitemapcrawl.scoring.quality`)."""

    OK = "ok"
    DEMOTED = "demoted"
    BLACKLISTED = "blacklisted"
    TRUSTED = "trusted"
    BLOCKED = "blocked"


class RobotsStatus(enum.StrEnum):
    """Outcome of the last robots.txt fetch of a host (column `r:st`)."""

    OK = "ok"
    MISSING = "missing"
    ERROR = "error"


def format_time(moment: datetime) -> str:
    """Fixed-width UTC text for a time; naive times are taken as UTC.

    Seconds precision (a fraction is dropped); the year has four digits, so
    the text sorts as the time does. Cost: about 0.4 µs, or a dict lookup for
    a UTC time formatted lately (a job writes the same `now` and the same
    sitemap lastmods on many rows).
    """
    text = _TIME_TEXTS.get(moment) if moment.tzinfo is UTC else None
    if text is None:
        utc = moment
        if utc.tzinfo is not UTC:
            utc = utc.replace(tzinfo=UTC) if utc.tzinfo is None else utc.astimezone(UTC)
        # Not strftime: its %Y does not pad years before 1000. %-format: half an f-string's cost here.
        text = "%04d-%02d-%02dT%02d:%02d:%02dZ" % (  # noqa: UP031
            utc.year, utc.month, utc.day, utc.hour, utc.minute, utc.second)
        if moment.tzinfo is UTC:
            # Only UTC keys: equal times in one other zone can be different instants (fold).
            if len(_TIME_TEXTS) >= _TIME_MEMO:
                _TIME_TEXTS.clear()
            _TIME_TEXTS[moment] = text
    return text


_TIME_MEMO = 4096
_TIME_TEXTS: dict[datetime, str] = {}


def parse_time(text: str) -> datetime:
    """Inverse of `format_time` (an aware UTC datetime); raises ValueError on anything else.

    The fixed-width form goes to `datetime.fromisoformat` (C, about 0.1 µs;
    `strptime` cost 4 µs). Anything else is read as the `strptime` format
    read it, so every value stored before stays readable, and so is the
    short year (`5-01-01T00:00:00Z`) that `strftime` once wrote for years
    before 1000.
    """
    if (len(text) == 20 and text[4] == "-" and text[7] == "-" and text[10] == "T" and text[13] == ":"
            and text[16] == ":" and text[19] == "Z"):
        try:
            return _fromisoformat(text)
        except ValueError:
            pass
    return _parse_time_slowly(text)


_fromisoformat = datetime.fromisoformat
_SHORT_YEAR = re.compile(r"([0-9]{1,3})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})Z")


def _parse_time_slowly(text: str) -> datetime:
    """The format as `strptime` read it (lenient about padding), or a short year."""
    match = _SHORT_YEAR.fullmatch(text)
    if match is not None:
        year, month, day, hour, minute, second = map(int, match.groups())
        return datetime(year, month, day, hour, minute, second, tzinfo=UTC)
    return datetime.strptime(text, TIME_FORMAT).replace(tzinfo=UTC)


def format_precise_time(moment: datetime) -> str:
    """Fixed-width UTC text to the millisecond (`YYYY-MM-DDTHH:MM:SS.mmmZ`), for politeness times."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def parse_precise_time(text: str) -> datetime:
    """Inverse of `format_precise_time`; raises ValueError on anything else."""
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


T = TypeVar("T")


@dataclass(frozen=True)
class Codec(Generic[T]):
    """How one kind of value becomes cell bytes and back."""

    name: str
    encode: Callable[[T], bytes]
    decode: Callable[[bytes], T]


def _text_codec() -> Codec[str]:
    # The unbound methods: no Python frame per cell (UTF-8 is their default).
    return Codec("text", str.encode, bytes.decode)


def _int_encode(value: int) -> bytes:
    return b"%d" % value


def _float_encode(value: float) -> bytes:
    return repr(float(value)).encode("ascii")


def _flag_decode(raw: bytes) -> bool:
    if raw == b"1":
        return True
    if raw == b"0":
        return False
    raise ValueError(f"flag must be 1 or 0, not {raw[:20]!r}")


def _enum_codec(kind: type[enum.StrEnum]) -> Codec[Any]:
    # Dict lookups both ways: `member.value` and `kind(text)` cost a Python call each.
    to_bytes = {member: member.value.encode() for member in kind}
    from_bytes = {member.value.encode(): member for member in kind}

    def decode(raw: bytes) -> Any:
        member = from_bytes.get(raw)
        return member if member is not None else kind(raw.decode("ascii"))

    return Codec(f"one of {', '.join(m.value for m in kind)}", to_bytes.__getitem__, decode)


def _time_encode(value: datetime) -> bytes:
    return format_time(value).encode("ascii")


def _time_decode(raw: bytes) -> datetime:
    return parse_time(raw.decode("ascii"))


def _lines_encode(values: tuple[str, ...]) -> bytes:
    return "\n".join(values).encode("utf-8")


def _lines_decode(raw: bytes) -> tuple[str, ...]:
    return tuple(line for line in raw.decode("utf-8").split("\n") if line)


TEXT: Codec[str] = _text_codec()
# int() and float() read ASCII digits from bytes directly (and reject anything else).
INT: Codec[int] = Codec("decimal integer", _int_encode, int)
FLOAT: Codec[float] = Codec("decimal number", _float_encode, float)
TIME: Codec[datetime] = Codec("UTC time YYYY-MM-DDTHH:MM:SSZ", _time_encode, _time_decode)
PRECISE_TIME: Codec[datetime] = Codec(
    "UTC time YYYY-MM-DDTHH:MM:SS.mmmZ", lambda v: format_precise_time(v).encode("ascii"),
    lambda b: parse_precise_time(b.decode("ascii")),
)
FLAG: Codec[bool] = Codec("1 (0 = explicitly not)", lambda v: b"1" if v else b"0", _flag_decode)
LINES: Codec[tuple[str, ...]] = Codec("text, one item per line", _lines_encode, _lines_decode)
GZIP: Codec[bytes] = Codec(
    "gzip-compressed bytes", lambda v: gzip.compress(v, compresslevel=6, mtime=0), gzip.decompress
)


@dataclass(frozen=True)
class Column:
    """One family:qualifier, what it means, its format and who writes it."""

    family: str
    qualifier: str
    codec: Codec[Any]
    meaning: str
    writer: str

    @property
    def name(self) -> str:
        """`family:qualifier`, as HBase and the shell spell it."""
        return f"{self.family}:{self.qualifier}"


@dataclass(frozen=True)
class MapFamily:
    """A family whose qualifiers are data (a URL), each cell a text value."""

    family: str
    meaning: str
    writer: str
    key: str = "url"
    """What a qualifier is (`url`, `share`), as columns.tsv names it."""
    prefix: str = ""
    """Qualifiers start with this (a map sharing a family with columns: `s:ev.<batch.bucket>`)."""

    @property
    def name(self) -> str:
        """`family:prefix<key>`, as columns.tsv spells it."""
        return f"{self.family}:{self.prefix}<{self.key}>"


@dataclass(frozen=True)
class Family:
    """A column family and the options it is created with (as in hbase-schema/)."""

    name: str
    meaning: str
    max_versions: int = 1
    block_cache_enabled: bool = True
    bloom_filter_type: str = "ROW"


def col(family: str, qualifier: str, codec: Codec[Any], meaning: str, writer: str) -> Any:
    """A dataclass field bound to a column; its default is None ("not set")."""
    return field(default=None, metadata={"column": Column(family, qualifier, codec, meaning, writer)})


def mapcol(family: str, meaning: str, writer: str, key: str = "url", prefix: str = "") -> Any:
    """A dataclass field bound to a whole map family (qualifier = key), or its qualifiers starting with `prefix`."""
    return field(default=None, metadata={"map": MapFamily(family, meaning, writer, key, prefix)})


# ---------------------------------------------------------------- webpage ---

WEBPAGE_FAMILIES = (
    Family("f", "fetch state"),
    Family("s", "sitemap hints and flags"),
    Family("m", "crawl metadata"),
    Family("k", "markers: which batch each phase has done"),
    Family("il", "inlinks: qualifier = source URL"),
    Family("ol", "outlinks: qualifier = target URL"),
    Family("c", "content, compressed (optional)", block_cache_enabled=False),
)


@dataclass(frozen=True)
class WebPage:
    """One `webpage` row: a URL and what the crawl knows of it.

    Every field but `url` may be None, meaning "not read or not set": a job
    writes only the fields it sets, and reads only the columns it asks for.
    """

    url: str
    # f: fetch state
    status: FetchStatus | None = col("f", "st", _enum_codec(FetchStatus), "fetch status", "inject, fetch, updatedb")
    fetch_time: datetime | None = col("f", "ft", TIME, "time of the last fetch", "fetch")
    prev_fetch_time: datetime | None = col("f", "pft", TIME, "time of the fetch before", "fetch")
    next_fetch: datetime | None = col("f", "nft", TIME, "when the URL is due again", "inject, fetch, updatedb")
    fetch_interval: int | None = col("f", "fi", INT, "seconds between fetches", "inject, updatedb")
    retries: int | None = col("f", "rt", INT, "failed fetches in a row", "fetch")
    http_code: int | None = col("f", "hc", INT, "HTTP status code of the last fetch", "fetch")
    content_type: str | None = col("f", "ct", TEXT, "Content-Type header", "fetch")
    etag: str | None = col("f", "et", TEXT, "ETag header (for If-None-Match)", "fetch")
    last_modified: str | None = col("f", "lm", TEXT, "Last-Modified header as sent (for If-Modified-Since)", "fetch")
    signature: str | None = col("f", "sig", TEXT, "hex digest of the body", "fetch")
    content_changed: datetime | None = col("f", "chg", TIME, "last fetch whose signature differed", "fetch")
    redirect_to: str | None = col("f", "rd", TEXT, "redirect target URL", "fetch")
    error: str | None = col("f", "er", TEXT, "last fetch error, one line", "fetch")
    truncated: bool | None = col("f", "tr", FLAG, "the body was cut at the size cap", "fetch")
    retry_at: datetime | None = col(
        "f", "ra", TIME, "earliest retry the server or robots.txt allows (Retry-After, robots.txt retry)", "fetch")
    # s: sitemap hints and flags
    is_sitemap: bool | None = col("s", "sm", FLAG, "this URL is a sitemap document", "inject, detect, updatedb")
    in_sitemap: bool | None = col("s", "in", FLAG, "some sitemap lists this URL", "updatedb")
    sitemap_source: SitemapSource | None = col(
        "s", "src", _enum_codec(SitemapSource), "how this sitemap was found", "inject, detect, updatedb")
    priority: float | None = col("s", "pr", FLOAT, "sitemap <priority> in [0, 1]", "updatedb")
    changefreq: ChangeFreq | None = col("s", "cf", _enum_codec(ChangeFreq), "sitemap <changefreq>", "updatedb")
    lastmod: datetime | None = col("s", "lm", TIME, "sitemap <lastmod>, UTC", "updatedb")
    sitemap_type: str | None = col("s", "ty", TEXT, "urlset, index, text, rss or atom", "parse")
    sitemap_entries: int | None = col("s", "n", INT, "entries kept from this sitemap", "parse")
    dropped_scope: int | None = col("s", "xs", INT, "entries dropped: outside the sitemap's scope", "parse")
    dropped_filter: int | None = col("s", "xf", INT, "entries dropped by the URL filter", "parse")
    dropped_limit: int | None = col("s", "xl", INT, "entries dropped over the URL or byte limit", "parse")
    sitemap_problems: tuple[str, ...] | None = col("s", "er", LINES, "parse problems of this sitemap", "parse")
    problem_kinds: tuple[str, ...] | None = col(
        "s", "pk", LINES, "parse problems of this sitemap by kind, `kind=count` a line (what its score reads)", "parse")
    parse_time: datetime | None = col("s", "pt", TIME, "when this sitemap was last parsed", "parse")
    blacklisted: str | None = col(
        "s", "bl", TEXT, "why this sitemap is never fetched", "detect, generate, parse, updatedb")
    cross_submitters: tuple[str, ...] | None = col("s", "cs", LINES, "robots.txt URLs that list this sitemap", "detect")
    vouched_by: tuple[str, ...] | None = col(
        "s", "vb", LINES, "hosts that vouch for this sitemap, one `HOST LEVEL` a line (LEVEL: indexes between)",
        "inject, detect, parse")
    sitemap_warnings: tuple[str, ...] | None = col(
        "s", "wn", LINES, "lenient reads of this sitemap: rules it breaks, with counts", "parse")
    # s: sitemap quality (sitemapcrawl/scoring/quality.py), on sitemap rows; weighted priority on listed rows
    quality: float | None = col("s", "q", FLOAT, "sitemap quality score in [0, 1]", "updatedb")
    quality_state: QualityState | None = col(
        "s", "qst", _enum_codec(QualityState), "what the quality filter made of this sitemap", "updatedb")
    quality_valid: float | None = col("s", "qv", FLOAT, "quality signal: entries valid and in scope", "updatedb")
    quality_fetch: float | None = col("s", "qf", FLOAT, "quality signal: listed URLs that fetched 200", "updatedb")
    quality_lastmod: float | None = col("s", "qlm", FLOAT, "quality signal: lastmod sanity", "updatedb")
    quality_duplicates: float | None = col("s", "qdu", FLOAT, "quality signal: no duplicate entries", "updatedb")
    quality_errors: float | None = col(
        "s", "qer", FLOAT, "quality signal: no limit overflow or parse error", "updatedb")
    quality_freshness: float | None = col(
        "s", "qfr", FLOAT, "quality signal: the sitemap itself is not stale", "updatedb")
    quality_notes: tuple[str, ...] | None = col("s", "qn", LINES, "why the quality score is below 1", "updatedb")
    quality_time: datetime | None = col("s", "qt", TIME, "when the quality was last computed", "updatedb")
    weighted_priority: float | None = col(
        "s", "wp", FLOAT, "sitemap priority weighted by the quality of the sitemaps listing the URL", "updatedb")
    # s: sitemap change tracking (sitemapcrawl/model/changes.py, jobs/history.py)
    new_in_sitemap: str | None = col(
        "s", "nw", TEXT, "batch id: a re-parsed sitemap newly listed this URL (generate's boost)", "parse")
    sitemaps_listing: int | None = col(
        "s", "nl", INT, "sitemaps whose latest parse lists this URL", "updatedb")
    history_key: str | None = col(
        "s", "hk", TEXT, "row key of this sitemap's latest parse in the history table", "parse")
    # s: quality evidence counters (sitemapcrawl/scoring/evidence.py): on sitemap rows, and what each listed row gave
    quality_evidence: tuple[str, ...] | None = col(
        "s", "ev", LINES, "folded quality evidence: through=BATCH, then PARSE key=value... counters", "updatedb")
    quality_evidence_cells: Mapping[str, str] | None = mapcol(
        "s", "one batch's quality evidence of one host bucket: PARSE key=value... lines", "updatedb",
        "batch.bucket", "ev.")
    quality_contributions: tuple[str, ...] | None = col(
        "s", "qc", LINES, "what this listed row gives each sitemap: SITEMAP TAB BATCH TAB now TAB before",
        "updatedb")
    # m: crawl metadata
    score: float | None = col("m", "sc", FLOAT, "link/seed score", "inject, updatedb")
    depth: int | None = col("m", "dp", INT, "hops still allowed within the site", "inject, updatedb")
    radius: int | None = col("m", "ra", INT, "hops still allowed after leaving the site", "inject, updatedb")
    counted: tuple[str, ...] | None = col(
        "m", "hc", LINES, "what this row adds to its origin's row counts: ORIGIN TAB BATCH TAB now TAB before",
        "updatedb")
    seed: bool | None = col("m", "sd", FLAG, "injected as a seed", "inject")
    batch_id: str | None = col("m", "b", TEXT, "batch the row was generated into", "generate")
    partition: int | None = col("m", "pa", INT, "fetch partition of the batch", "generate")
    canonical: str | None = col("m", "can", TEXT, "<link rel=canonical> of the page", "parse")
    noindex: bool | None = col("m", "noi", FLAG, "<meta name=robots> says noindex", "parse")
    nofollow: bool | None = col("m", "nof", FLAG, "<meta name=robots> says nofollow", "parse")
    link_inlinks: int | None = col("m", "nil", INT, "pages linking to this URL (link inlinks)", "updatedb")
    # k: markers
    inject_mark: datetime | None = col("k", "inj", TIME, "when the URL was (last) injected", "inject")
    generate_mark: str | None = col("k", "gen", TEXT, "batch id: generated", "generate")
    fetch_mark: str | None = col("k", "fch", TEXT, "batch id: fetched", "fetch")
    parse_mark: str | None = col("k", "prs", TEXT, "batch id: parsed", "parse")
    update_mark: str | None = col("k", "upd", TEXT, "batch id: merged by updatedb", "updatedb")
    discover_mark: str | None = col("k", "dsc", TEXT, "batch id: has inlinks to merge", "parse, updatedb")
    merge_mark: str | None = col("k", "mrg", TEXT, "batch id: inlinks merged", "updatedb")
    # il / ol: links
    inlinks: Mapping[str, str] | None = mapcol(
        "il", "source URL -> KIND key=value... [TAB anchor] (sitemapcrawl/model/linkvalues.py)", "parse, updatedb")
    outlinks: Mapping[str, str] | None = mapcol(
        "ol", "target URL -> KIND [TAB anchor] (sitemapcrawl/model/linkvalues.py)", "parse")
    # c: content
    content: bytes | None = col("c", "raw", GZIP, "the fetched body", "fetch (sitemaps; pages with --store-content)")


# ------------------------------------------------------------------- host ---

HOST_FAMILIES = (
    Family("r", "robots.txt: rules, crawl delay, sitemaps"),
    Family("n", "per-host counters"),
)


@dataclass(frozen=True)
class HostRow:
    """One `host` row: what the crawl knows of one scheme+host+port."""

    origin: str
    """`scheme://host[:port]`, the scope of one robots.txt."""
    robots_fetch_time: datetime | None = col("r", "ft", TIME, "time robots.txt was fetched", "detect, fetch")
    robots_status: RobotsStatus | None = col(
        "r", "st", _enum_codec(RobotsStatus), "ok, missing (allow all) or error (deny all until retry)",
        "detect, fetch")
    robots_http_code: int | None = col("r", "hc", INT, "HTTP status of robots.txt", "detect, fetch")
    robots_retry_at: datetime | None = col("r", "nft", TIME, "when to fetch robots.txt again", "detect, fetch")
    robots_error: str | None = col("r", "er", TEXT, "robots.txt fetch error, one line", "detect, fetch")
    robots_text: str | None = col("r", "txt", TEXT, "robots.txt body (capped)", "detect, fetch")
    robots_truncated: bool | None = col("r", "tr", FLAG, "robots.txt was over the size cap", "detect, fetch")
    crawl_delay: float | None = col("r", "cd", FLOAT, "Crawl-delay for our user agent, seconds", "detect, fetch")
    sitemaps: tuple[str, ...] | None = col("r", "sm", LINES, "Sitemap: URLs listed in robots.txt", "detect")
    sitemaps_found: int | None = col("n", "sm", INT, "sitemaps listed or probed, last detect", "detect")
    sitemaps_new: int | None = col("n", "smn", INT, "sitemaps new to the table, last detect", "detect")
    # n: row counts and sitemap summaries of the origin, for `serve` (sitemapcrawl/scoring/rowcounts.py)
    counts: tuple[str, ...] | None = col(
        "n", "c", LINES, "folded row counts of this origin: through=BATCH, then `rows key=value...`", "updatedb")
    count_cells: Mapping[str, str] | None = mapcol(
        "n", "one batch's row count changes of this origin: `rows key=value...`", "updatedb", "batch.bucket", "c.")
    audit_samples: Mapping[str, str] | None = mapcol(
        "n", "audit list -> up to 50 of this origin's URLs on it, one a line", "updatedb", "list", "a.")
    counters_built: datetime | None = col(
        "n", "cb", TIME, "on row `~counters`: when updatedb first built the counters (none: the next one does)",
        "updatedb")
    sitemap_summaries: Mapping[str, str] | None = mapcol(
        "n", "sitemap URL -> its summary and quality as JSON, for serve's sitemaps panel", "updatedb", "url", "s.")
    # n: politeness state, on the rows of politeness keys (`jobs/politeness.py`), not on origin rows
    last_request: datetime | None = col(
        "n", "lr", PRECISE_TIME, "politeness: end of the last request to this queue key", "fetch, detect")
    not_before: datetime | None = col(
        "n", "nb", PRECISE_TIME, "politeness: no request before this time (Retry-After)", "fetch")
    slow_delay: float | None = col(
        "n", "sd", FLOAT, "politeness: delay raised by 429/503 answers, seconds (0: none)", "fetch")


# ------------------------------------------------------------------ batch ---

BATCH_FAMILIES = (
    Family("b", "batch: what generate made"),
    Family("d", "done: qualifier = phase or share, value = when it finished"),
    Family("l", "leases: qualifier = share, value = holder and expiry"),
)


@dataclass(frozen=True)
class BatchRow:
    """One `batch` row: a batch's facts, its finished phases and its leases (see jobs/batches.py)."""

    batch_id: str
    generated: datetime | None = col("b", "gt", TIME, "when generate made the batch", "generate")
    selected: int | None = col("b", "n", INT, "rows generate selected", "generate")
    partitions: int | None = col("b", "np", INT, "fetch partitions of the batch", "generate")
    mode: str | None = col("b", "md", TEXT, "crawl mode of the batch", "generate")
    records: bool | None = col(
        "b", "rec", FLAG, "the batch's rows are recorded in batchrow (absent: a batch from before)", "generate")
    done: Mapping[str, str] | None = mapcol(
        "d", "fetch.K/N, parse, update or release (with splits also generate.K/N, parse.K/N, spread.K/N, "
             "update.K/N) -> UTC time it finished", "fetch, parse, updatedb, batches",
        key="phase")
    leases: Mapping[str, str] | None = mapcol(
        "l", "share (fetch.K/N, parse, update, parse.K/N, update.K/N) -> worker=ID until=UTC time, "
             "set by check-and-put",
        "fetch, parse, updatedb", key="share")


def batch_cell(family: str, qualifier: str) -> bytes:
    """The column name of a `BatchRow` map cell (`d:parse`, `l:fetch.0/2`)."""
    return f"{family}:{qualifier}".encode()


# --------------------------------------------------------------- batchrow ---

BATCHROW_FAMILIES = (
    Family("r", "a record: a member of a batch, or a row a batch touched"),
)


@dataclass(frozen=True)
class BatchRecord:
    """One `batchrow` row: a `webpage` row a batch holds (member) or touched (see `tables.record_key`).

    Keys: `<batch>|m|<bucket>|<webpage key>` for a member (generate; fetch for
    a redirect hop), `<batch>|t|<bucket>|<webpage key>` for a touched row
    (updatedb's spread, or parse for a URL a sitemap stopped listing, wrote an
    `il:` cell and `k:dsc` on it), the bucket
    `splits.bucket_label(splits.bucket_of(webpage key))`; and
    `<batch>|l|<bucket>|<sitemap key>|<part>` for the entries of one sitemap
    parse in one bucket, one qualifier per entry row (`listed`), so that a
    sitemap of 50,000 entries is a few dozen records, not 50,000.
    """

    key: str
    partition: int | None = col("r", "pa", INT, "member: its fetch partition", "generate, fetch")
    touched: bool | None = col("r", "t", FLAG, "touched: has inlinks to merge for the batch", "parse, updatedb")
    listed: Mapping[str, str] | None = mapcol(
        "r", "listed: an entry row of the sitemap parsed (value empty), to merge for the batch", "parse",
        "webpage key", "k.")


# -------------------------------------------------------------------- due ---

DUE_FAMILIES = (
    Family("d", "due index: the entry of every row with a next fetch time, and the built marker"),
)


@dataclass(frozen=True)
class DueRow:
    """One `due` row: index entries, or the marker saying the index was built (see `sitemapcrawl.model.due`).

    Entry rows are keyed `<kind>|<next fetch time>|<webpage row key>`: `entry`
    says the row in the key is due then; `members` name more rows due at the
    same time, of the same kind, written together (a group: the entries of one
    write, up to `tables.DUE_GROUP`, under the least of their keys). The
    marker row (`~built`) holds when a full scan last built the index.
    """

    key: str
    entry: bool | None = col("d", "e", FLAG, "entry: the webpage row in the key is due at the key's time",
                             "inject, detect, fetch, parse, updatedb, generate")
    members: Mapping[str, str] | None = mapcol(
        "d", "group entry: another webpage row due at the key's time, of the key's kind (value 1)",
        "inject, detect, fetch, parse, updatedb", "webpage key", "r.")
    built: datetime | None = col("d", "b", TIME, "marker row ~built: when generate last rebuilt the index "
                                 "from a full scan", "generate")


# ---------------------------------------------------------------- history ---

HISTORY_FAMILIES = (
    Family("h", "one parse of a sitemap: when, entries, changes by kind"),
    Family("c", "the changes of that parse: qualifier = chunk number", block_cache_enabled=False),
    Family("s", "the latest entry snapshot of a sitemap: when, entries, chunks"),
    Family("e", "the latest entry snapshot: qualifier = chunk number", block_cache_enabled=False),
)


@dataclass(frozen=True)
class HistoryRow:
    """One `history` row: a parse of a sitemap, or the sitemap's latest entry snapshot.

    Keys (`sitemapcrawl.model.changes.history_key`): `<sitemap's webpage key> <inverted
    time>` for a parse (families h and c), `<sitemap's webpage key>` alone for
    the snapshot (families s and e) the next parse is compared with.
    """

    key: str
    sitemap: str | None = col("h", "url", TEXT, "the sitemap URL", "parse")
    parsed_at: datetime | None = col("h", "at", TIME, "when the sitemap was parsed", "parse")
    batch: str | None = col("h", "b", TEXT, "batch id of the parse", "parse")
    entries: int | None = col("h", "n", INT, "entries the parse kept", "parse")
    baseline: bool | None = col("h", "base", FLAG, "first parse: nothing to compare with, no changes", "parse")
    added: int | None = col("h", "add", INT, "URLs added since the previous parse", "parse")
    removed: int | None = col("h", "rm", INT, "URLs removed since the previous parse", "parse")
    lastmod_changed: int | None = col("h", "lm", INT, "URLs whose lastmod changed", "parse")
    changefreq_changed: int | None = col("h", "cf", INT, "URLs whose changefreq changed", "parse")
    priority_changed: int | None = col("h", "pr", INT, "URLs whose priority changed", "parse")
    statuses: str | None = col(
        "h", "st", TEXT, "fetch statuses of the listed URLs after this round: status=count ...", "updatedb")
    change_chunks: Mapping[str, str] | None = mapcol(
        "c", "chunk number -> change lines: kind TAB URL TAB old TAB new (sitemapcrawl/model/changes.py)", "parse", "n")
    snapshot_at: datetime | None = col("s", "at", TIME, "when the snapshot was taken", "parse")
    snapshot_entries: int | None = col("s", "n", INT, "entries in the snapshot", "parse")
    snapshot_chunks: int | None = col("s", "k", INT, "cells the snapshot takes in family e", "parse")
    snapshot: Mapping[str, str] | None = mapcol(
        "e", "chunk number -> entry lines: URL TAB lastmod TAB changefreq TAB priority (sitemapcrawl/model/changes.py)",
        "parse", "n")


# ------------------------------------------------------------- encoding ---

RowT = TypeVar("RowT", WebPage, HostRow, BatchRow, HistoryRow, BatchRecord, DueRow)
AnyRow = WebPage | HostRow | BatchRow | HistoryRow | BatchRecord | DueRow
AnyRowType = (type[WebPage] | type[HostRow] | type[BatchRow] | type[HistoryRow] | type[BatchRecord]
              | type[DueRow])


def columns_of(row_type: AnyRowType) -> dict[str, Column]:
    """Field name -> Column for every single-column field of a row type."""
    return {f.name: f.metadata["column"] for f in dataclasses.fields(row_type) if "column" in f.metadata}


def map_families_of(row_type: AnyRowType) -> dict[str, MapFamily]:
    """Field name -> MapFamily for the map fields of a row type."""
    return {f.name: f.metadata["map"] for f in dataclasses.fields(row_type) if "map" in f.metadata}


_ROW_TYPES = (WebPage, HostRow, BatchRow, HistoryRow, BatchRecord, DueRow)
_COLUMNS = {row_type: columns_of(row_type) for row_type in _ROW_TYPES}
_MAPS = {row_type: map_families_of(row_type) for row_type in _ROW_TYPES}
_BY_NAME = {
    row_type: {column.name.encode(): (name, column) for name, column in columns.items()}
    for row_type, columns in _COLUMNS.items()
}


class _Layout:
    """What encode and decode need of one row type, worked out once at import.

    Why: the profile of a 200,000-URL inventory spent about 120 s in the
    codec, most of it per-row work that does not depend on the row: column
    names encoded again, a codec looked up per field, every field visited
    with getattr, and the frozen dataclass's `__init__` (one
    `object.__setattr__` per field, about 5 µs for `WebPage`).
    """

    def __init__(self, row_type: AnyRowType) -> None:
        names = [f.name for f in dataclasses.fields(row_type)]
        self.row_type = row_type
        self.identity = names[0]
        self.fields = frozenset(names[1:])
        self.encoders = {name: (column.name.encode(), column.codec.encode)
                         for name, column in _COLUMNS[row_type].items()}
        self.map_prefixes = {name: f"{family.family}:{family.prefix}".encode()
                             for name, family in _MAPS[row_type].items()}
        self.decoders = {raw_name: (name, column.codec.decode, column)
                         for raw_name, (name, column) in _BY_NAME[row_type].items()}
        self.map_fields = {family.family.encode(): name for name, family in _MAPS[row_type].items()
                           if not family.prefix}
        # Maps that share a family with columns: family -> (qualifier prefix, field).
        self.prefix_maps: dict[bytes, list[tuple[bytes, str]]] = {}
        for name, family in _MAPS[row_type].items():
            if family.prefix:
                self.prefix_maps.setdefault(family.family.encode(), []).append((family.prefix.encode(), name))
        # Rows decoded for a job that named its fields: a subclass whose other fields raise.
        namespace: dict[str, Any] = {name: _Unread(name) for name in names[1:]}
        namespace.update(__module__=row_type.__module__, __qualname__=row_type.__qualname__,
                         __doc__=f"A {row_type.__name__} decoded with some fields only.",
                         __dataclass_fields__=_HeldFields(row_type.__dataclass_fields__),
                         __init__=_partial_init(self.identity, frozenset(names)))
        self.partial_type = type(row_type.__name__, (row_type,), namespace)
        self._asked: dict[tuple[str, ...], dict[str, None]] = {}

    def asked(self, fields: Iterable[str]) -> dict[str, None]:
        """Field -> None for the fields a reader asked for (memoised; KeyError for an unknown field)."""
        key = tuple(fields)
        asked = self._asked.get(key)
        if asked is None:
            unknown = [name for name in key if name not in self.fields and name != self.identity]
            if unknown:
                raise KeyError(f"{self.row_type.__name__} has no field {unknown[0]!r}")
            asked = self._asked[key] = {name: None for name in key if name != self.identity}
        return asked


class _Unread:
    """A field of a row decoded with some fields only, reached when the row lacks it.

    Reading it raises FieldNotReadError instead of reading as None. Rows made
    by `WebPage(...)` or decoded without `fields` are of the row type itself,
    where an absent field reads as None (the dataclass default on the class).
    """

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, row: object, owner: type) -> None:
        if row is None:
            return None
        raise FieldNotReadError(
            f"{owner.__name__}.{self.name} was not read: add {self.name!r} to the fields the job reads"
        )


class _HeldFields:
    """`__dataclass_fields__` of a partly decoded row: every field on the class, the held ones on a row.

    So `dataclasses.replace` (and `fields`, `asdict`) see a partly decoded
    row as a row of the fields it holds: a replaced copy is partial too, and
    its fields not read still raise.
    """

    def __init__(self, every: dict[str, dataclasses.Field[Any]]) -> None:
        self.every = every

    def __get__(self, row: object, owner: type) -> dict[str, dataclasses.Field[Any]]:
        if row is None:
            return self.every
        held = row.__dict__
        return {name: f for name, f in self.every.items() if name in held}


def _partial_init(identity: str, names: frozenset[str]) -> Callable[..., None]:
    """The `__init__` `dataclasses.replace` calls on a partly decoded row: every held field by keyword."""

    def __init__(self: Any, **values: Any) -> None:
        if identity not in values or not values.keys() <= names:
            raise TypeError(f"a partly decoded row is made from its fields by keyword, {identity!r} first")
        self.__dict__.update(values)

    return __init__


def _fast_init(layout: _Layout) -> Callable[..., None]:
    """An `__init__` for a row type that stores just the fields given (one C call).

    Same signature and result as the dataclass's for the way rows are made
    (identity positional, fields by keyword): a field not given is absent
    from the instance and reads as the class default, None. Anything else
    (more positional arguments, an unknown keyword) goes to the dataclass's
    own `__init__`, which sorts it out or raises its TypeError.
    """
    generated = layout.row_type.__init__
    identity, fields = layout.identity, layout.fields

    def __init__(self: Any, *args: Any, **values: Any) -> None:
        if len(args) == 1 and values.keys() <= fields:
            state = self.__dict__
            state[identity] = args[0]
            state.update(values)
        else:
            generated(self, *args, **values)

    __init__.__doc__ = generated.__doc__
    return __init__


def _row_repr(row: AnyRow) -> str:
    """The identity and the fields that hold a value."""
    shown = ", ".join(f"{name}={value!r}" for name, value in row.__dict__.items() if value is not None)
    return f"{type(row).__name__}({shown})"


_LAYOUTS: dict[type, _Layout] = {}
for _row_type in _ROW_TYPES:
    _layout = _LAYOUTS[_row_type] = _Layout(_row_type)
    _LAYOUTS[_layout.partial_type] = _layout
    # Set after the dataclass is made, so mypy still checks every WebPage(...) against the fields.
    _row_type.__init__ = _fast_init(_layout)  # type: ignore[method-assign]
    _row_type.__repr__ = _row_repr  # type: ignore[assignment, method-assign]


def column_names(row_type: AnyRowType, fields: Iterable[str]) -> list[bytes]:
    """The HBase column names (`f:st`, or `il` for a map family) for these fields.

    Jobs pass the fields they read, so a scan fetches only those columns.
    Raises KeyError naming an unknown field.
    """
    names: list[bytes] = []
    for name in fields:
        if name in _COLUMNS[row_type]:
            names.append(_COLUMNS[row_type][name].name.encode())
        elif name in _MAPS[row_type]:
            names.append(_MAPS[row_type][name].family.encode())
        else:
            raise KeyError(f"{row_type.__name__} has no field {name!r}")
    return names


def equals_filter(row_type: AnyRowType, field_name: str, value: Any) -> str:
    """An HBase filter string: rows whose column for `field_name` holds `value`.

    Rows without the column are left out (filterIfMissing). Server side: the
    rows that fail it never cross the wire.
    """
    column = _COLUMNS[row_type][field_name]
    raw = column.codec.encode(value).decode("utf-8").replace("'", "''")
    return (f"SingleColumnValueFilter('{column.family}', '{column.qualifier}', =, "
            f"'binary:{raw}', true, true)")


def compare_filter_of(row_type: AnyRowType, field_name: str, op: str, value: Any) -> str:
    """An HBase filter string: rows whose column for `field_name` compares `op` (`>=`, `<`...) to `value`.

    Rows without the column are left out. Values compare as bytes, which is
    why times are fixed-width text.
    """
    column = _COLUMNS[row_type][field_name]
    raw = column.codec.encode(value).decode("utf-8").replace("'", "''")
    return (f"SingleColumnValueFilter('{column.family}', '{column.qualifier}', {op}, "
            f"'binary:{raw}', true, true)")


def overlaid(row: RowT, update: RowT) -> RowT:
    """`row` as it reads once `update` is put on it: every field `update` sets replaces the row's.

    For a job that writes a row and goes on working with it (updatedb counts
    the rows it merges) without reading it again. A field neither read into
    `row` nor set by `update` still raises FieldNotReadError. No I/O.
    """
    result = object.__new__(type(row))
    result.__dict__.update(row.__dict__)
    result.__dict__.update((name, value) for name, value in update.__dict__.items() if value is not None)
    return result


def encode(row: AnyRow) -> dict[bytes, bytes]:
    """Cells for every field that is set (not None); costs no round trip.

    Cost: one dict lookup per field the row holds, plus its codec; the fields
    never set are not visited.
    """
    cells: dict[bytes, bytes] = {}
    layout = _LAYOUTS[type(row)]
    encoders = layout.encoders
    for name, value in row.__dict__.items():
        if value is None:
            continue
        coder = encoders.get(name)
        if coder is not None:
            cells[coder[0]] = coder[1](value)
            continue
        prefix = layout.map_prefixes.get(name)
        if prefix is not None:
            for qualifier, text in value.items():
                cells[prefix + qualifier.encode()] = text.encode()
    return cells


def field_encoder(row_type: AnyRowType, field_name: str) -> tuple[bytes, Callable[[Any], bytes]]:
    """The column name and value encoder of one single-column field: `encode` of a row holding just that
    field, without making the row (for a job writing that one cell on row after row). KeyError when unknown."""
    return _LAYOUTS[row_type].encoders[field_name]


def decode(row_type: type[RowT], identity: str, cells: Mapping[bytes, bytes],
           fields: Iterable[str] | None = None) -> RowT:
    """A row from its cells; `identity` is the URL (or origin) the key stands for.

    `fields`: the fields the caller asked the store for (as given to
    `column_names`). Then a field neither asked for nor present in `cells`
    is left out of the row, and reading it raises FieldNotReadError instead
    of reading as None (the row is of a subclass of `row_type`, equal only
    to rows decoded the same way). Without `fields`, every absent field is None.

    Raises CellDecodeError naming the row and the column for a value that is
    not in its column's format. Unknown columns are ignored (a newer writer).
    Cost: a dict lookup and the codec per cell; no `__init__`.
    """
    layout = _LAYOUTS[row_type]
    if fields is None:
        row = object.__new__(row_type)
        values = row.__dict__
        values[layout.identity] = identity
    else:
        row = object.__new__(layout.partial_type)
        values = row.__dict__
        values[layout.identity] = identity
        values.update(layout.asked(fields))
    decoders = layout.decoders
    maps: dict[str, dict[str, str]] | None = None
    for raw_name, raw_value in cells.items():
        hit = decoders.get(raw_name)
        if hit is not None:
            try:
                values[hit[0]] = hit[1](raw_value)
            except (ValueError, UnicodeDecodeError, OSError, EOFError) as exc:
                column = hit[2]
                raise CellDecodeError(
                    f"row {identity!r}, column {column.name}: {raw_value[:40]!r} is not {column.codec.name} ({exc})"
                ) from None
            continue
        family, _, qualifier = raw_name.partition(b":")
        map_field = layout.map_fields.get(family)
        if map_field is None and family in layout.prefix_maps:
            for prefix, name in layout.prefix_maps[family]:
                if qualifier.startswith(prefix):
                    map_field, qualifier = name, qualifier[len(prefix):]
                    break
        if map_field is not None:
            if maps is None:
                maps = {}
            try:
                maps.setdefault(map_field, {})[qualifier.decode()] = raw_value.decode()
            except UnicodeDecodeError:
                raise CellDecodeError(
                    f"row {identity!r}, column {raw_name.decode('utf-8', 'replace')}: not UTF-8 text"
                ) from None
    if maps is not None:
        values.update(maps)
    return row


def readable_cells(row_type: AnyRowType, cells: Mapping[bytes, bytes]) -> dict[str, Any]:
    """`family:qualifier` -> a JSON-ready value, for `readdb --json`.

    Text stays text, numbers become numbers, flags booleans; content becomes
    its decompressed length (bytes are not for terminals).
    """
    out: dict[str, Any] = {}
    by_name = _BY_NAME[row_type]
    for raw_name, raw_value in sorted(cells.items()):
        name = raw_name.decode("utf-8", "replace")
        hit = by_name.get(raw_name)
        if hit is None:
            out[name] = raw_value.decode("utf-8", "replace")
            continue
        column = hit[1]
        try:
            value = column.codec.decode(raw_value)
        except (ValueError, UnicodeDecodeError, OSError, EOFError):
            out[name] = raw_value.decode("utf-8", "replace")
            continue
        if isinstance(value, datetime):
            out[name] = format_time(value)
        elif isinstance(value, bytes):
            out[name] = {"bytes": len(value)}
        elif isinstance(value, tuple):
            out[name] = list(value)
        elif isinstance(value, enum.Enum):
            out[name] = value.value
        else:
            out[name] = value
    return out


def all_columns() -> list[tuple[str, Column | MapFamily]]:
    """Every (table, column or map family) the model knows, for the column map test."""
    listed: list[tuple[str, Column | MapFamily]] = []
    tables: tuple[tuple[str, AnyRowType], ...] = (
        (WEBPAGE_TABLE, WebPage), (HOST_TABLE, HostRow), (BATCH_TABLE, BatchRow), (HISTORY_TABLE, HistoryRow),
        (BATCHROW_TABLE, BatchRecord), (DUE_TABLE, DueRow))
    for table, row_type in tables:
        listed.extend((table, column) for column in _COLUMNS[row_type].values())
        listed.extend((table, family) for family in _MAPS[row_type].values())
    return listed
