"""Sitemap change history in the `history` table: written by parse, read by `changes` and the reports.

"What did this sitemap add or drop since last time" must be answered without
scanning `webpage`: each sitemap has a snapshot row (its entries at its latest
parse) and one row per parse (newest first: counts and change lines, their
text from `sitemapcrawl.model.changes`). `record_parse` compares a parse with
the snapshot, unlists the URLs the sitemap dropped (their `il:` cell goes,
`k:dsc` marks them for updatedb) and marks new ones `s:nw`; `record_statuses`
adds the statuses of its URLs after updatedb. No row is over `max_row_bytes`:
what does not fit goes on in continuation rows. The rows: docs/tables.md.

Cost per sitemap parsed: one get of its snapshot (one per continuation
row), two puts (one per row when spread), one small prefix scan to prune,
and one put per added or removed URL (batched). Memory: the two snapshots.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from sitemapcrawl.clock import epoch_microseconds, precise_now
from sitemapcrawl.errors import CellDecodeError, InvalidUrlError, UsageError
from sitemapcrawl.model.alerts import ALERT_FIELDS, fails_now, shrank
from sitemapcrawl.model.cells import column_names, compare_filter_of, encode, map_column
from sitemapcrawl.model.changes import (
    Change,
    ChangeKind,
    Hints,
    change_lines,
    chunks,
    count_changes,
    diff,
    history_key,
    pack,
    read_changes,
    read_snapshot,
    sitemap_key_of,
    snapshot_lines,
)
from sitemapcrawl.model.codec import format_time, parse_time
from sitemapcrawl.model.webpage import HISTORY_TABLE, WEBPAGE_TABLE, HistoryRow, WebPage
from sitemapcrawl.storage.batchrecords import record_touched
from sitemapcrawl.storage.dueindex import write_pages
from sitemapcrawl.storage.store import Store
from sitemapcrawl.storage.tables import Unreadable, decode_history, history_rows, read_pages
from sitemapcrawl.web import rowkeys, urls

log = logging.getLogger(__name__)

_SUMMARY_FIELDS = [
    "sitemap", "parsed_at", "batch", "entries", "baseline", "added", "removed", "lastmod_changed",
    "changefreq_changed", "priority_changed", "statuses",
]
_SNAPSHOT_FIELDS = ["snapshot_at", "snapshot_chunks", "snapshot"]
_COUNT_FIELDS = {
    ChangeKind.ADDED: "added", ChangeKind.REMOVED: "removed", ChangeKind.LASTMOD: "lastmod_changed",
    ChangeKind.CHANGEFREQ: "changefreq_changed", ChangeKind.PRIORITY: "priority_changed",
}


@dataclass(frozen=True)
class ParseChanges:
    """What `record_parse` found for one sitemap."""

    baseline: bool
    key: str
    """The parse row's key (parse keeps it on the sitemap row, `s:hk`)."""
    counts: dict[ChangeKind, int] = field(default_factory=dict)


#: Between a history row's key and the number of one of its continuation rows.
PART_MARK = b"#"

Layout = dict[bytes, set[bytes]]
"""Row key -> the columns a spread value's rows hold (what a rewrite must clean up)."""


def part_key(key: bytes, n: int) -> bytes:
    """The key of continuation row `n` (from 1) of a history row."""
    return key + PART_MARK + b"%05d" % n


def spread(key: bytes, cells: Mapping[bytes, bytes], max_row_bytes: int) -> list[tuple[bytes, dict[bytes, bytes]]]:
    """A row's cells cut into rows of at most `max_row_bytes` (in order: the first cells stay on `key`).

    A cell alone over the bound still gets a row of its own (chunk cells are
    about `changes.CHUNK_BYTES`, far below the smallest bound).
    """
    rows: list[tuple[bytes, dict[bytes, bytes]]] = [(key, {})]
    size = len(key)
    for column, value in cells.items():
        weight = len(column) + len(value) + 48
        if rows[-1][1] and size + weight > max_row_bytes:
            rows.append((part_key(key, len(rows)), {}))
            size = len(rows[-1][0])
        rows[-1][1][column] = value
        size += weight
    return rows


def gather(store: Store, key: bytes, columns: list[bytes]) -> tuple[dict[bytes, bytes], Layout]:
    """A spread row's cells, its continuation rows' merged in, and where each column was.

    Cost: one get per row (a row is at most `max_row_bytes`).
    """
    cells = store.row(HISTORY_TABLE, key, columns) or {}
    layout: Layout = {key: set(cells)} if cells else {}
    n = 1
    while cells and (part := store.row(HISTORY_TABLE, part_key(key, n), columns)):
        cells.update(part)
        layout[part_key(key, n)] = set(part)
        n += 1
    return cells, layout


def gather_many(store: Store, keys: list[bytes], columns: list[bytes]) -> dict[bytes, dict[bytes, bytes]]:
    """`gather` of several spread rows (those found): one multi-get per level of continuation rows, not two
    gets per row. Cost: about two round trips for rows that fit in one."""
    found = {key: dict(cells) for key, cells in store.rows(HISTORY_TABLE, keys, columns).items() if cells}
    level, open_rows = 1, list(found)
    while open_rows:
        parts = store.rows(HISTORY_TABLE, [part_key(key, level) for key in open_rows], columns)
        still = []
        for key in open_rows:
            part = parts.get(part_key(key, level))
            if part:
                found[key].update(part)
                still.append(key)
        level, open_rows = level + 1, still
    return found


def _read_snapshot(store: Store, key: bytes) -> tuple[dict[str, Hints] | None, Layout]:
    """The stored snapshot of a sitemap (None: never parsed) and the rows and cells it takes."""
    cells, layout = gather(store, key, column_names(HistoryRow, _SNAPSHOT_FIELDS))
    return _snapshot_of(key, cells), layout


def _snapshot_of(key: bytes, cells: dict[bytes, bytes]) -> dict[str, Hints] | None:
    """The snapshot the gathered `cells` of a sitemap's history row hold (None: none, or unreadable)."""
    if not cells:
        return None
    try:
        row = decode_history(key, cells, _SNAPSHOT_FIELDS)
    except (InvalidUrlError, CellDecodeError) as exc:
        log.warning("history: unreadable snapshot, taken as none: %s", exc)
        return None
    if row.snapshot_at is None:
        return None
    parts = row.snapshot or {}
    texts = [parts[n] for n in sorted(parts, key=lambda q: int(q) if q.isdigit() else -1)]
    try:
        return read_snapshot(texts)
    except ValueError as exc:
        log.warning("history: unreadable snapshot of %r, taken as none: %s", key[:200], exc)
        return None


def _clean_up(store: Store, old: Layout, new: list[tuple[bytes, dict[bytes, bytes]]]) -> None:
    """Delete what an earlier spread left that the new one did not write (whole continuation rows, or cells)."""
    written = {key: set(cells) for key, cells in new}
    for key, columns in old.items():
        if key not in written and key != new[0][0]:
            store.delete(HISTORY_TABLE, key)
        elif stale := sorted(columns - written.get(key, set())):
            store.delete(HISTORY_TABLE, key, stale)


def snapshot_urls(store: Store, sitemap_key: bytes) -> list[str]:
    """The URLs of a sitemap's latest parse, from its snapshot row (none when never parsed).

    Cost: one get of the snapshot row (about 1 MB per 10,000 entries).
    """
    snapshot, _chunks = _read_snapshot(store, sitemap_key)
    return list(snapshot or ())


#: Sitemaps whose snapshots `snapshot_lastmods` reads at once (each about 1 MB per 10,000 entries).
SNAPSHOTS_AT_ONCE = 64


def snapshot_lastmods(store: Store, sitemap_keys: list[bytes]) -> Iterator[tuple[bytes, list[datetime | None]]]:
    """(sitemap key, the lastmod of each entry of its latest parse; None: a lastmod not read) for each of
    `sitemap_keys` parsed before.

    Cost: a `gather_many` (about two multi-gets) per `SNAPSHOTS_AT_ONCE` sitemaps; memory: their snapshots.
    """
    columns = column_names(HistoryRow, _SNAPSHOT_FIELDS)
    for at in range(0, len(sitemap_keys), SNAPSHOTS_AT_ONCE):
        for key, cells in gather_many(store, sitemap_keys[at:at + SNAPSHOTS_AT_ONCE], columns).items():
            snapshot = _snapshot_of(key, cells)
            if snapshot is None:
                continue
            out: list[datetime | None] = []
            for hints in snapshot.values():
                try:
                    out.append(parse_time(hints.lastmod) if hints.lastmod else None)
                except ValueError:
                    out.append(None)
            yield key, out


def record_parse(store: Store, sitemap_key: bytes, sitemap_url: str, listed: Mapping[str, Hints],
                 batch_id: str, now: datetime, keep: int) -> ParseChanges:
    """Record one parse of a sitemap (see the module docstring); return what changed."""
    key_text = sitemap_key.decode("utf-8")
    previous, old_layout = _read_snapshot(store, sitemap_key)
    changes = diff(previous, listed) if previous is not None else []
    counts = count_changes(changes)
    change_cells = {str(n): text for n, text in enumerate(chunks(change_lines(changes)))}
    parse_row = HistoryRow(
        history_key(key_text, epoch_microseconds(precise_now())), sitemap=sitemap_url, parsed_at=now, batch=batch_id,
        entries=len(listed),
        baseline=previous is None, change_chunks=change_cells, added=counts[ChangeKind.ADDED],
        removed=counts[ChangeKind.REMOVED], lastmod_changed=counts[ChangeKind.LASTMOD],
        changefreq_changed=counts[ChangeKind.CHANGEFREQ], priority_changed=counts[ChangeKind.PRIORITY])
    snapshot_cells = {str(n): pack(text) for n, text in enumerate(chunks(snapshot_lines(listed)))}
    snapshot_row = HistoryRow(key_text, snapshot_at=now, snapshot_entries=len(listed),
                              snapshot_chunks=len(snapshot_cells), snapshot=snapshot_cells)
    snapshot_rows = spread(sitemap_key, encode(snapshot_row), store.max_row_bytes)
    store.write(HISTORY_TABLE, [*spread(parse_row.key.encode("utf-8"), encode(parse_row), store.max_row_bytes),
                                *snapshot_rows])
    _clean_up(store, old_layout, snapshot_rows)
    if previous is not None:  # a first parse (no snapshot yet) has no older parse rows to prune
        _prune(store, key_text, keep)
    if previous is not None:
        _act_on_rows(store, sitemap_url, changes, batch_id, now)
    return ParseChanges(previous is None, parse_row.key, counts)


def _act_on_rows(store: Store, sitemap_url: str, changes: list[Change], batch_id: str, now: datetime) -> None:
    """Removed URLs lose the sitemap's inlink cell and get merged again; added ones get the boost mark
    (a rank field: their due entries move with it)."""
    inlink_column = [map_column(WebPage, "inlinks", sitemap_url)]
    puts: list[tuple[bytes, dict[bytes, bytes]]] = []
    deletes: list[tuple[bytes, list[bytes]]] = []
    for change in changes:
        if change.kind not in (ChangeKind.ADDED, ChangeKind.REMOVED):
            continue
        try:
            key = rowkeys.row_key(change.url).encode("utf-8")
        except InvalidUrlError:
            continue
        if change.kind is ChangeKind.REMOVED:
            deletes.append((key, inlink_column))
            puts.append((key, encode(WebPage(change.url, discover_mark=batch_id))))
        else:
            puts.append((key, encode(WebPage(change.url, new_in_sitemap=batch_id))))
    # Different columns from the puts, so a delete and a put in one millisecond do not collide.
    store.delete_many(WEBPAGE_TABLE, deletes)
    record_touched(store, batch_id, (key for key, _ in deletes))  # before their k:dsc: updatedb merges them
    write_pages(store, puts, now=now)


def _prune(store: Store, sitemap_key: str, keep: int) -> None:
    """Delete this sitemap's parse rows beyond the newest `keep` (keys sort newest first)."""
    prefix = f"{sitemap_key} ".encode()
    columns = column_names(HistoryRow, ["parsed_at"])
    old = [key for n, (key, _cells) in enumerate(store.scan(HISTORY_TABLE, prefix=prefix, columns=columns))
           if n >= max(1, keep)]
    change_columns = column_names(HistoryRow, ["change_chunks"])
    for key in old:
        for part in list(gather(store, key, change_columns)[1])[1:]:
            store.delete(HISTORY_TABLE, part)
        store.delete(HISTORY_TABLE, key)


def record_statuses(store: Store, statuses: Mapping[str, Counter[str]]) -> int:
    """Write listed-URL statuses on parse rows, by parse row key (`s:hk`); return rows written.

    Cost: one batched write, no read.
    """
    puts = [(key.encode("utf-8"), encode(HistoryRow(key, statuses=" ".join(
        f"{status}={n}" for status, n in sorted(counter.items()))))) for key, counter in statuses.items() if key]
    return store.write(HISTORY_TABLE, puts).rows


def parse_statuses(text: str | None) -> dict[str, int]:
    """`fetched=3 gone=1` -> {"fetched": 3, "gone": 1}; bad words are skipped."""
    out: dict[str, int] = {}
    for word in (text or "").split():
        name, _, number = word.partition("=")
        if name and number.isdigit():
            out[name] = int(number)
    return out


# ------------------------------------------------------------------ reading --

@dataclass
class SitemapHistory:
    """One sitemap's recorded parses (oldest first), as summaries without the change lines."""

    sitemap: str
    parses: list[HistoryRow]

    def totals(self) -> dict[ChangeKind, int]:
        """Changes of each kind over these parses."""
        return {kind: sum(getattr(p, name) or 0 for p in self.parses) for kind, name in _COUNT_FIELDS.items()}


@dataclass(frozen=True)
class ChangeRecord:
    """One change as `changes --jsonl` prints it."""

    sitemap: str
    url: str
    change: str
    old: str | None
    new: str | None
    at: str


def _prefixes(sitemap: str | None, host: str | None, rules: urls.CanonicalRules) -> list[bytes | None]:
    if sitemap is not None:
        key = rowkeys.row_key(urls.canonicalize(sitemap, rules))
        if host is not None and urls.host_key(urls.canonicalize(sitemap, rules)) != urls.canonical_host(host, rules):
            return []
        return [f"{key} ".encode()]
    if host is not None:
        return [rowkeys.host_row_prefix(host, rules).encode("utf-8")]
    return [None]


def histories(store: Store, *, sitemap: str | None = None, host: str | None = None,
              since: datetime | None = None, rules: urls.CanonicalRules = urls.DEFAULT_RULES,
              unreadable: Unreadable | None = None) -> Iterator[SitemapHistory]:
    """The recorded parses, grouped by sitemap in key order, each group oldest first.

    `sitemap` (a URL) and `host` narrow the prefix scanned; `since` keeps parses
    at or after that time (tested by the server). Baseline parses are included
    (their counts are zero). Rows that do not decode are logged and counted
    in `unreadable` (`tables`). Raises InvalidUrlError for a bad URL or host, and
    the store's errors. Cost: a prefix scan of the summary columns; memory:
    one sitemap's parses.
    """
    store.require_tables(HISTORY_TABLE)
    row_filter = compare_filter_of(HistoryRow, "parsed_at", ">=", since) if since is not None else None
    columns = column_names(HistoryRow, _SUMMARY_FIELDS)
    unreadable = unreadable if unreadable is not None else Unreadable()
    for prefix in _prefixes(sitemap, host, rules):
        group: list[HistoryRow] = []
        current = ""
        scan = store.scan(HISTORY_TABLE, prefix=prefix, columns=columns, filter=row_filter)
        for _key, row in history_rows(scan, "history", unreadable, _SUMMARY_FIELDS):
            if row.parsed_at is None or row.sitemap is None:
                continue
            owner = sitemap_key_of(row.key)
            if group and owner != current:
                yield SitemapHistory(group[0].sitemap or "", group[::-1])
                group = []
            current = owner
            group.append(row)
        if group:
            yield SitemapHistory(group[0].sitemap or "", group[::-1])


def changes_of(store: Store, parse: HistoryRow, unreadable: Unreadable | None = None) -> Iterator[ChangeRecord]:
    """The change records of one parse row, in URL order (one get of its change cells).

    Change cells that do not decode give no records; the row is logged and
    counted in `unreadable`.
    """
    key = parse.key.encode("utf-8")
    cells, _layout = gather(store, key, column_names(HistoryRow, ["change_chunks"]))
    if not cells:
        return
    try:
        parts = decode_history(key, cells, ["change_chunks"]).change_chunks or {}
    except (InvalidUrlError, CellDecodeError) as exc:
        (unreadable if unreadable is not None else Unreadable()).add("history", key, exc)
        return
    texts = [parts[n] for n in sorted(parts, key=lambda q: int(q) if q.isdigit() else -1)]
    at = format_time(parse.parsed_at) if parse.parsed_at else ""
    for change in read_changes(texts):
        yield ChangeRecord(parse.sitemap or "", change.url, change.kind.value, change.old, change.new, at)


def parse_counts(parse: HistoryRow) -> dict[ChangeKind, int]:
    """The change counts of one parse row."""
    return {kind: getattr(parse, name) or 0 for kind, name in _COUNT_FIELDS.items()}


def parse_since(text: str) -> datetime:
    """`--since`: an ISO-8601 date or time (`2024-06-01`, `2024-06-01T12:00:00Z`, with an offset);
    naive times are UTC. UsageError naming the value otherwise."""
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise UsageError(f"--since {text[:60]!r}: expected an ISO time such as 2024-06-01T12:00:00Z") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


@dataclass
class ChangesCounts:
    """What `change_output` printed."""

    sitemaps: int = 0
    parses: int = 0
    records: int = 0
    unreadable: Unreadable = field(default_factory=Unreadable)
    """History rows that did not decode (logged, left out)."""
    alerts: list[str] = field(default_factory=list)
    """`SITEMAP: why` of each sitemap over an alert asked for (`model.alerts`): the command then exits 1."""

    def summary(self) -> str:
        """One line for stderr."""
        return (f"{self.records} changes from {self.parses} parses of {self.sitemaps} sitemaps"
                + (f"; {self.unreadable.rows} unreadable rows skipped" if self.unreadable.rows else ""))


def change_output(store: Store, counts: ChangesCounts, *, sitemap: str | None = None, host: str | None = None,
                  since: datetime | None = None, jsonl: bool = False,
                  rules: urls.CanonicalRules = urls.DEFAULT_RULES, fail_on_removed: float | None = None,
                  fail_on_error: bool = False) -> Iterator[str]:
    """The lines of `sitemapcrawl changes`: JSON records, or per sitemap its counts then its changes.

    Oldest parse first within a sitemap. Streams: one sitemap's parse
    summaries and one parse's changes in memory. `fail_on_removed`: note in
    `counts.alerts` each sitemap whose latest parse removed more than that
    percent of its entries; `fail_on_error`: each sitemap with a recorded
    parse that fails now (one multi-get of the sitemaps' rows, at the end).
    """
    parsed: dict[str, datetime] = {}
    for history in histories(store, sitemap=sitemap, host=host, since=since, rules=rules,
                             unreadable=counts.unreadable):
        counts.sitemaps += 1
        counts.parses += len(history.parses)
        latest = history.parses[-1]
        lost = shrank(latest, fail_on_removed) if fail_on_removed is not None else None
        if lost is not None:
            counts.alerts.append(f"{history.sitemap}: {lost}")
        if fail_on_error and latest.parsed_at is not None:
            parsed[history.sitemap] = latest.parsed_at
        if not jsonl:
            totals = history.totals()
            first = sum(1 for p in history.parses if p.baseline)
            yield (f"{history.sitemap}: " + ", ".join(f"{n} {kind.value}" for kind, n in totals.items())
                   + f" ({len(history.parses)} parses" + (f", {first} first" if first else "") + ")")
        for parse in history.parses:
            for record in changes_of(store, parse, counts.unreadable):
                counts.records += 1
                if jsonl:
                    yield json.dumps(dataclasses.asdict(record), ensure_ascii=False)
                else:
                    moved = record.change not in ("added", "removed")
                    values = f": {record.old or '-'} -> {record.new or '-'}" if moved else ""
                    yield f"  {record.at} {record.change:<10} {record.url}{values}"
    counts.alerts.extend(_failing(store, parsed, counts.unreadable))


def _failing(store: Store, parsed: Mapping[str, datetime], unreadable: Unreadable) -> Iterator[str]:
    """`SITEMAP: why` of each sitemap (URL -> its latest recorded parse) that fails now (`model.alerts`)."""
    keys: dict[bytes, str] = {}
    for url in parsed:
        try:
            keys[rowkeys.row_key(url).encode("utf-8")] = url
        except InvalidUrlError as exc:
            log.warning("changes: %s: %s", url[:200], exc)
    chunk = max(1, store.batch_size)
    ordered = sorted(keys)
    for start in range(0, len(ordered), chunk):
        found = read_pages(store, ordered[start:start + chunk], list(ALERT_FIELDS), "changes", unreadable)
        for key, row in found.items():
            why = fails_now(row, parsed[keys[key]])
            if why is not None:
                yield f"{row.url}: {why}"
