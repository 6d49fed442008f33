"""Rows and cells: how a row dataclass is bound to HBase columns, and `encode` / `decode`.

A row type's fields are bound to columns with `col` and `mapcol` (the row
model, `webpage`, declares them); `install` works out once per row type what
encode and decode need. Jobs build partial rows (only the fields they set)
and `encode` turns them into cells; `decode` turns cells back into a row,
raising `CellDecodeError` naming the row and the column for a bad value.
Given the fields a job asked for, `decode` makes a row on which any other
field raises `FieldNotReadError` instead of reading as None.
Cost: both are on every crawl's hot path: a dict lookup and a codec call
per cell, from tables computed once at import.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar, Protocol, TypeVar

from sitemapcrawl.errors import CellDecodeError, FieldNotReadError
from sitemapcrawl.model.codec import Codec, format_time


class Row(Protocol):
    """A row type as the codec sees it: a dataclass whose first field is the row's identity (URL, origin or
    key) and whose other fields are bound to columns by `col` and `mapcol`."""

    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]


RowT = TypeVar("RowT", bound=Row)


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


class _Layout:
    """What encode and decode need of one row type, worked out once at import.

    Why: the profile of a 200,000-URL inventory spent about 120 s in the
    codec, most of it per-row work that does not depend on the row: column
    names encoded again, a codec looked up per field, every field visited
    with getattr, and the frozen dataclass's `__init__` (one
    `object.__setattr__` per field, about 5 µs for `WebPage`).
    """

    def __init__(self, row_type: type[Row]) -> None:
        names = [f.name for f in dataclasses.fields(row_type)]
        self.row_type = row_type
        self.identity = names[0]
        self.fields = frozenset(names[1:])
        self.columns = columns_of(row_type)
        self.maps = map_families_of(row_type)
        self.by_name = {column.name.encode(): (name, column) for name, column in self.columns.items()}
        self.encoders = {name: (column.name.encode(), column.codec.encode)
                         for name, column in self.columns.items()}
        self.map_prefixes = {name: f"{family.family}:{family.prefix}".encode()
                             for name, family in self.maps.items()}
        self.decoders = {raw_name: (name, column.codec.decode, column)
                         for raw_name, (name, column) in self.by_name.items()}
        self.map_fields = {family.family.encode(): name for name, family in self.maps.items()
                           if not family.prefix}
        # Maps that share a family with columns: family -> (qualifier prefix, field).
        self.prefix_maps: dict[bytes, list[tuple[bytes, str]]] = {}
        for name, family in self.maps.items():
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


def _row_repr(row: Row) -> str:
    """The identity and the fields that hold a value."""
    shown = ", ".join(f"{name}={value!r}" for name, value in row.__dict__.items() if value is not None)
    return f"{type(row).__name__}({shown})"


_LAYOUTS: dict[type, _Layout] = {}


def install(row_types: Iterable[type[Row]]) -> None:
    """Work out the layout of each row type once, and give it the fast `__init__` and the short repr.

    The row model calls this once, at import, for its six row types; `encode`,
    `decode` and the rest take only row types installed here.
    """
    for row_type in row_types:
        layout = _LAYOUTS[row_type] = _Layout(row_type)
        _LAYOUTS[layout.partial_type] = layout
        # Set after the dataclass is made, so mypy still checks every WebPage(...) against the fields.
        row_type.__init__ = _fast_init(layout)  # type: ignore[method-assign]
        row_type.__repr__ = _row_repr  # type: ignore[assignment, method-assign]


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
    layout = _LAYOUTS[row_type]
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
    column = _LAYOUTS[row_type].columns[field_name]
    raw = column.codec.encode(value).decode("utf-8").replace("'", "''")
    return (f"SingleColumnValueFilter('{column.family}', '{column.qualifier}', =, "
            f"'binary:{raw}', true, true)")


def compare_filter_of(row_type: type[Row], field_name: str, op: str, value: Any) -> str:
    """An HBase filter string: rows whose column for `field_name` compares `op` (`>=`, `<`...) to `value`.

    Rows without the column are left out. Values compare as bytes, which is
    why times are fixed-width text.
    """
    column = _LAYOUTS[row_type].columns[field_name]
    raw = column.codec.encode(value).decode("utf-8").replace("'", "''")
    return (f"SingleColumnValueFilter('{column.family}', '{column.qualifier}', {op}, "
            f"'binary:{raw}', true, true)")


def overlaid(row: RowT, update: RowT) -> RowT:
    """`row` as it reads once `update` is put on it: every field `update` sets replaces the row's; the
    row keeps its identity (the put goes to its key, whatever URL `update` was made with).

    For a job that writes a row and goes on working with it (updatedb counts
    the rows it merges) without reading it again. A field neither read into
    `row` nor set by `update` still raises FieldNotReadError. No I/O.
    """
    return with_fields(row, fields_set(update))


def with_fields(row: RowT, sets: Mapping[str, Any]) -> RowT:
    """`row` with the fields of `sets` (field -> value, as `fields_set` gives) put on it: `overlaid` for a
    caller that puts one update on many rows (a row has some 80 fields; an update sets a dozen)."""
    result = object.__new__(type(row))
    values = result.__dict__
    values.update(row.__dict__)
    values.update(sets)
    return result


def fields_held(row: Row) -> int:
    """How many fields of `row` hold a value (not None), its identity included. Cost: one pass in C."""
    values = list(row.__dict__.values())
    return len(values) - values.count(None)


def fields_set(update: Row) -> dict[str, Any]:
    """The fields `update` sets (not None), but its identity: what `overlaid` puts on a row."""
    identity = _LAYOUTS[type(update)].identity
    return {name: value for name, value in update.__dict__.items() if value is not None and name != identity}


def encode(row: Row) -> dict[bytes, bytes]:
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


def map_column(row_type: type[Row], field_name: str, key: str = "") -> bytes:
    """The column of one key of a map field (`il:<source URL>`); with no key, the prefix every one of its
    columns starts with (`il:`). KeyError for a field that is no map."""
    return _LAYOUTS[row_type].map_prefixes[field_name] + key.encode("utf-8")


def field_encoder(row_type: type[Row], field_name: str) -> tuple[bytes, Callable[[Any], bytes]]:
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


def readable_cells(row_type: type[Row], cells: Mapping[bytes, bytes]) -> dict[str, Any]:
    """`family:qualifier` -> a JSON-ready value, for `readdb --json`.

    Text stays text, numbers become numbers, flags booleans; content becomes
    its decompressed length (bytes are not for terminals).
    """
    out: dict[str, Any] = {}
    by_name = _LAYOUTS[row_type].by_name
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
