"""The row model: the six tables, their families and every column, its meaning and its value format.

This is the only module (with `hbase-schema/`) that knows column names. A row
is a `WebPage` (table `webpage`, one per URL), a `HostRow` (table `host`, one
per scheme+host+port), a `BatchRow` (table `batch`, one per batch id: what
generate made, which phases finished, who holds each split), a `BatchRecord`
(table `batchrow`, a batch's members by prefix), a `DueRow` (table `due`, the
index of next fetch times generate reads) or a `HistoryRow` (table `history`,
one per parse of a sitemap). Each field names its column and its codec
(`codec`); `cells` turns rows into cells and back. Rows are plain
dataclasses (with slots, not frozen: see `cells.Row`). `TABLES` registers each
table once (name, row type, families): the store, `hbase-schema/` and the
tests read it.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from sitemapcrawl.config import MAX_FETCH_SPLITS, MAX_HOPS
from sitemapcrawl.model.cells import (
    Column,
    Family,
    MapFamily,
    Row,
    Table,
    col,
    mapcol,
)
from sitemapcrawl.model.codec import (
    FLAG,
    FLOAT,
    GZIP,
    INT,
    LINES,
    PRECISE_TIME,
    TEXT,
    TIME,
    bounded_float,
    bounded_int,
    enum_codec,
)
from sitemapcrawl.sitemaps.model import ChangeFreq

WEBPAGE_TABLE = "webpage"
HOST_TABLE = "host"
HISTORY_TABLE = "history"
BATCH_TABLE = "batch"
BATCHROW_TABLE = "batchrow"
DUE_TABLE = "due"

#: Bounded columns: a stored value outside is an unreadable cell (storage.tables' one policy), never a crash.
HOPS = bounded_int(-MAX_HOPS, MAX_HOPS)  # negative: past the constraint (generate skips such a row)
FETCH_SPLIT = bounded_int(0, MAX_FETCH_SPLITS - 1)
FETCH_SPLITS = bounded_int(1, MAX_FETCH_SPLITS)
PRIORITY = bounded_float(0.0, 1.0)


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


@dataclass(slots=True, repr=False)
class WebPage(Row):
    """One `webpage` row: a URL and what the crawl knows of it.

    Every field but `url` may be None, meaning "not read or not set": a job
    writes only the fields it sets, and reads only the columns it asks for.
    """

    url: str
    # f: fetch state
    status: FetchStatus | None = col("f", "st", enum_codec(FetchStatus), "fetch status", "inject, fetch, updatedb")
    fetch_time: datetime | None = col("f", "ft", TIME, "time of the last fetch", "fetch")
    prev_fetch_time: datetime | None = col("f", "pft", TIME, "time of the fetch before", "fetch")
    next_fetch: datetime | None = col("f", "nft", TIME, "when the URL is due again", "inject, fetch, updatedb")
    fetch_interval: int | None = col(
        "f", "fi", INT, "seconds between fetches (absent: the changefreq's interval, else the default)",
        "inject, updatedb")
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
    blocked_by: str | None = col(
        "f", "blk", TEXT, "the site's bot defence that answered instead of the page (cloudflare, akamai, aws-waf, "
        "datadome, perimeterx, sucuri): the status is deferred; empty: another deferral", "fetch")
    warc_file: str | None = col("f", "wf", TEXT, "WARC file of the latest capture (fetch --warc)", "fetch")
    warc_offset: int | None = col("f", "wo", INT, "byte offset of the latest capture's record in that file", "fetch")
    warc_record: str | None = col(
        "f", "wid", TEXT, "WARC-Record-ID of the latest response record (a revisit refers to it)", "fetch")
    warc_date: str | None = col("f", "wdt", TEXT, "WARC-Date of that response record", "fetch")
    # s: sitemap hints and flags
    is_sitemap: bool | None = col("s", "sm", FLAG, "this URL is a sitemap document", "inject, detect, updatedb")
    in_sitemap: bool | None = col("s", "in", FLAG, "some sitemap lists this URL", "updatedb")
    sitemap_source: SitemapSource | None = col(
        "s", "src", enum_codec(SitemapSource), "how this sitemap was found", "inject, detect, updatedb")
    priority: float | None = col("s", "pr", PRIORITY, "sitemap <priority> in [0, 1]", "updatedb")
    changefreq: ChangeFreq | None = col("s", "cf", enum_codec(ChangeFreq), "sitemap <changefreq>", "updatedb")
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
    # s: what the sitemaps' extensions say of a listed URL, merged from their il: cells (issue 46)
    sitemap_hreflang: tuple[str, ...] | None = col(
        "s", "hl", LINES, "hreflang alternates its sitemaps give it (xhtml:link): `LANG URL` a line", "updatedb")
    news_date: str | None = col(
        "s", "nd", TEXT, "news:publication_date its news sitemap gives, UTC YYYY-MM-DDTHH:MM:SSZ (empty: no news "
        "sitemap lists it any more)", "updatedb")
    news_title: str | None = col("s", "nt", TEXT, "news:title its news sitemap gives", "updatedb")
    news_stale: bool | None = col(
        "s", "ns", FLAG, "its news entry was older than two days when the sitemap was parsed", "updatedb")
    images: int | None = col("s", "im", INT, "image:image elements its sitemap entry holds", "updatedb")
    videos: int | None = col("s", "vd", INT, "video:video elements its sitemap entry holds", "updatedb")
    lastmod_verdict: str | None = col(
        "s", "lv", TEXT, "why its lastmod is suspect (sitemapcrawl/model/lastmod.py): uniform, future, "
        "moved-same-content or stayed-content-changed; absent or empty: not suspect", "updatedb")
    # s: sitemap quality (sitemapcrawl/scoring/quality.py), on sitemap rows; weighted priority on listed rows
    quality: float | None = col("s", "q", FLOAT, "sitemap quality score in [0, 1]", "updatedb")
    quality_state: QualityState | None = col(
        "s", "qst", enum_codec(QualityState), "what the quality filter made of this sitemap", "updatedb")
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
        "s", "wp", FLOAT,
        "sitemap priority weighted by the quality of the sitemaps listing the URL (absent where it would equal s:pr)",
        "updatedb")
    # s: sitemap change tracking (sitemapcrawl/model/changes.py, storage/history.py)
    new_in_sitemap: str | None = col(
        "s", "nw", TEXT, "batch id: a re-parsed sitemap newly listed this URL (generate's boost)", "parse")
    sitemaps_listing: int | None = col(
        "s", "nl", INT, "sitemaps whose latest parse lists this URL (absent: 1 when s:in is set, else 0)",
        "updatedb")
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
    first_listing: str | None = col(
        "s", "fl", TEXT, "the batch that first listed this row and its sitemap: BATCH TAB SITEMAP; stands for "
        "the m:hc and s:qc lines of a row listed once and not fetched since, where those cells are absent "
        "(sitemapcrawl/scoring/firstlisting.py)", "updatedb")
    # m: crawl metadata
    score: float | None = col("m", "sc", FLOAT, "link/seed score", "inject, updatedb")
    depth: int | None = col("m", "dp", HOPS, "hops still allowed within the site", "inject, updatedb")
    radius: int | None = col("m", "ra", HOPS, "hops still allowed after leaving the site", "inject, updatedb")
    counted: tuple[str, ...] | None = col(
        "m", "hc", LINES, "what this row adds to its origin's row counts: ORIGIN TAB BATCH TAB now TAB before",
        "updatedb, inject, detect")
    seed: bool | None = col("m", "sd", FLAG, "injected as a seed", "inject")
    batch_id: str | None = col("m", "b", TEXT, "batch the row was generated into", "generate")
    fetch_split: int | None = col("m", "pa", FETCH_SPLIT, "fetch split of the batch", "generate")
    # m: what the page says about itself (sitemapcrawl/web/pagesays.py), read by fetch from every 2xx answer
    canonical: str | None = col(
        "m", "can", TEXT, "canonical URL the page names: <link rel=canonical> in its head, else a Link header's "
        "rel=canonical (empty: none)", "fetch")
    noindex: bool | None = col(
        "m", "noi", FLAG, "the page says noindex to search engines (robots or googlebot; <meta> or X-Robots-Tag)",
        "fetch")
    nofollow: bool | None = col(
        "m", "nof", FLAG, "the page says nofollow to this crawler (robots or its own token; <meta> or "
        "X-Robots-Tag): parse follows none of its links", "fetch")
    robots: tuple[str, ...] | None = col(
        "m", "rob", LINES, "robots directives as read, a line each: `X-Robots-Tag: ...` as sent, `meta NAME: ...`",
        "fetch")
    hreflang: tuple[str, ...] | None = col(
        "m", "hl", LINES, "hreflang alternates the page names (<link rel=alternate hreflang>, Link header): "
        "`LANG URL` a line", "fetch")
    hreflang_no_return: tuple[str, ...] | None = col(
        "m", "hnr", LINES, "hreflang alternates (the page's or its sitemaps') that do not name it back, `LANG URL` "
        "a line (sitemapcrawl/scoring/hreflang_step.py)", "updatedb")
    link_inlinks: int | None = col("m", "nil", INT, "pages linking to this URL (link inlinks; absent: 0)",
                                   "updatedb")
    # k: markers
    inject_mark: datetime | None = col("k", "inj", TIME, "when the URL was (last) injected", "inject")
    generate_mark: str | None = col("k", "gen", TEXT, "batch id: generated", "generate")
    fetch_mark: str | None = col("k", "fch", TEXT, "batch id: fetched", "fetch")
    parse_mark: str | None = col("k", "prs", TEXT, "batch id: parsed", "parse")
    update_mark: str | None = col("k", "upd", TEXT, "batch id: merged by updatedb", "updatedb")
    discover_mark: str | None = col(
        "k", "dsc", TEXT, "batch id: has inlinks to merge (not on a parsed sitemap's entries: their il: names it)",
        "parse, updatedb")
    merge_mark: str | None = col("k", "mrg", TEXT, "batch id: inlinks merged (a merge not to repeat)", "updatedb")
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


@dataclass(slots=True, repr=False)
class HostRow(Row):
    """One `host` row: what the crawl knows of one scheme+host+port."""

    origin: str
    """`scheme://host[:port]`, the scope of one robots.txt."""
    robots_fetch_time: datetime | None = col("r", "ft", TIME, "time robots.txt was fetched", "detect, fetch")
    robots_status: RobotsStatus | None = col(
        "r", "st", enum_codec(RobotsStatus), "ok, missing (allow all) or error (deny all until retry)",
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
        "n", "one batch's row count changes of this origin: `rows key=value...` (also the rows inject or detect "
        "wrote that no batch judged, under a run id `~<job><digest>`)", "updatedb, inject, detect",
        "batch.bucket", "c.")
    audit_samples: Mapping[str, str] | None = mapcol(
        "n", "audit list -> up to 50 of this origin's URLs on it, one a line", "updatedb, inject, detect", "list",
        "a.")
    counters_built: datetime | None = col(
        "n", "cb", TIME, "on row `~counters`: when updatedb first built the counters (none: the next one does)",
        "updatedb")
    sitemap_summaries: Mapping[str, str] | None = mapcol(
        "n", "sitemap URL -> its summary and quality as JSON, for serve's sitemaps panel", "updatedb, inject, detect",
        "url", "s.")
    # n: politeness state, on the rows of politeness keys (`storage/politeness.py`), not on origin rows
    last_request: datetime | None = col(
        "n", "lr", PRECISE_TIME, "politeness: end of the last request to this queue key", "fetch, detect")
    not_before: datetime | None = col(
        "n", "nb", PRECISE_TIME, "politeness: no request before this time (Retry-After)", "fetch")
    slow_delay: float | None = col(
        "n", "sd", FLOAT, "politeness: delay raised by 429/503 answers, seconds (0: none)", "fetch")
    reserved_until: datetime | None = col(
        "n", "rv", PRECISE_TIME, "politeness: a running fetch may have a request to this key in flight until "
        "this time (its window to start requests, plus their deadline); released when it ends", "fetch")


# ------------------------------------------------------------------ batch ---

BATCH_FAMILIES = (
    Family("b", "batch: what generate made"),
    Family("d", "done: qualifier = phase or phase split, value = when it finished"),
    Family("l", "leases: qualifier = phase split, value = holder and expiry"),
)


@dataclass(slots=True, repr=False)
class BatchRow(Row):
    """One `batch` row: a batch's facts, its finished phases and its leases (see batch/registry.py)."""

    batch_id: str
    generated: datetime | None = col("b", "gt", TIME, "when generate made the batch", "generate")
    selected: int | None = col("b", "n", INT, "rows generate selected", "generate")
    fetch_splits: int | None = col("b", "np", FETCH_SPLITS, "fetch splits of the batch", "generate")
    mode: str | None = col("b", "md", TEXT, "crawl mode of the batch", "generate")
    records: bool | None = col(
        "b", "rec", FLAG, "the batch's rows are recorded in batchrow (absent: a batch from before)", "generate")
    generating: str | None = col(
        "b", "gp", TEXT, "generate splits begun (K/N, space-separated; 0/1 unsplit): those without their "
                         "d:generate.K/N (d:generate) a crawl runs for this batch before fetching it",
        "generate, crawl")
    done: Mapping[str, str] | None = mapcol(
        "d", "generate, fetch.K/N, parse, update or release (with splits also generate.K/N, parse.K/N, spread.K/N, "
             "update.K/N) -> UTC time it finished", "fetch, parse, updatedb, batches",
        key="phase")
    leases: Mapping[str, str] | None = mapcol(
        "l", "phase split (fetch.K/N, parse, update, parse.K/N, update.K/N) -> worker=ID until=UTC time, "
             "set by check-and-put",
        "fetch, parse, updatedb", key="split")


def batch_cell(family: str, qualifier: str) -> bytes:
    """The column name of a `BatchRow` map cell (`d:parse`, `l:fetch.0/2`)."""
    return f"{family}:{qualifier}".encode()


# --------------------------------------------------------------- batchrow ---

BATCHROW_FAMILIES = (
    Family("r", "a record: a member of a batch, or a row a batch touched"),
)


@dataclass(slots=True, repr=False)
class BatchRecord(Row):
    """One `batchrow` row: a `webpage` row a batch holds (member) or touched (see `batchrecords.record_key`).

    Keys: `<batch>|m|<bucket>|<webpage key>` for a member (generate; fetch for
    a redirect hop), `<batch>|t|<bucket>|<webpage key>` for a touched row
    (updatedb's spread, or parse for a URL a sitemap stopped listing, wrote an
    `il:` cell and `k:dsc` on it), the bucket
    `splits.bucket_label(splits.bucket_of(webpage key))`; and
    `<batch>|l|<bucket>|<sitemap key>|<part>` for the entries of one sitemap
    parse in one bucket, their row keys in one cell (`listed_keys`), so that a
    sitemap of 50,000 entries is a few dozen records of one cell each, not
    50,000 rows or cells.
    """

    key: str
    fetch_split: int | None = col("r", "pa", FETCH_SPLIT, "member: its fetch split", "generate, fetch")
    touched: bool | None = col("r", "t", FLAG, "touched: has inlinks to merge for the batch", "parse, updatedb")
    work: bool | None = col(
        "r", "w", FLAG, "member: has work for parse and spread in sitemap-only mode (a sitemap, or a row whose "
        "fetch redirected); 0: a page, which that mode neither parses nor spreads; unset: read it", "generate, fetch")
    listed_keys: tuple[str, ...] | None = col(
        "r", "lk", LINES, "listed: the entry rows of the sitemap parsed, one webpage key per line, to merge for "
        "the batch", "parse")
    listed: Mapping[str, str] | None = mapcol(
        "r", "listed, as records were written before `r:lk`: one cell per entry row (value empty); still read, "
        "so a batch parsed by an older version is merged", "parse (before r:lk)", "webpage key", "k.")


# -------------------------------------------------------------------- due ---

DUE_FAMILIES = (
    Family("d", "due index: the entry of every row with a next fetch time, and the built marker"),
)


@dataclass(slots=True, repr=False)
class DueRow(Row):
    """One `due` row: index entries, or the marker saying the index was built (see `sitemapcrawl.model.due`).

    Waiting entries are keyed `<kind>|<next fetch time>|<webpage row key>`:
    `entry` says the row in the key is due then; `members` name more rows due
    at the same time, of the same kind, written together (a group: the entries
    of one write, up to `dueindex.DUE_GROUP`, under the least of their keys).
    Ready entries are keyed `r|<kind>|<bucket>|<host>|<order>|<rest of the
    row key>` with `entry` alone. The marker row (`~built`) holds when a full
    scan last built the index, and its layout.
    """

    key: str
    entry: bool | None = col("d", "e", FLAG, "entry: the webpage row in the key is due at the key's time",
                             "inject, detect, fetch, parse, updatedb, generate")
    members: Mapping[str, str] | None = mapcol(
        "d", "group entry: another webpage row due at the key's time, of the key's kind (value 1)",
        "inject, detect, fetch, parse, updatedb", "webpage key", "r.")
    built: datetime | None = col("d", "b", TIME, "marker row ~built: when generate last rebuilt the index "
                                 "from a full scan", "generate")
    layout: int | None = col("d", "v", INT, "marker row ~built: the layout of the index (2: waiting and "
                             "ready entries; absent: 1, waiting entries only)", "generate")


# ---------------------------------------------------------------- history ---

HISTORY_FAMILIES = (
    Family("h", "one parse of a sitemap: when, entries, changes by kind"),
    Family("c", "the changes of that parse: qualifier = chunk number", block_cache_enabled=False),
    Family("s", "the latest entry snapshot of a sitemap: when, entries, chunks"),
    Family("e", "the latest entry snapshot: qualifier = chunk number", block_cache_enabled=False),
)


@dataclass(slots=True, repr=False)
class HistoryRow(Row):
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
        "e", "chunk number -> entry lines: URL TAB lastmod TAB changefreq TAB priority, packed: z64: then the lines "
        "zlib-compressed in base64 (z85: base85, from older versions, is read too) (sitemapcrawl/model/changes.py)",
        "parse", "n")


#: The tables, one registry: the store creates them, `hbase-schema/` declares them (a test compares), tests hold them.
TABLES: tuple[Table, ...] = (
    Table(WEBPAGE_TABLE, WebPage, WEBPAGE_FAMILIES),
    Table(HOST_TABLE, HostRow, HOST_FAMILIES),
    Table(BATCH_TABLE, BatchRow, BATCH_FAMILIES),
    Table(HISTORY_TABLE, HistoryRow, HISTORY_FAMILIES),
    Table(BATCHROW_TABLE, BatchRecord, BATCHROW_FAMILIES),
    Table(DUE_TABLE, DueRow, DUE_FAMILIES),
)
#: Their base names, in the registry's order.
TABLE_NAMES: tuple[str, ...] = tuple(table.name for table in TABLES)



def all_columns() -> list[tuple[str, Column | MapFamily]]:
    """Every (table, column or map family) the model knows, for the column map test."""
    return [(table.name, column) for table in TABLES for column in table.columns()]
