"""Rows and cells: how a row dataclass is bound to HBase columns, and `encode` / `decode`.

A row type is a plain dataclass (`Row`) whose fields are bound to columns
with `col` and `mapcol` (the row model, `webpage`, declares them); what
encode and decode need of it is laid out once, the first time it is met.
Jobs build partial rows (only the fields they set) and `encode` turns them
into cells; `decode` turns cells back into a row, raising `CellDecodeError`
naming the row and the column for a bad value. Given the fields a job asked
for, `decode` gives each other field a `NotRead` value, whose truth test
raises `FieldNotReadError`, instead of None.
Cost: both are on every crawl's hot path: a dict lookup and a codec call
per cell, from tables computed once per row type.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar, TypeVar

from sitemapcrawl.errors import CellDecodeError, FieldNotReadError
from sitemapcrawl.model.codec import Codec, format_time

RowT = TypeVar("RowT", bound="Row")
T = TypeVar("T")


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


@dataclass(frozen=True)
class Table:
    """One table of the row model: its base name, the type of its rows and its families.

    The registry of them (`webpage.TABLES`) is what the store creates, what
    `hbase-schema/` must declare (a test compares) and what a test store holds.
    """

    name: str
    row_type: type[Row]
    families: tuple[Family, ...]

    def columns(self) -> list[Column | MapFamily]:
        """Every column and map family of its row type, in field order."""
        return [*columns_of(self.row_type).values(), *map_families_of(self.row_type).values()]


def col(family: str, qualifier: str, codec: Codec[Any], meaning: str, writer: str) -> Any:
    """A dataclass field bound to a column; its default is None ("not set")."""
    return field(default=None, metadata={"column": Column(family, qualifier, codec, meaning, writer)})


def mapcol(family: str, meaning: str, writer: str, key: str = "url", prefix: str = "") -> Any:
    """A dataclass field bound to a whole map family (qualifier = key), or its qualifiers starting with `prefix`."""
    return field(default=None, metadata={"map": MapFamily(family, meaning, writer, key, prefix)})


def columns_of(row_type: type[Row]) -> dict[str, Column]:
    """Field name -> Column for every single-column field of a row type."""
    return {f.name: f.metadata["column"] for f in dataclasses.fields(row_type) if "column" in f.metadata}


def map_families_of(row_type: type[Row]) -> dict[str, MapFamily]:
    """Field name -> MapFamily for the map fields of a row type."""
    return {f.name: f.metadata["map"] for f in dataclasses.fields(row_type) if "map" in f.metadata}


class NotRead:
    """The value of a field a decode was not asked for and found no cell of (see `decode`): a value, not an
    error, so the row stays an ordinary dataclass (`replace`, `fields`, `==` and repr work on it).

    What it refuses is a truth test, as `pandas.NA` does: `if row.x:` or
    `row.x or default` on a field the job did not read raises
    FieldNotReadError naming it, where None would quietly read as "not set".
    One per row type and field; `encode` and `fields_set` skip it.
    """

    __slots__ = ("row_type", "name")

    def __init__(self, row_type: type, name: str) -> None:
        self.row_type, self.name = row_type, name

    def error(self) -> FieldNotReadError:
        """The error that names the field and what to do."""
        return FieldNotReadError(
            f"{self.row_type.__name__}.{self.name} was not read: add {self.name!r} to the fields the job reads")

    def __bool__(self) -> bool:
        raise self.error()

    def __repr__(self) -> str:
        return f"<{self.row_type.__name__}.{self.name} not read>"

    def __copy__(self) -> NotRead:
        return self

    def __deepcopy__(self, memo: object) -> NotRead:
        return self

    def __reduce__(self) -> tuple[Callable[[type[Row], str], NotRead], tuple[type, str]]:
        return _not_read, (self.row_type, self.name)


def _not_read(row_type: type[Row], name: str) -> NotRead:
    """The one NotRead of a row type's field (what a pickled one comes back as)."""
    return _layout(row_type).not_read[name]


def was_read(value: T) -> T:
    """`value` itself, or FieldNotReadError when it is a field's NotRead: for code that compares a field
    (`row.x == y` would quietly be false) instead of testing its truth."""
    if value.__class__ is NotRead:
        raise value.error()  # type: ignore[attr-defined]
    return value


def unread(row: Row) -> frozenset[str]:
    """The fields of `row` that its decode did not read (empty for a row made by its constructor)."""
    layout = _layout(type(row))
    return frozenset(name for name, value in zip(layout.names, layout.state(row), strict=True)
                     if value.__class__ is NotRead)


class _Layout:
    """What encode and decode need of one row type, worked out once, the first time the type is met.

    Why: an inventory spent most of its codec time on per-row work that
    does not depend on the row: column names encoded again, a codec looked
    up per field, every field visited with getattr (measured:
    benchmarks/results/2026-11-30-codec.md). So the column names, codecs and the row's slots are laid
    out here once, and five small functions are compiled for the type (as
    `dataclasses` compiles `__init__`): `fill` sets every slot of a new row
    from a list, `encode` makes the cells of the fields set, `held` gives the
    fields set (None and NotRead left out), `state` every field's value,
    `copy` a new row holding the same.
    """

    def __init__(self, row_type: type[Row]) -> None:
        names = [f.name for f in dataclasses.fields(row_type)]
        self.row_type = row_type
        self.names = names
        self.identity = names[0]
        self.fields = frozenset(names[1:])
        index = {name: number for number, name in enumerate(names)}
        self.columns = columns_of(row_type)
        self.maps = map_families_of(row_type)
        self.by_name = {column.name.encode(): (name, column) for name, column in self.columns.items()}
        self.encoders = {name: (column.name.encode(), column.codec.encode)
                         for name, column in self.columns.items()}
        self.map_prefixes = {name: f"{family.family}:{family.prefix}".encode()
                             for name, family in self.maps.items()}
        self.decoders = {raw_name: (index[name], column.codec.decode, column)
                         for raw_name, (name, column) in self.by_name.items()}
        self.map_fields = {family.family.encode(): index[name] for name, family in self.maps.items()
                           if not family.prefix}
        # Maps that share a family with columns: family -> (qualifier prefix, field's slot).
        self.prefix_maps: dict[bytes, list[tuple[bytes, int]]] = {}
        for name, family in self.maps.items():
            if family.prefix:
                self.prefix_maps.setdefault(family.family.encode(), []).append((family.prefix.encode(), index[name]))
        self.not_read = {name: NotRead(row_type, name) for name in names[1:]}
        self.blank: list[Any] = [None] * len(names)
        self.index = index
        self._asked: dict[tuple[str, ...], list[Any]] = {}
        self.fill, self.encode, self.held, self.state, self.copy = _compiled(self)

    def asked(self, fields: Iterable[str]) -> list[Any]:
        """The slots of a row decoded for these fields before its cells: None for a field asked for, its
        NotRead for any other (memoised; KeyError for an unknown field)."""
        key = tuple(fields)
        asked = self._asked.get(key)
        if asked is None:
            unknown = [name for name in key if name not in self.fields and name != self.identity]
            if unknown:
                raise KeyError(f"{self.row_type.__name__} has no field {unknown[0]!r}")
            wanted = set(key)
            asked = self._asked[key] = [None] + [None if name in wanted else self.not_read[name]
                                                 for name in self.names[1:]]
        return asked


def _compiled(layout: _Layout) -> tuple[Callable[..., Any], ...]:
    """`fill(row, values)`, `encode(row)`, `held(row)`, `state(row)` (a list) and `copy(row)` for one row
    type (see `_Layout`).

    Straight-line code, one statement per field: a row type has some 90
    fields and a row sets a dozen, so a loop visiting each field by name
    (getattr) cost about twice the whole encode of a row.
    """
    names = layout.names
    scope: dict[str, Any] = {"NotRead": NotRead}
    fill = ["def fill(row, values):", "    " + ", ".join(f"row.{name}" for name in names) + " = values"]
    encode = ["def encode(row):", "    cells = {}"]
    held = ["def held(row):", "    found = {}"]
    for number, name in enumerate(names):
        test = f"    if (v := row.{name}) is not None and v.__class__ is not NotRead:"
        held += [test, f"        found[{name!r}] = v"]
        if name in layout.encoders:
            scope[f"c{number}"], scope[f"e{number}"] = layout.encoders[name]
            encode += [test, f"        cells[c{number}] = e{number}(v)"]
        elif name in layout.map_prefixes:
            scope[f"p{number}"] = layout.map_prefixes[name]
            encode += [test, "        for q, t in v.items():",
                       f"            cells[p{number} + q.encode()] = t.encode()"]
    encode.append("    return cells")
    held.append("    return found")
    state = ["def state(row):", "    return [" + ", ".join(f"row.{name}" for name in names) + "]"]
    copy = ["def copy(row):", "    new = object.__new__(row.__class__)",
            *(f"    new.{name} = row.{name}" for name in names), "    return new"]
    if not all(name.isidentifier() for name in names):
        raise TypeError(f"{layout.row_type.__name__}: a field name is no identifier")
    exec("\n".join([*fill, *encode, *held, *state, *copy]), scope)  # noqa: S102 - dataclass field names only
    return scope["fill"], scope["encode"], scope["held"], scope["state"], scope["copy"]


class Row:
    """The base of the row types: ordinary dataclasses, `@dataclass(slots=True, repr=False)`, whose first field
    is the row's identity (URL, origin or key) and whose other fields are bound to columns by `col` and
    `mapcol`, each None by default ("not set"). Not frozen: a frozen `__init__` sets each of some 90 fields
    through `object.__setattr__` (about 9 µs a `WebPage`, against 1.3 µs), and rows are made by the million.
    No code assigns to a row's field: `dataclasses.replace` or `with_fields` make a new one.
    """

    __slots__ = ()
    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]

    def __repr__(self) -> str:
        """The identity and the fields that hold a value (a row has some 90 fields, most of them None)."""
        shown = ", ".join(f"{name}={value!r}" for name, value in _layout(type(self)).held(self).items())
        return f"{type(self).__name__}({shown})"


_LAYOUTS: dict[type, _Layout] = {}


def _layout(row_type: type[Row]) -> _Layout:
    """The layout of a row type, worked out the first time it is asked for."""
    try:
        return _LAYOUTS[row_type]
    except KeyError:
        layout = _LAYOUTS[row_type] = _Layout(row_type)
        return layout


def column_names(row_type: type[Row], fields: Iterable[str]) -> list[bytes]:
    """The HBase column names (`f:st`, or `il` for a map family) for these fields, each once.

    Jobs pass the fields they read, so a scan fetches only those columns. A
    map field asks for its whole family (`n` for `HostRow.count_cells`); the
    family's single columns then go unnamed, as the family brings them (and
    HBase, given a family and then one of its columns, narrows to the column).
    Raises KeyError naming an unknown field.
    """
    names: list[bytes] = []
    families: set[bytes] = set()
    layout = _layout(row_type)
    for name in fields:
        if name in layout.columns:
            names.append(layout.columns[name].name.encode())
        elif name in layout.maps:
            families.add(layout.maps[name].family.encode())
            names.append(layout.maps[name].family.encode())
        else:
            raise KeyError(f"{row_type.__name__} has no field {name!r}")
    if families:
        names = [name for name in names if name in families or name.partition(b":")[0] not in families]
    return list(dict.fromkeys(names))


def equals_filter(row_type: type[Row], field_name: str, value: Any) -> str:
    """An HBase filter string: rows whose column for `field_name` holds `value`.

    Rows without the column are left out (filterIfMissing). Server side: the
    rows that fail it never cross the wire.
    """
    return compare_filter_of(row_type, field_name, "=", value)


def compare_filter_of(row_type: type[Row], field_name: str, op: str, value: Any) -> str:
    """An HBase filter string: rows whose column for `field_name` compares `op` (`>=`, `<`...) to `value`.

    Rows without the column are left out. Values compare as bytes, which is
    why times are fixed-width text.
    """
    column = _layout(row_type).columns[field_name]
    raw = column.codec.encode(value).decode("utf-8").replace("'", "''")
    return (f"SingleColumnValueFilter('{column.family}', '{column.qualifier}', {op}, "
            f"'binary:{raw}', true, true)")


def overlaid(row: RowT, update: RowT) -> RowT:
    """`row` as it reads once `update` is put on it: every field `update` sets replaces the row's; the
    row keeps its identity (the put goes to its key, whatever URL `update` was made with).

    For a job that writes a row and goes on working with it (updatedb counts
    the rows it merges) without reading it again. A field neither read into
    `row` nor set by `update` is still NotRead. No I/O.
    """
    return with_fields(row, fields_set(update))


def with_fields(row: RowT, sets: Mapping[str, Any]) -> RowT:
    """`row` with the fields of `sets` (field -> value, as `fields_set` gives) put on it: `overlaid` for a
    caller that puts one update on many rows (a row has some 90 fields; an update sets a dozen). KeyError for
    an unknown field. Cost: one compiled copy of the slots, no `__init__` (`dataclasses.replace` visits
    every field by name: ten times as long)."""
    layout = _layout(type(row))
    result = layout.copy(row)
    fields = layout.fields
    for name, value in sets.items():
        if name not in fields:
            raise KeyError(f"{type(row).__name__} has no field {name!r}")
        setattr(result, name, value)
    return result


def fields_held(row: Row) -> int:
    """How many fields of `row` hold a value (neither None nor NotRead), its identity included."""
    return len(_layout(type(row)).held(row))


def fields_set(update: Row) -> dict[str, Any]:
    """The fields `update` sets (neither None nor NotRead), but its identity: what `overlaid` puts on a row."""
    layout = _layout(type(update))
    found = layout.held(update)
    found.pop(layout.identity, None)
    return found


def encode(row: Row) -> dict[bytes, bytes]:
    """Cells for every field that is set (neither None nor NotRead); costs no round trip.

    Cost: a test per field (compiled, see `_Layout`), plus the codec of
    each field set.
    """
    return _layout(type(row)).encode(row)  # type: ignore[no-any-return]


def map_column(row_type: type[Row], field_name: str, key: str = "") -> bytes:
    """The column of one key of a map field (`il:<source URL>`); with no key, the prefix every one of its
    columns starts with (`il:`). KeyError for a field that is no map."""
    return _layout(row_type).map_prefixes[field_name] + key.encode("utf-8")


def field_encoder(row_type: type[Row], field_name: str) -> tuple[bytes, Callable[[Any], bytes]]:
    """The column name and value encoder of one single-column field: `encode` of a row holding just that
    field, without making the row (for a job writing that one cell on row after row). KeyError when unknown."""
    return _layout(row_type).encoders[field_name]


def decode(row_type: type[RowT], identity: str, cells: Mapping[bytes, bytes],
           fields: Iterable[str] | None = None) -> RowT:
    """A row from its cells; `identity` is the URL (or origin) the key stands for.

    `fields`: the fields the caller asked the store for (as given to
    `column_names`). Then a field neither asked for nor present in `cells`
    holds its `NotRead` (whose truth test raises FieldNotReadError), not
    None. Without `fields`, every absent field is None.

    Raises CellDecodeError naming the row and the column for a value that is
    not in its column's format. Unknown columns are ignored (a newer writer).
    Cost: a dict lookup and the codec per cell, then one compiled `fill` of
    the row's slots; not the dataclass's `__init__`, which binds every field
    by name (about 0.6 µs more a `WebPage`).
    """
    layout = _LAYOUTS.get(row_type) or _layout(row_type)
    values = (layout.blank if fields is None else layout.asked(fields)).copy()
    values[0] = identity
    decoders = layout.decoders
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
            for prefix, number in layout.prefix_maps[family]:
                if qualifier.startswith(prefix):
                    map_field, qualifier = number, qualifier[len(prefix):]
                    break
        if map_field is not None:
            found = values[map_field]
            if found is None or found.__class__ is NotRead:  # the map's first cell
                found = values[map_field] = {}
            try:
                found[qualifier.decode()] = raw_value.decode()
            except UnicodeDecodeError:
                raise CellDecodeError(
                    f"row {identity!r}, column {raw_name.decode('utf-8', 'replace')}: not UTF-8 text"
                ) from None
    row: RowT = object.__new__(row_type)  # the decoder's own constructor: fill sets every slot
    layout.fill(row, values)
    return row


def readable_cells(row_type: type[Row], cells: Mapping[bytes, bytes]) -> dict[str, Any]:
    """`family:qualifier` -> a JSON-ready value, for `readdb --json`.

    Text stays text, numbers become numbers, flags booleans; content becomes
    its decompressed length (bytes are not for terminals).
    """
    out: dict[str, Any] = {}
    by_name = _layout(row_type).by_name
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
