"""Text that is safe to print on a terminal: control characters escaped, length capped.

Values that came from the network or from a file (a server's Content-Type, a
URL, a seed line, an HBase error) may hold terminal escapes: `ESC ] 0 ; ...
BEL` retitles a terminal, `ESC [ 2 J` clears it, a C1 `CSI` does the same on
some terminals, and bidi overrides reorder what is shown. Whatever the CLI
prints for a person goes through `printable`; JSON for scripts goes through
`printable_json`, which uses JSON's own `\\uXXXX` escapes.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

#: C0 controls but tab (and newline, kept on request), DEL, C1 controls, line/paragraph
#: separators and bidi controls.
_UNSAFE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_UNSAFE_KEEP_NEWLINES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
#: What JSON leaves raw with ensure_ascii=False and a terminal may act on.
_UNSAFE_IN_JSON = re.compile("[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, limit: int | None = None, keep_newlines: bool = False) -> str:
    """`text` with control characters shown as `\\xNN` (`\\uNNNN`), cut at `limit` characters.

    A cut line ends with `... (N more characters)`, so a huge bad line never
    floods the terminal. Tabs are kept; newlines only with `keep_newlines`.
    """
    shown = text if limit is None or len(text) <= limit else text[:limit]
    if not shown.isprintable():  # every character the patterns escape is unprintable: most text skips them
        shown = (_UNSAFE_KEEP_NEWLINES if keep_newlines else _UNSAFE).sub(_escape, shown)
    if limit is not None and len(text) > limit:
        shown += f"... ({len(text) - limit} more characters)"
    return shown


def printable_json(value: Any, **options: Any) -> str:
    """`json.dumps(value, ensure_ascii=False)` with the characters JSON leaves raw escaped; always valid JSON.

    `options` go to `json.dumps` (`sort_keys`, `separators`).
    """
    text = json_text(value, ensure_ascii=False, **options)
    return text if text.isprintable() else _UNSAFE_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def json_text(value: Any, **options: Any) -> str:
    """`json.dumps(value, **options)` that is always valid JSON: a NaN or an infinity is written as `null`.

    The policy for every JSON the CLI writes: numbers read from HBase are finite
    already (the codec refuses others as unreadable cells), so `null`, "not
    known", is what a non-finite number computed from them can honestly be.
    Cost: one `json.dumps`; a second, after a walk of `value`, only when a
    non-finite number is in it.
    """
    try:
        return json.dumps(value, allow_nan=False, **options)
    except ValueError:
        return json.dumps(_finite(value), allow_nan=False, **options)


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value

