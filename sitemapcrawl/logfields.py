"""What this process's log lines are about: the command, and the batch and split being worked on.

Whoever knows says it (`note`): the command line its command and the batch
and split its options name, `crawl` the batch of each round as it moves on.
`--log-format json` puts them in every line (`cli.console`), so a log
shipper (Loki, Elasticsearch, CloudWatch) can tell the lines of one batch or
one split from the rest. Held for the process, not per thread: a command
works on one batch at a time, and its threads (writers, readers ahead) log
for it. Imports nothing of ours.

Cost: a dict copy per log line in JSON mode; nothing otherwise.
"""

from __future__ import annotations

import threading

__all__ = ["current", "note"]

_lock = threading.Lock()
_fields: dict[str, str] = {}


def current() -> dict[str, str]:
    """The fields known now (`command`, `batch`, `split`), those unknown left out."""
    with _lock:
        return dict(_fields)


def note(**fields: str | None) -> None:
    """From now on the log lines are about `fields`; a field given as None (or empty) is no longer known."""
    with _lock:
        for name, value in fields.items():
            if value:
                _fields[name] = value
            else:
                _fields.pop(name, None)
