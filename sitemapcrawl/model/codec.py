"""The value codec: how each kind of value is written in a cell and read back.

Values are UTF-8 text a person can read in `hbase shell`: numbers as decimal
strings, times as fixed-width UTC `YYYY-MM-DDTHH:MM:SSZ` (they sort and
compare as strings, so server-side filters work on them), flags as `1`;
content is gzip-compressed bytes. Every column of the row model names one
`Codec` from here; the row model (`webpage`) and the cell layout (`cells`)
build on it, and `format_time` (from `sitemaps.times`, where the engine reaches it too) /
`parse_time` are the one spelling of a time.
Cost: a codec call per cell, on every crawl's hot path (times are memoised).
"""

from __future__ import annotations

import enum
import gzip
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

from sitemapcrawl.config import MAX_NUMBER
from sitemapcrawl.sitemaps.times import format_time

TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


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
    return format_time(moment)[:-1] + f".{moment.microsecond // 1000:03d}Z"


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


def enum_codec(kind: type[enum.StrEnum]) -> Codec[Any]:
    """The codec of a text Enum: a member is written as its value."""
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


#: The largest magnitude of a stored number (`config.MAX_NUMBER`, 2**53 < 10**16): a cell with more
#: digits is unreadable, whatever wrote it, so no job multiplies or allocates by a number nobody meant.
_MOST_DIGITS = 16


def _int_decode(raw: bytes) -> int:
    # int() reads ASCII digits from bytes directly (and rejects anything else); the length test first.
    if len(raw) > _MOST_DIGITS + 1:
        raise ValueError(f"more than {_MOST_DIGITS} digits")
    value = int(raw)
    if not -MAX_NUMBER <= value <= MAX_NUMBER:
        raise ValueError(f"beyond +-{MAX_NUMBER}")
    return value


def _float_decode(raw: bytes) -> float:
    value = float(raw)
    if not -MAX_NUMBER <= value <= MAX_NUMBER:  # false for nan too
        raise ValueError(f"not a finite number within +-{MAX_NUMBER}")
    return value


def bounded_int(low: int, high: int) -> Codec[int]:
    """The codec of a whole number in `low..high`: a stored value outside is an unreadable cell."""

    def decode(raw: bytes) -> int:
        value = _int_decode(raw)
        if not low <= value <= high:
            raise ValueError(f"outside {low}..{high}")
        return value

    return Codec(f"decimal integer {low}..{high}", _int_encode, decode)


def bounded_float(low: float, high: float) -> Codec[float]:
    """The codec of a number in [`low`, `high`]: a stored value outside (or NaN) is an unreadable cell."""

    def decode(raw: bytes) -> float:
        value = float(raw)
        if not low <= value <= high:
            raise ValueError(f"outside [{low:g}, {high:g}]")
        return value

    return Codec(f"decimal number in [{low:g}, {high:g}]", _float_encode, decode)


TEXT: Codec[str] = _text_codec()
INT: Codec[int] = Codec("decimal integer", _int_encode, _int_decode)
FLOAT: Codec[float] = Codec("decimal number", _float_encode, _float_decode)
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
