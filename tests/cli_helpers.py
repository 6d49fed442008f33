"""The one way tests run the command line against their own tables.

`cli(settings, *args)` runs `sitemapcrawl` in this process through typer's
`CliRunner` (stdout and stderr apart); `cli_command(settings, *args)` is the
argument list for the same command in a subprocess. Both point the command
at `settings.hbase` and `settings.table_prefix`.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping

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
