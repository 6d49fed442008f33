"""The batch registry: which batches exist, which phases of each finished, and releasing one.

generate writes one `batch` row per batch; each phase marks itself done in
the `d` family only when it left nothing behind, so a batch is *unfinished*
until `update` (or `release`) is there, and `crawl` finishes it first
(`jobs.crawl.finish_batch`). `release` (a batch too old to finish,
`batch_max_age`, or `batches --release`) marks its rows updated for it
(`k:upd`) without scheduling them, so generate may select them again, and
deletes its records. It refuses a batch a live worker holds a lease of
(`LeaseHeldError` naming it); `force` (for a worker whose machine died)
releases anyway and first takes every lease cell over, so the old holder's
next write is refused (`batch.leases`). The rows: docs/tables.md.

Cost: one small row per batch; listing the unfinished ones scans only the
`batch` table. Releasing reads the batch's members (`batch_rows`) and deletes its records.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sitemapcrawl.batch.leases import Holder, Lease
from sitemapcrawl.clock import utc_now
from sitemapcrawl.config import Settings
from sitemapcrawl.errors import CellDecodeError, LeaseHeldError, SplitWaitError, UsageError
from sitemapcrawl.model.cells import column_names, decode, encode
from sitemapcrawl.model.codec import format_time, parse_time
from sitemapcrawl.model.marks import Mark
from sitemapcrawl.model.splits import WHOLE, Split
from sitemapcrawl.model.webpage import BATCH_TABLE, BATCHROW_TABLE, WEBPAGE_TABLE, BatchRow, WebPage, batch_cell
from sitemapcrawl.storage.batchrecords import (
    batch_rows,
    drop_records,
    has_marked_rows,
    has_records,
    recorded_splits,
)
from sitemapcrawl.storage.store import Store
from sitemapcrawl.storage.tables import Unreadable

log = logging.getLogger(__name__)

FETCH, PARSE, UPDATE, RELEASE = "fetch", "parse", "update", "release"
GENERATE = "generate"
"""`generate.K/N` (unsplit: `generate`) is marked once split K of N marked the rows it selected into the batch."""
SPREAD = "spread"
"""`spread.K/N` is marked when split K of N of updatedb spread its links: merging waits for all."""
GENERATING_COLUMN = column_names(BatchRow, ["generating"])[0]


def fetch_split_name(fetch_split: int, fetch_splits: int) -> str:
    """The name (and lease) of one fetch split of a batch: `fetch.K/N`."""
    return f"{FETCH}.{fetch_split}/{fetch_splits}"


def fetch_split_names(store: Store, batch_id: str, fetch_split: tuple[int, int] | None) -> list[str]:
    """The fetch splits a run leases: its own, or every fetch split that holds a member of the batch.

    Cost: for the whole batch, one read of its member records (`recorded_splits`,
    what fetch reads next anyway), so claiming costs what the batch holds, not
    what its split count says: 2 URLs in 4,096 fetch splits take 2 leases at most.
    """
    state = require_batch(store, batch_id)
    if fetch_split is not None:
        if state.generated is not None and fetch_split[1] != state.fetch_splits:
            raise UsageError(f"batch {batch_id} has {state.fetch_splits} fetch splits, not {fetch_split[1]}: "
                             f"give --split K/{state.fetch_splits}")
        return [fetch_split_name(*fetch_split)]
    if state.fetch_splits == 1 or not has_records(store, batch_id):
        return state.fetch_split_names
    return [fetch_split_name(k, state.fetch_splits) for k in sorted(recorded_splits(store, batch_id))
            if k < state.fetch_splits]


@dataclass(frozen=True)
class BatchState:
    """What the registry says of one batch."""

    batch_id: str
    generated: datetime | None = None
    selected: int | None = None
    fetch_splits: int = 1
    mode: str | None = None
    done: dict[str, str] = field(default_factory=dict)
    leases: dict[str, str] = field(default_factory=dict)
    generating: tuple[Split, ...] = ()
    """The generate splits begun and not finished (`Split()` for an unsplit generate): run them before fetch."""

    @property
    def fetch_split_names(self) -> list[str]:
        """Every fetch split of the batch, by its lease name (at most `MAX_FETCH_SPLITS`: the codec refuses more)."""
        return [fetch_split_name(k, self.fetch_splits) for k in range(self.fetch_splits)]

    @property
    def fetched(self) -> int:
        """Fetch splits that fetched every row (a whole-batch fetch that finished counts them all).

        Cost: a look at the marks the row holds, not one per split.
        """
        if FETCH in self.done:
            return self.fetch_splits
        head, tail = FETCH + ".", f"/{self.fetch_splits}"
        return sum(1 for name in self.done if name.startswith(head) and name.endswith(tail))

    @property
    def finished(self) -> bool:
        """updatedb merged the batch, or it was released."""
        return UPDATE in self.done or RELEASE in self.done

    @property
    def stage(self) -> str:
        """Where the batch stands, in one word: fetching, fetched, parsed, finished or released."""
        if RELEASE in self.done:
            return "released"
        if UPDATE in self.done:
            return "finished"
        if PARSE in self.done:
            return "parsed"
        return "fetched" if self.fetched == self.fetch_splits else "fetching"

    def finished_at(self, phase: str) -> datetime | None:
        """When `phase` (FETCH: its last fetch split; PARSE) was marked done, None if it is not (or unreadable)."""
        names = self.fetch_split_names if phase == FETCH else [phase]
        if not names or any(name not in self.done for name in names):
            return None
        try:
            return max(parse_time(self.done[name]) for name in names)
        except ValueError:
            return None

    def phase(self) -> str:
        """Where the batch stands, in a few words."""
        if RELEASE in self.done:
            return "released"
        if self.generating:
            return f"generating ({', '.join(s.text() for s in self.generating)} not finished)"
        if UPDATE in self.done:
            return "finished"
        if PARSE in self.done:
            return "parsed, not updated" + self._splits_done(UPDATE)
        if self.fetched == self.fetch_splits:
            return "fetched, not parsed" + self._splits_done(PARSE)
        return f"fetching ({self.fetched} of {self.fetch_splits} fetch splits done)"

    def _splits_done(self, phase: str) -> str:
        """`(updatedb: 1 of 2 splits done)` when splits of `phase` are marked done, else ``."""
        counts = {name.rpartition("/")[2] for name in self.done if name.startswith(phase + ".")}
        if len(counts) != 1:
            return ""
        count = int(counts.pop())
        done = sum(1 for name in self.done if name.startswith(phase + ".") and name.endswith(f"/{count}"))
        return f" ({'updatedb' if phase == UPDATE else phase}: {done} of {count} splits done)"

    def line(self) -> str:
        """One line for `sitemapcrawl batches`."""
        made = format_time(self.generated) if self.generated else "?"
        held = "; ".join(f"{split_name} held by {holder}" for split_name, holder in sorted(self.leases.items()))
        return (f"{self.batch_id}\t{self.phase()}\tgenerated {made}\trows {self.selected or 0}"
                f"\tmode {self.mode or '-'}" + (f"\t{held}" if held else ""))


def _state(key: bytes, cells: dict[bytes, bytes]) -> BatchState:
    batch_id = key.decode("utf-8", "replace")
    row = decode(BatchRow, batch_id, cells)
    done = dict(row.done or {})
    return BatchState(batch_id, row.generated, row.selected, max(1, row.fetch_splits or 1), row.mode,
                      done, dict(row.leases or {}), _generating(row.generating, done))


def _generating(text: str | None, done: dict[str, str]) -> tuple[Split, ...]:
    """The splits a `b:gp` cell names whose `generate.K/N` (unsplit: `generate`) is not marked done
    (an unreadable item is left out: it cannot be run again)."""
    found = []
    for item in (text or "").split():
        with contextlib.suppress(UsageError):
            found.append(Split.parse(item))
    return tuple(s for s in dict.fromkeys(found) if phase_split_name(GENERATE, s) not in done)


def record_generated(store: Store, batch_id: str, now: datetime, selected: int, fetch_splits: int,
                     mode: str, split: Split = WHOLE) -> None:
    """Register a new batch (one put), saying its rows are recorded (`tables`: members, touched rows),
    before generate marks its rows; a split of a generate joins the batch.

    With a split (`generate --split K/N --batch-id ID`), every split registers
    the same batch: the first writes the facts, each names itself in `b:gp`
    (unless a crawl named it already), and adds its rows once they are marked
    (`finish_generating`). A split whose number of fetch splits or mode differ
    from the registered ones raises UsageError (the splits of one batch must
    agree). Unsplit, the put holds the rows and names `0/1` in `b:gp`, and
    keeps the batch's first time (a generate run again for it,
    `jobs.crawl.finish_batch`). Cost: one get more than the put (with a split
    not named yet, a check-and-put too).
    """
    if split.whole:
        state = read_batch(store, batch_id)
        first = state.generated if state is not None and state.generated is not None else now
        store.write(BATCH_TABLE, [(batch_id.encode(), encode(BatchRow(
            batch_id, generated=first, selected=selected, fetch_splits=fetch_splits, mode=mode, records=True,
            generating=WHOLE.text())))])
        return
    _add_split_generated(store, batch_id, now, fetch_splits, mode, split)


def record_done(store: Store, batch_id: str, names: list[str], now: datetime) -> None:
    """Mark phases or splits of phases of a batch done (one put)."""
    if names:
        store.write(BATCH_TABLE, [(batch_id.encode(), encode(BatchRow(
            batch_id, done={name: format_time(now) for name in names})))])


def read_batch(store: Store, batch_id: str) -> BatchState | None:
    """The registry's row of one batch, or None (a batch made before the registry, or a typo)."""
    cells = store.row(BATCH_TABLE, batch_id.encode())
    if cells is None:
        return None
    try:
        return _state(batch_id.encode(), cells)
    except CellDecodeError as exc:
        log.warning("batch %s: unreadable registry row (%s)", batch_id, exc)
        return None


def require_batch(store: Store, batch_id: str) -> BatchState:
    """The registry's row of a batch generate made; UsageError in one line for an id nobody generated.

    Checked before a phase takes a lease or waits for a split, so a typo is
    answered at once and leaves nothing behind (no registry row, no lease).
    A batch made before the registry has no row there: it is known by its
    rows' generate mark (an empty state is returned for it).
    Cost: one get; for an id the registry does not know, one server-filtered
    scan of `webpage` that stops at the first row of the batch (the whole
    table for a typo, as reading such a batch always cost).
    """
    cells = store.row(BATCH_TABLE, batch_id.encode())
    if cells is not None:
        try:
            state = _state(batch_id.encode(), cells)
        except CellDecodeError as exc:
            raise UsageError(f"batch {batch_id}: its registry row is unreadable ({exc})") from None
        if state.generated is not None:
            return state
    if has_marked_rows(store, batch_id):
        return BatchState(batch_id)
    raise UsageError(f"no batch {batch_id!r} in the batch registry (a typo?); `sitemapcrawl batches` lists them")


def every_batch(store: Store) -> list[BatchState]:
    """Every batch generate registered (finished or not), oldest first.

    Cost: one scan of the `batch` table (one small row per batch).
    """
    found = []
    for key, cells in store.scan(BATCH_TABLE):
        try:
            state = _state(key, cells)
        except CellDecodeError as exc:
            log.warning("batch registry: skipping row %r (%s)", key[:80], exc)
            continue
        if state.generated is not None:
            found.append(state)
    return sorted(found, key=lambda s: (s.generated or datetime.min, s.batch_id))


def unfinished(store: Store) -> list[BatchState]:
    """Batches generated and neither merged by updatedb nor released, oldest first (`every_batch`'s cost)."""
    return [state for state in every_batch(store) if not state.finished]


def too_old(state: BatchState, now: datetime, max_age: float) -> bool:
    """Was the batch generated more than `max_age` seconds ago (so it is released, not finished)?"""
    return state.generated is not None and state.generated < now - timedelta(seconds=max_age)


def release(store: Store, batch_id: str, now: datetime, force: bool = False) -> int:
    """Free the rows of a batch for generate and mark it released; return the rows freed.

    Raises UsageError for a batch the registry does not know, LeaseHeldError
    for one a live worker holds a lease of (unless `force`; see the module
    docstring). Cost: one put of the lease cells, then as above.
    """
    state = read_batch(store, batch_id)
    if state is None:
        raise UsageError(f"batch {batch_id!r} is not in the batch registry; `sitemapcrawl batches` lists them")
    live = live_holders(state, now)
    if live and not force:
        split_name, holder = live[0]
        raise LeaseHeldError(
            f"batch {batch_id} is being worked on: {split_name} is held by {holder.describe()}; stop that worker "
            "first, or, if its machine is dead, rerun with --force")
    _fence(store, batch_id, state, now)
    held: list[bytes] = []
    # Keys first, writes after: a scanner must not idle while we write.
    for rows in batch_rows(store, Mark.GENERATE, batch_id, [Mark.UPDATE], 1000, "batches", Unreadable()):
        held.extend(key for key, row in rows if not Mark.UPDATE.done(row, batch_id))
    mark = encode(WebPage("", update_mark=batch_id))
    store.write(WEBPAGE_TABLE, ((key, mark) for key in held))
    record_done(store, batch_id, [RELEASE], now)
    if BATCHROW_TABLE in store.existing_tables():  # a table made before the records may lack it
        drop_records(store, batch_id)
    return len(held)


def live_holders(state: BatchState, now: datetime) -> list[tuple[str, Holder]]:
    """The splits of a batch whose lease a live worker holds, with the holder, by lease name."""
    found = []
    for split_name, raw in sorted(state.leases.items()):
        holder = Holder.parse(raw.encode())
        if holder is not None and holder.live(now):
            found.append((split_name, holder))
    return found


def _fence(store: Store, batch_id: str, state: BatchState, now: datetime) -> None:
    """Take every lease cell of the batch over (expired, in the name of `released`): a holder's next
    refresh or `Lease.confirm` (a check-and-put on its own value) fails, so it stops and writes nothing
    more for the batch. A plain put does it, whatever the cells hold: one round trip for all of them."""
    if state.leases:
        released = Holder("released", now, now).text()
        store.write(BATCH_TABLE, [(batch_id.encode(), {batch_cell("l", name): released for name in state.leases})])


@contextlib.contextmanager
def holding(store: Store, batch_id: str, phase: str, settings: Settings, wait: bool = False,
            split: Split = WHOLE) -> Iterator[Lease]:
    """Hold the lease of a phase's split of a batch (`update.K/N`) while the body runs; mark nothing.

    For a step of a phase that is not the end of it (updatedb's spread step). Raises LeaseHeldError
    when another worker holds the split (with `wait`: waits for it, see `batch.leases`).
    """
    lease = Lease(store, batch_id, [phase_split_name(phase, split)], settings.lease_seconds)
    lease.claim(wait=wait, on_wait=log.warning)
    try:
        yield lease
    finally:
        lease.release()


@contextlib.contextmanager
def working_on(store: Store, batch_id: str, phase: str, settings: Settings, wait: bool = False,
               split: Split = WHOLE, on_last: Callable[[], None] | None = None) -> Iterator[Lease]:
    """Hold the lease of a phase (`parse`, `update`) of a batch, or of one split of it, while the body runs.

    On a normal exit the phase (or its split, `parse.K/N`) is marked done
    if what it depends on was done when it began (parse: every fetch
    split; update: parse). `on_last` is the batch-level step that runs
    once per phase: at the end of an unsplit run, or after the split that
    finishes last (see `finish_phase`). Raises LeaseHeldError when another
    worker holds the split (see `batch.leases`).
    """
    before = require_batch(store, batch_id)
    ready = before.fetched == before.fetch_splits if phase == PARSE else PARSE in before.done
    split_name = phase_split_name(phase, split)
    lease = Lease(store, batch_id, [split_name], settings.lease_seconds)
    lease.claim(wait=wait, on_wait=log.warning)
    try:
        yield lease
        if split.whole and on_last is not None:
            on_last()
    finally:
        lease.release()
    if ready:
        record_done(store, batch_id, [split_name], utc_now())
    if not split.whole:
        finish_phase(store, batch_id, phase, split.count, settings, on_last)


# ------------------------------------------------------------------ splits --
# A phase run as N splits (`--split K/N`, `sitemapcrawl.model.splits`) takes the
# lease named `parse.K/N` / `update.K/N` and marks that name done;
# the phase itself (`parse`, `update`) is done when every split of one N is,
# and its batch-level step runs then, once, under the phase's own lease.

def phase_split_name(phase: str, split: Split) -> str:
    """The lease (and done mark) name of `phase` for a split: `parse` unsplit, `parse.K/N` for split K of N."""
    return phase if split.whole else f"{phase}.{split.text()}"


def batch_splits(state: BatchState | None, count: int) -> list[Split]:
    """The splits of `count` a batch is made of: those whose generate registered rows (`generate.K/N`),
    or all of them (a batch generated unsplit, or by splits of another count)."""
    every = [Split(k, count) for k in range(count)]
    done = state.done if state is not None else {}
    registered = [s for s in every if phase_split_name(GENERATE, s) in done]
    return registered or every


def begun_splits(state: BatchState, phases: tuple[str, ...]) -> list[Split]:
    """The splits (`batch_splits`) a batch's `phases` were begun in: N from their `phase.K/N` marks, or
    none (never split, or splits of several N). A run finishing the batch runs them in the same splits:
    a rerun of a split skips what that split did, which a run of another shape cannot see."""
    counts = {name.rpartition("/")[2] for name in state.done if name.partition(".")[0] in phases and "/" in name}
    if len(counts) != 1 or not (count := counts.pop()).isdigit() or int(count) < 2:
        return []
    return batch_splits(state, int(count))


def missing_splits(state: BatchState | None, phase: str, count: int) -> list[Split]:
    """The splits of the batch (`batch_splits`) whose part of `phase` is not marked done."""
    done = state.done if state is not None else {}
    return [s for s in batch_splits(state, count) if phase_split_name(phase, s) not in done]


def finish_phase(store: Store, batch_id: str, phase: str, count: int, settings: Settings,
                 on_last: Callable[[], None] | None) -> bool:
    """When every split of `phase` is done: run `on_last` and mark the phase done, once; True if this did it.

    Of two splits finishing together, the one that takes the phase's lease
    does it; the other sees the lease held (or the phase done) and returns.
    Cost: one registry read; when last, a lease claim, one more read and one put.
    """
    if missing_splits(read_batch(store, batch_id), phase, count):
        return False
    lease = Lease(store, batch_id, [phase], settings.lease_seconds)
    try:
        lease.claim()
    except LeaseHeldError:
        return False  # another split (or an unsplit run) is finishing the phase
    try:
        state = read_batch(store, batch_id)
        if state is None or phase in state.done:
            return False
        if on_last is not None:
            on_last()
        record_done(store, batch_id, [phase], utc_now())
        return True
    finally:
        lease.release()


def _live_holder(state: BatchState, split_name: str, now: datetime) -> str | None:
    holder = Holder.parse(state.leases.get(split_name, "").encode())
    return holder.worker if holder is not None and holder.live(now) else None


def barrier(store: Store, batch_id: str, stage: str, phase: str, split: Split, settings: Settings,
            wait: bool = False, poll: float = 0.5) -> None:
    """Mark `stage` done for `split` (`spread.K/N`), then wait until every split of N has done it.

    updatedb needs this between its passes: a split merges the link targets it
    holds, and links to them come from every split. While a missing split's
    `phase` lease is held by a live worker, waits; when none is (not started,
    or died) for `lease_seconds`, raises SplitWaitError naming the split to run
    (with `wait`, waits for ever). Rerunning the split later redoes nothing
    twice. Cost: one registry read per `poll` seconds while waiting.
    """
    record_done(store, batch_id, [phase_split_name(stage, split)], utc_now())
    idle_since = time.monotonic()
    told: set[str] = set()
    while True:
        state = read_batch(store, batch_id)
        missing = missing_splits(state, stage, split.count)
        if not missing or state is None:
            return
        now = utc_now()
        live = {s.text(): _live_holder(state, phase_split_name(phase, s), now) for s in missing}
        if any(live.values()):
            idle_since = time.monotonic()
        elif not wait and time.monotonic() - idle_since > settings.lease_seconds:
            names = ", ".join(s.text() for s in missing)
            raise SplitWaitError(
                f"batch {batch_id} split {split.text()}: done with {stage}, but split(s) {names} have not done "
                f"theirs and no worker runs them: run them (e.g. `--split {missing[0].text()}`), then rerun "
                f"split {split.text()}")
        for name, worker in live.items():
            line = f"{name} ({'worker ' + worker if worker else 'not running'})"
            if line not in told:
                told.add(line)
                log.warning("batch %s split %s: waiting for split %s to finish %s", batch_id, split.text(),
                            line, stage)
        time.sleep(poll)


def _add_split_generated(store: Store, batch_id: str, now: datetime, fetch_splits: int, mode: str,
                         split: Split) -> None:
    state = read_batch(store, batch_id)
    if state is not None and state.generated is not None and (
            state.fetch_splits != max(1, fetch_splits) or (state.mode and state.mode != mode)):
        raise UsageError(f"batch {batch_id} was generated with --fetch-splits {state.fetch_splits} and mode "
                         f"{state.mode}; every split of it must use the same")
    # Named before the batch is known, so a kill after leaves it named; a crawl named it already (`b:gp`,
    # read with the row above), and a split run again after it finished is no longer generating: nothing
    # to write, and no read again.
    named = state is not None and (split in state.generating or phase_split_name(GENERATE, split) in state.done)
    if not named:
        begin_generating(store, batch_id, [split])
    if state is None or state.generated is None:
        store.write(BATCH_TABLE, [(batch_id.encode(), encode(BatchRow(
            batch_id, generated=now, fetch_splits=fetch_splits, mode=mode, records=True)))])


# -------------------------------------------------------------- generating --
# `b:gp` names the generate splits of a batch begun: the crawl writes every
# split it is about to run (`begin_generating`), a split not named adds itself
# when it registers. A named split is generating until its rows are marked and
# `d:generate.K/N` (unsplit: `d:generate`) says so (`finish_generating`), or it
# selected none and its name goes (`end_generating`). A crawl killed in
# between leaves them generating, and the next crawl runs them for the same
# batch before fetching it.

def _change_generating(store: Store, batch_id: str, change: Callable[[list[str]], list[str]]) -> None:
    """Rewrite `b:gp` by check-and-put until no other split changed it in between (nothing when unchanged)."""
    key = batch_id.encode()
    while True:
        current = (store.row(BATCH_TABLE, key, [GENERATING_COLUMN]) or {}).get(GENERATING_COLUMN)
        items = (current or b"").decode("utf-8", "replace").split()
        wanted = change(items)
        if wanted == items or store.check_and_put(BATCH_TABLE, key, GENERATING_COLUMN, current,
                                                  " ".join(wanted).encode("utf-8")):
            return


def begin_generating(store: Store, batch_id: str, splits: list[Split]) -> None:
    """Name `splits` generating for the batch, beside those named already (before their tasks run)."""
    texts = [s.text() for s in splits]
    _change_generating(store, batch_id, lambda items: list(dict.fromkeys([*items, *texts])))


def finish_generating(store: Store, batch_id: str, split: Split, selected: int, now: datetime) -> None:
    """`split` of the batch's generate marked its `selected` rows: add them to the batch's `b:n`, once,
    and mark `generate.K/N` done (unsplit, `record_generated` wrote the rows: only the mark).

    A split run again after it finished (its mark read with `b:n`) adds nothing. Cost: one put unsplit;
    with a split, one get, a check-and-put (more while other splits add theirs) and the put.
    """
    name = phase_split_name(GENERATE, split)
    if not split.whole:
        key, done = batch_id.encode(), batch_cell("d", name)
        column = column_names(BatchRow, ["selected"])[0]
        while True:
            cells = store.row(BATCH_TABLE, key, [column, done]) or {}
            if done in cells:
                return  # finished before (a generate run again): its rows are counted
            current = cells.get(column)
            total = (int(current) if current and current.isdigit() else 0) + selected
            if store.check_and_put(BATCH_TABLE, key, column, current,
                                   encode(BatchRow(batch_id, selected=total))[column]):
                break
    record_done(store, batch_id, [name], now)


def end_generating(store: Store, batch_id: str, split: Split) -> None:
    """`split` of the batch's generate selected no row: its name goes from `b:gp`.

    Cost: one get, and one check-and-put when it was named (a batch never named costs the get).
    """
    _change_generating(store, batch_id, lambda items: [item for item in items if item != split.text()])


def forget_generating(store: Store, batch_id: str) -> None:
    """Drop the `b:gp` cell of a batch no split registered (its only cell: the row goes with it). One delete."""
    store.delete_many(BATCH_TABLE, [(batch_id.encode(), [GENERATING_COLUMN])])


def generated_within(state: BatchState, split: Split) -> bool:
    """Was the batch generated by splits inside `split` alone (any batch for the whole)?

    A crawl of one split (machine K of N) finishes only its own batches.
    """
    if split.whole:
        return True
    owned = set(split.buckets())
    split_names = [name.partition(".")[2] for name in state.done if name.startswith(GENERATE + ".")]
    parsed = [Split.parse(text) for text in split_names if text] + list(state.generating)
    return bool(parsed) and all(set(s.buckets()) <= owned for s in parsed)
