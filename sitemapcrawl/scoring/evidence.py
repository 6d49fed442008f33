"""Sitemap quality evidence as counters: what one listed row contributes, and how the sums are kept.

Pure: no I/O. `scoring.quality_step` reads and writes the cells; this module
owns the arithmetic (`contribution` judges one row for one sitemap, `judge`
turns a row's contributions into deltas), so the incremental step and the
full rescore count exactly alike. Counts add and subtract; the lastmod range
only widens, which is exact because a row enters the evidence of one parse
of a sitemap once and leaves it only when the sitemap is parsed again.

Where the sums live: on the listed row, `s:qc` (per sitemap a `Contribution`:
what it gives now and gave before the batch that judged it, so a rerun
computes the same delta); on the sitemap, one cell `s:ev.<batch>.<bucket>`
per batch and host bucket (written whole: idempotent whatever the split) and
the folded base `s:ev`. Only the latest parse counts. See docs/quality.md.
Cost: a few additions per row and sitemap judged.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, NamedTuple, TypeVar

from sitemapcrawl.model.codec import format_time, parse_time
from sitemapcrawl.model.lastmod import LastmodVerdict, lastmod_test
from sitemapcrawl.model.webpage import FetchStatus
from sitemapcrawl.scoring.quality import ListedStats

log = logging.getLogger(__name__)

#: The counters of a tally, in the order they are written.
COUNTS = ("listed", "ok", "gone", "redirected", "robots", "dated", "future", "stale", "phantom")
_JUDGED = {
    FetchStatus.FETCHED: "ok", FetchStatus.NOT_MODIFIED: "ok", FetchStatus.GONE: "gone",
    FetchStatus.REDIRECT: "redirected", FetchStatus.BLOCKED_ROBOTS: "robots",
}
#: The start of a status counter's name.
STATUS_PREFIX = "st."
#: The status counter of each fetch status (None: `st.none`), spelled once for the quality evidence and
#: the row counts (`rowcounts`).
STATUS_WORDS: dict[FetchStatus | None, str] = {
    None: STATUS_PREFIX + "none", **{s: STATUS_PREFIX + s.value for s in FetchStatus}}
_DATES = ("lo", "hi", "new")
#: One word for three equal dates (one row's tally: its lastmod is the least, the greatest and the newest).
_SAME_DATES = "d"


KIND_NUMBERS_HELD = 16384
"""Kinds a step remembers (`Forgetful`, `KindNumbers`) before forgetting them all."""

KeyT = TypeVar("KeyT", bound=Hashable)
ValueT = TypeVar("ValueT")


class Forgetful(dict[KeyT, ValueT]):
    """A memo of at most `held` entries that forgets them all when full: `get` as a dict's, `keep` to add.

    Why: updatedb's steps remember what they made of each kind of row (an
    inventory's few thousand), and a batch whose rows are each of its own
    kind must not hold a million. Forgetting costs making an entry again,
    never a wrong one, as long as an entry is a function of its key. A dict
    itself, so a hit costs a dict lookup (once per row on the hot path).
    """

    def __init__(self, held: int = KIND_NUMBERS_HELD) -> None:
        super().__init__()
        self.held = held

    def keep(self, key: KeyT, value: ValueT) -> ValueT:
        """Remember `value` for `key` (forgetting all first when full); `value`."""
        if len(self) >= self.held:
            self.clear()
        self[key] = value
        return value


@dataclass
class Tally:
    """Counters (`listed`, `ok`..., `st.<status>`) and the lastmod range of some listed rows."""

    counts: dict[str, int] = field(default_factory=dict)
    lo: datetime | None = None
    hi: datetime | None = None
    new: datetime | None = None
    """The newest lastmod not in the future when it was judged."""

    def add(self, other: Tally, sign: int = 1) -> None:
        """Add (sign 1) or subtract (sign -1) another tally's counts; widen the dates with its dates."""
        counts = self.counts
        for name, n in other.counts.items():
            total = counts.get(name, 0) + sign * n
            if total:
                counts[name] = total
            else:
                counts.pop(name, None)
        if sign > 0 and (other.lo is not None or other.hi is not None or other.new is not None):
            self.lo = _pick(min, self.lo, other.lo)
            self.hi = _pick(max, self.hi, other.hi)
            self.new = _pick(max, self.new, other.new)

    def minus(self, other: Tally) -> Tally:
        """This tally's counts less another's; this tally's dates (the row stays in the same parse)."""
        out = Tally(dict(self.counts), self.lo, self.hi, self.new)
        for name, n in other.counts.items():
            out.counts[name] = out.counts.get(name, 0) - n
        out.counts = {name: n for name, n in out.counts.items() if n}
        return out

    def empty(self) -> bool:
        """No count and no date."""
        return not self.counts and self.lo is None and self.hi is None and self.new is None

    def stats(self) -> ListedStats:
        """The `ListedStats` the quality formula reads."""
        c = self.counts
        return ListedStats(
            listed=c.get("listed", 0), ok=c.get("ok", 0), gone=c.get("gone", 0),
            redirected=c.get("redirected", 0), robots=c.get("robots", 0), dated=c.get("dated", 0),
            future=c.get("future", 0), stale=c.get("stale", 0), phantom=c.get("phantom", 0),
            first_lastmod=self.lo, lastmods_differ=self.lo != self.hi, newest=self.new)

    def statuses(self) -> dict[str, int]:
        """Listed rows by fetch status (`none`: no status), for the history chart."""
        return {name[len(STATUS_PREFIX):]: n for name, n in self.counts.items() if name.startswith(STATUS_PREFIX) and n}

    def key(self) -> tuple[object, ...]:
        """A hashable value equal for tallies built alike (same counters in the same order, same dates)."""
        return tuple(self.counts.items()), self.lo, self.hi, self.new

    def times(self, n: int) -> Tally:
        """The sum of `n` tallies equal to this one: its counts times `n`, its dates."""
        return Tally({name: count * n for name, count in self.counts.items()}, self.lo, self.hi, self.new)

    def text(self) -> str:
        """`key=value` words: the counters, then the dates (`d=` when all three are one, as on one row).

        Remembered for the last few thousand distinct tallies: updatedb
        writes the same few tallies (one row's counts, one entry's evidence)
        on row after row.
        """
        key = self.key()
        text = _TEXTS.get(key)
        if text is None:
            words = [f"{name}={n}" for name, n in sorted(self.counts.items(), key=_order)]
            if self.lo is not None and self.lo == self.hi == self.new:
                words.append(f"{_SAME_DATES}={format_time(self.lo)}")  # 25 bytes, not 75, on every listed row
            else:
                words += [f"{name}={format_time(d)}" for name, d in zip(_DATES, (self.lo, self.hi, self.new),
                                                                          strict=True) if d is not None]
            text = _TEXTS.keep(key, " ".join(words))
        return text

    @classmethod
    def read(cls, text: str) -> Tally:
        """Inverse of `text`; ValueError on a word that is not `key=value` of the right kind."""
        tally = cls()
        for word in text.split():
            name, sep, value = word.partition("=")
            if not sep or not name:
                raise ValueError(f"not key=value: {word[:40]!r}")
            if name in _DATES:
                setattr(tally, name, parse_time(value))
            elif name == _SAME_DATES:
                tally.lo = tally.hi = tally.new = parse_time(value)
            else:
                tally.counts[name] = int(value)
        return tally


_RANK = {name: rank for rank, name in enumerate(COUNTS)}
_TEXTS: Forgetful[tuple[object, ...], str] = Forgetful(4096)
"""`Tally.text` of recent tallies."""


def _order(item: tuple[str, int]) -> tuple[int, str]:
    name = item[0]
    return _RANK.get(name, len(COUNTS)), name


def _pick(choose: object, a: datetime | None, b: datetime | None) -> datetime | None:
    if a is None:
        return b
    if b is None:
        return a
    return choose(a, b)  # type: ignore[operator,no-any-return]


def contribution(lastmod: datetime | None, status: FetchStatus | None, fetch_time: datetime | None,
                 prev_fetch_time: datetime | None, content_changed: datetime | None, now: datetime) -> Tally:
    """What one listed row tells one sitemap, as a tally: its fetch judgement and lastmod tests. No I/O.

    `content_changed` is the fetch time at which the body was last seen to
    differ (the first fetch counts), so: a change between the previous fetch
    and the last one is known when `content_changed == fetch_time` and a
    previous fetch exists; the content stayed the same from `content_changed`
    to `fetch_time`. The rules are `sitemapcrawl.scoring.quality`'s (module docstring).
    """
    counts = {"listed": 1, STATUS_WORDS[status]: 1}
    judged = _JUDGED.get(status) if status is not None else None
    if judged:
        counts[judged] = 1
    tally = Tally(counts)
    if lastmod is None:
        return tally
    counts["dated"] = 1
    tally.lo = tally.hi = lastmod
    test = lastmod_test(lastmod, fetch_time, prev_fetch_time, content_changed, now)  # the audit's tests too
    if test is LastmodVerdict.FUTURE:
        counts["future"] = 1
        return tally
    tally.new = lastmod
    if test is LastmodVerdict.STAYED:
        counts["stale"] = 1
    elif test is LastmodVerdict.MOVED:
        counts["phantom"] = 1
    return tally


def unfetched_entries(lastmods: Iterable[datetime | None], now: datetime) -> Tally:
    """What a sitemap's entries give it while none of their rows was fetched: the sum of `contribution`
    for unfetched rows with these lastmods (one per entry). No I/O.

    What a first parse of a sitemap whose URLs are new is judged on, known
    before its rows are merged. Cost: one `contribution` per distinct lastmod.
    """
    alike: dict[datetime | None, int] = {}
    for lastmod in lastmods:
        alike[lastmod] = alike.get(lastmod, 0) + 1
    total = Tally()
    for lastmod, n in alike.items():
        total.add(contribution(lastmod, FetchStatus.UNFETCHED, None, None, None, now).times(n))
    return total


# ----------------------------------------------------------- groups by parse --

Groups = dict[str, Tally]
"""Parse batch id `P` -> tally of the rows whose inlink cell carries it."""


def groups_text(groups: Mapping[str, Tally]) -> tuple[str, ...]:
    """One line per non-empty group: `P key=value...`, sorted by P."""
    return tuple(f"{parse} {tally.text()}".rstrip() for parse, tally in sorted(groups.items()) if not tally.empty())


def read_groups(lines: Iterable[str]) -> Groups:
    """Inverse of `groups_text`; ValueError on a bad line."""
    groups: Groups = {}
    for line in lines:
        parse, _, rest = line.strip().partition(" ")
        if not parse:
            continue
        groups.setdefault(parse, Tally()).add(Tally.read(rest))
    return groups


def add_groups(total: Groups, more: Mapping[str, Tally]) -> None:
    """Add every group of `more` into `total` (a million times in an inventory: no tally made per call)."""
    for parse, tally in more.items():
        held = total.get(parse)
        if held is None:
            held = total[parse] = Tally()
        held.add(tally)


def latest(groups: Mapping[str, Tally], count: str = "listed") -> tuple[str, Tally]:
    """The latest parse with a listed entry (a positive `count`) and its tally (("", empty) when none)."""
    for parse in sorted(groups, reverse=True):
        if groups[parse].counts.get(count, 0) > 0:
            return parse, groups[parse]
    return "", Tally()


# ------------------------------------------------------------ base and cells --

#: Folded batch ids a base remembers (a rerun of one of them writes a cell that must not count again).
FOLDED_KEPT = 32
#: The start of the id of a counting run that is no batch (`scoring.new_rows`): not ordered by time, so
#: never compared with a base's `through`, only looked up among its `folded` ids.
RUN_PREFIX = "~"


@dataclass
class Base:
    """The folded evidence of a sitemap (or row counts of an origin) and which batches' cells are in it.

    `folded`: the latest `FOLDED_KEPT` batch ids folded, in fold order;
    `through`: the greatest id of those forgotten since (but run ids,
    `RUN_PREFIX`, which only `folded` holds). A cell of a folded
    batch is ignored if written again. Batch ids are not compared with each
    other otherwise: two batches made in one second sort by their random
    part, not by time.
    """

    through: str = ""
    groups: Groups = field(default_factory=dict)
    count: str = "listed"
    """The counter that says a group has members (`listed` entries; `rows` for row counts)."""
    folded: tuple[str, ...] = ()

    def holds(self, batch: str) -> bool:
        """Are this batch's cells already in the base?"""
        return batch in self.folded or (bool(self.through) and _ordered(batch) and batch <= self.through)

    def lines(self) -> tuple[str, ...]:
        """`through=<batch> folded=<ids>` then the groups (only the latest parse's: older ones never count again)."""
        parse, tally = latest(self.groups, self.count)
        kept = {parse: tally} if parse else {}
        return (f"through={self.through} folded={','.join(self.folded)}", *groups_text(kept))

    @classmethod
    def read(cls, lines: Iterable[str] | None, count: str = "listed") -> Base:
        """Inverse of `lines`; ValueError on a bad line."""
        items = list(lines or ())
        if not items:
            return cls(count=count)
        head = dict(word.partition("=")[::2] for word in items[0].split())
        if "through" not in head:
            raise ValueError(f"evidence base must start with through=, not {items[0][:40]!r}")
        folded = tuple(b for b in head.get("folded", "").split(",") if b)
        return cls(head["through"], read_groups(items[1:]), count, folded)


def _ordered(batch: str) -> bool:
    """Is this id a batch's, ordered by time (a base's `through` may cover it), not a run's (`RUN_PREFIX`)?"""
    return not batch.startswith(RUN_PREFIX)


def cell_name(batch_id: str, bucket: int) -> str:
    """The qualifier tail of one batch's cell for one host bucket: `<batch>.<bbb>`."""
    return f"{batch_id}.{bucket:03d}"


def cell_batch(name: str) -> str:
    """The batch id of a cell name (inverse of `cell_name`)."""
    return name.rpartition(".")[0]


def evidence(base: Base, cells: Mapping[str, str]) -> Groups:
    """Base plus the cells of batches not folded into it; ValueError on a bad cell."""
    groups: Groups = {}
    add_groups(groups, base.groups)
    for name, text in cells.items():
        if not base.holds(cell_batch(name)):
            add_groups(groups, read_groups(text.split("\n")))
    return groups


def fold(base: Base, cells: Mapping[str, str], current: str) -> tuple[Base, list[str]]:
    """Base with the cells of every batch but `current` folded in, and the names of the cells now in it.

    The current batch's cells stay apart: another split may still write its
    own. Cells of batches folded before (a rerun wrote them again) are
    dropped, not counted twice. Safe to run twice and from two processes:
    the same inputs give the same base.
    """
    groups: Groups = {}
    add_groups(groups, base.groups)
    folded = list(base.folded)
    names: list[str] = []
    for name, text in sorted(cells.items()):
        batch = cell_batch(name)
        if batch == current:
            continue
        names.append(name)
        if not base.holds(batch):
            add_groups(groups, read_groups(text.split("\n")))
            if batch not in folded:
                folded.append(batch)
    forgotten = [batch for batch in folded[:-FOLDED_KEPT] if _ordered(batch)]
    through = max([base.through, *forgotten])
    return Base(through, groups, base.count, tuple(folded[-FOLDED_KEPT:])), names


# ------------------------------------------------------ a row's contributions --

#: The parse word of a contribution whose parse is the batch that judged it.
_SAME_BATCH = "="


class Contribution(NamedTuple):
    """What a listed row gives one sitemap: now (`parse`, `tally`; None once delisted), and before `batch`.

    `before` is what it gave before the batch that judged it last, so that
    a rerun of that batch computes the same delta again. A named tuple: made
    once or twice per row judged (a frozen dataclass costs three times as much).
    """

    sitemap: str
    batch: str
    parse: str | None
    tally: Tally | None
    before_parse: str | None
    before: Tally | None

    def line(self) -> str:
        """`sitemap TAB batch TAB P words TAB P words` (`-` for none; P `=` when the parse is `batch`, as for
        the entries of a sitemap parsed in the batch that judges them)."""
        now = f"{self._parse_word(self.parse)} {self.tally.text()}" if self.parse and self.tally else "-"
        then = (f"{self._parse_word(self.before_parse)} {self.before.text()}" if self.before_parse and self.before
                else "-")
        return f"{self.sitemap}\t{self.batch}\t{now}\t{then}"

    def _parse_word(self, parse: str) -> str:
        return _SAME_BATCH if parse == self.batch else parse

    @classmethod
    def read(cls, line: str) -> Contribution:
        """Inverse of `line`; ValueError on a bad line."""
        parts = line.split("\t")
        if len(parts) != 4:
            raise ValueError(f"contribution needs 4 tab-separated parts: {line[:60]!r}")
        sitemap, batch, now, then = parts

        def side(text: str) -> tuple[str | None, Tally | None]:
            if text == "-":
                return None, None
            parse, _, words = text.partition(" ")
            return (batch if parse == _SAME_BATCH else parse), Tally.read(words)

        parse, tally = side(now)
        before_parse, before = side(then)
        return cls(sitemap, batch, parse, tally, before_parse, before)


def read_contributions(lines: Iterable[str] | None,
                       on_bad: Callable[[str, ValueError], None]) -> list[Contribution]:
    """The contributions a row stored (`s:qc` or `m:hc` lines); a bad line is told to `on_bad` and read as none."""
    out = []
    for line in lines or ():
        try:
            out.append(Contribution.read(line))
        except ValueError as exc:
            on_bad(line, exc)
    return out


def judge(stored: Iterable[Contribution], current: Mapping[str, tuple[str, Tally]],
          batch_id: str) -> tuple[list[Contribution], dict[str, Groups]]:
    """A row's new contributions and the deltas they make, per sitemap and parse. No I/O.

    `stored`: what the row holds (`s:qc`); `current`: sitemap -> (parse P,
    tally) from its inlink cells now. For a sitemap, the row's former
    contribution is what it held before `batch_id` (so a rerun gives the
    same delta); the delta is new - former within one parse, or -former in
    the old parse and +new in the new one. A sitemap that no longer lists
    the row keeps a line with no current part until the next batch, so a
    rerun still subtracts it.
    """
    if not stored:  # a row judged for the first time (most rows of an inventory): all it gives is new
        firsts = [(sitemap, parse, tally) for sitemap, (parse, tally) in sorted(current.items()) if parse]
        return ([Contribution(sitemap, batch_id, parse, tally, None, None) for sitemap, parse, tally in firsts],
                {sitemap: {parse: tally} for sitemap, parse, tally in firsts})
    held = {c.sitemap: c for c in stored}
    lines: list[Contribution] = []
    deltas: dict[str, Groups] = {}
    for sitemap in sorted(set(held) | set(current)):
        old = held.get(sitemap)
        if old is not None and old.batch == batch_id:
            was_parse, was = old.before_parse, old.before
        elif old is not None:
            was_parse, was = old.parse, old.tally
        else:
            was_parse, was = None, None
        now_parse, now = current.get(sitemap, (None, None))
        groups = deltas.setdefault(sitemap, {})
        if was_parse and was and now_parse == was_parse and now is not None:
            groups.setdefault(now_parse, Tally()).add(now.minus(was))
        else:
            if was_parse and was:
                groups.setdefault(was_parse, Tally()).add(was, -1)
            if now_parse and now is not None:
                groups.setdefault(now_parse, Tally()).add(now)
        if not groups:
            del deltas[sitemap]
        if now_parse or was_parse:
            lines.append(Contribution(sitemap, batch_id, now_parse, now, was_parse, was))
    return lines, deltas


SlotT = TypeVar("SlotT")


class Ledger(Generic[SlotT]):
    """The incremental ledger loop of an updatedb step (quality evidence, row counts): each touched row
    judged against the lines it stores (`column`), its deltas summed per slot by `add`.

    `again(slot, url, held, current)` judges a row that stores lines (`held`).
    First judgements (of rows with no stored line) are made once per kind of
    row, and counted: `judge` of a row with no stored line depends on what the row gives now
    alone, and an inventory judges a million new rows of a few kinds (the
    same tallies). `lines(slot, alike, current, *args)` gives the lines of such
    a row and the cell that stores them (`encode` of their texts), judging
    only the first row of its kind: `alike` is a hashable value equal for
    rows whose `current(*args)` is equal, `slot` where the caller sums the row's
    deltas (an origin, a host bucket). The deltas go to `add(slot, sitemap,
    groups)` as one tally times the rows of each kind, when `flush` is
    called and whenever `held` kinds are held (so memory stays bounded when
    no two rows are alike). Sums come out as if each row were added alone:
    adding a tally n times adds its counts n times and widens its dates once.
    An unreadable stored line is logged (as `step`) and read as none.
    """

    def __init__(self, batch_id: str, encode: Callable[[tuple[str, ...]], bytes],
                 add: Callable[[SlotT, str, Groups], None], held: int = 4096, *, step: str = "evidence",
                 column: str = "") -> None:
        self.batch_id, self._encode, self._add, self._most = batch_id, encode, add, held
        self.step, self.column = step, column
        self._kinds: dict[tuple[SlotT, object], _Kind] = {}

    def again(self, slot: SlotT, url: str, held: tuple[str, ...],
              current: Mapping[str, tuple[str, Tally]]) -> tuple[list[Contribution], bytes | None]:
        """Judge a row that stores `held` lines again; its lines, and the cell to store when they changed
        (None: unchanged). Its deltas go to `add` under `slot` at once."""
        def bad(_line: str, exc: ValueError) -> None:
            log.warning("%s: %s: unreadable %s line taken as none: %s", self.step, url, self.column, exc)

        lines, deltas = judge(read_contributions(held, bad), current, self.batch_id)
        for source, groups in deltas.items():
            self._add(slot, source, groups)
        text = tuple([c.line() for c in lines])
        return lines, (None if text == held else self._encode(text))

    def lines(self, slot: SlotT, alike: object, current: Callable[..., Mapping[str, tuple[str, Tally]]],
              *args: Any) -> tuple[list[Contribution], bytes]:
        """The lines and stored cell of one row judged for the first time; counts the row under `slot`."""
        kind = self._kinds.get((slot, alike))
        if kind is None:
            if len(self._kinds) >= self._most:
                self.flush()
            lines, deltas = judge((), current(*args), self.batch_id)
            kind = self._kinds[slot, alike] = _Kind(lines, self._encode(tuple(c.line() for c in lines)), deltas)
        kind.rows += 1
        return kind.lines, kind.cell

    def flush(self) -> None:
        """Hand every kind's deltas, times its rows, to `add`; forget the kinds."""
        for (slot, _alike), kind in self._kinds.items():
            for sitemap, groups in kind.deltas.items():
                self._add(slot, sitemap, {parse: tally.times(kind.rows) for parse, tally in groups.items()})
        self._kinds.clear()


class KindNumbers:
    """A number for each kind of row met (a hashable value), never given to another kind.

    Why: a step that counts a million rows of a few thousand kinds looks a
    kind up once per row, and a number hashes in no time where a tuple of
    dates and enums is hashed anew at each lookup. Memory: at most `held`
    kinds, then all are forgotten (a kind met again gets a new number: its
    rows are then counted under two kinds, which sum the same).
    """

    def __init__(self, held: int = KIND_NUMBERS_HELD) -> None:
        self._numbers: Forgetful[Hashable, int] = Forgetful(held)
        self._next = itertools.count()

    def of(self, kind: Hashable) -> int:
        """The number of `kind`."""
        number = self._numbers.get(kind)
        return self._numbers.keep(kind, next(self._next)) if number is None else number


@dataclass
class _Kind:
    """One kind of first judgement: its lines, their cell, its deltas, and the rows judged so."""

    lines: list[Contribution]
    cell: bytes
    deltas: dict[str, Groups]
    rows: int = 0
