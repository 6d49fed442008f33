"""The one way tests run the command line against their own tables.

`cli(settings, *args)` runs `sitemapcrawl` in this process through typer's
`CliRunner` (stdout and stderr apart); `cli_command(settings, *args)` is the
argument list for the same command in a subprocess; `measured(settings,
*args)` runs that subprocess and measures its own peak memory
(`scripts/peak-rss`). All point the command at `settings.hbase` and
`settings.table_prefix`. `one_error_line(stderr)` checks what a refused
command says: one line, no traceback.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from typer.testing import CliRunner, Result

from sitemapcrawl.cli.app import app
from sitemapcrawl.config import Settings

runner = CliRunner()


def cli(settings: Settings, *args: str, stdin: str | None = None, env: Mapping[str, str] | None = None,
        user_agent: str | None = None) -> Result:
    """`sitemapcrawl --hbase H --table-prefix P [--user-agent A] ARGS`, run in this process."""
    agent = ["--user-agent", user_agent] if user_agent else []
    return runner.invoke(app, ["--hbase", settings.hbase, "--table-prefix", settings.table_prefix, *agent, *args],
                         input=stdin, env=env)


def cli_command(settings: Settings, *args: str) -> list[str]:
    """The argument list of `python -m sitemapcrawl --hbase H --table-prefix P ARGS` for a subprocess."""
    return [sys.executable, "-m", "sitemapcrawl", "--hbase", settings.hbase, "--table-prefix", settings.table_prefix,
            *args]


PEAK_RSS = Path(__file__).resolve().parents[1] / "scripts" / "peak-rss"


@dataclass(frozen=True)
class Measured:
    """A finished CLI subprocess: exit status, output and peak resident memory."""

    code: int
    out: str
    err: str
    peak_mb: float


def measured(settings: Settings, *args: str, stdin: str = "", user_agent: str | None = None,
             timeout: float | None = None) -> Measured:
    """`sitemapcrawl [--user-agent A] ARGS` in a subprocess (at most `timeout` seconds, then
    subprocess.TimeoutExpired); its own peak RSS through `scripts/peak-rss` (not the test's)."""
    agent = ["--user-agent", user_agent] if user_agent else []
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile("r", suffix=".kb") as peak:
        command = [sys.executable, str(PEAK_RSS), peak.name, *cli_command(settings, *agent, *args)]
        proc = subprocess.run(command, input=stdin.encode(), stdout=out, stderr=err, check=False, timeout=timeout)
        out.seek(0)
        err.seek(0)
        return Measured(proc.returncode, out.read().decode(), err.read().decode(), int(peak.read()) / 1024)


def one_error_line(stderr: str, code: int | None = None, expected: int = 2) -> str:
    """The one stderr line of a refusal (no traceback, no other line), after asserting it; with `code`
    (the exit status), also that it is `expected`."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert code is None or code == expected, stderr
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]
