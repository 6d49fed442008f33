"""A local worker process (`cli.worker`) runs the SplitTask its parent pickled on its stdin.

No HBase: the tasks' job is a function of this module, which the worker
imports by name as it unpickles the task (as it imports a job's phase
function). The worker gets the settings as the parent resolved them,
credentials included, with nothing of them in its command line; its
progress, counts and summary line reach the parent; an error is one line
naming the worker, with the worker's own error line.
"""

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from sitemapcrawl.batch.calls import SplitTask, Work
from sitemapcrawl.batch.workers import Pool
from sitemapcrawl.config import Settings
from sitemapcrawl.errors import LeaseHeldError
from sitemapcrawl.jobs.parse import ParseCounts

SECRET = ("Authorization: Bearer s3cret",)
SETTINGS = Settings(hbase="127.0.0.1:1", table_prefix="t_", user_agent="test/1.0", headers=SECRET)
#: Where this module is importable under its own name, for the worker that unpickles its job.
ROOT = Path(__file__).resolve().parents[len(__name__.split(".")) - 1]


def count_rows(work: Work, rows: int, progress: Any) -> ParseCounts:
    """A job: says its progress, then proves it got the settings the parent resolved (and the time)."""
    progress("parse", rows, rows, 0)
    if work.settings.headers != SECRET or work.clock().tzinfo is None:
        raise AssertionError("not the parent's settings")
    if rows == 0:
        raise LeaseHeldError("batch b1: parse.1/2 is held by worker 9 on elsewhere")
    with open(f"/proc/{os.getpid()}/cmdline", "rb") as cmdline:
        if b"s3cret" in cmdline.read():
            raise AssertionError("a credential in the command line")
    return ParseCounts(batch_id="b1", rows=rows)


def test_workers_run_the_pickled_call_and_a_failed_one_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), str(Path(__file__).resolve().parents[2])]))
    heard: list[tuple[str, int, int | None, int]] = []
    lines: list[tuple[str, str]] = []
    pool = Pool([sys.executable, "-m", "sitemapcrawl.cli.worker"], {"verbose": 0, "quiet": False},
                on_stage=lambda *update: heard.append(update), on_line=lambda split, line: lines.append((split, line)))
    tasks = [SplitTask("parse", f"{k}/3", count_rows, SETTINGS, rows) for k, rows in enumerate((3, 4, 0))]
    results = pool.run("parse", "b1", tasks)
    assert results.merged(ParseCounts).rows == 7
    [failed] = results.failed
    assert failed.startswith("parse worker 2/3 (pid ") and failed.endswith(
        "failed with exit code 1: sitemapcrawl: error: batch b1: parse.1/2 is held by worker 9 on elsewhere")
    assert sorted(lines)[:2] == [("0/3", "parse: " + ParseCounts(batch_id="b1", rows=3).summary()),
                                 ("1/3", "parse: " + ParseCounts(batch_id="b1", rows=4).summary())]
    assert heard and heard[-1][0] == "parse x3"
