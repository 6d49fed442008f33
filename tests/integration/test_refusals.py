"""Bad values the checks let through before issue 47 (item 7 and 9): one line and exit 2.

Through the command line against the real HBase: `--warc ''` is refused (an
unset `$DIR` must not lose the archive silently); a crawl whose seed file is
missing creates no table; a Dask address that is none is refused at once,
before any connection. The `--split auto` variables (`²`, `٣`, 5,000 digits)
are tests/unit/test_taskindex.py's.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from cli_helpers import cli, cli_command

from sitemapcrawl.config import Settings
from sitemapcrawl.storage.store import Store

AGENT = "Bot/1.0 (+https://example.org/bot)"


def one_error_line(stderr: str) -> str:
    """The single stderr line of a refusal (no traceback, nothing else)."""
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


@pytest.mark.parametrize("command", [["crawl"], ["fetch", "--batch", "b1"], ["detect"]])
def test_an_empty_warc_folder_is_refused(settings: Settings, command: list[str]) -> None:
    done = cli(settings, *command, "--warc", "", user_agent=AGENT)
    assert done.exit_code == 2
    line = one_error_line(done.stderr)
    assert "--warc" in line and "an empty folder name (an unset variable?)" in line


def test_a_crawl_whose_seed_file_is_missing_creates_no_table(settings: Settings, tmp_path: Path) -> None:
    done = cli(settings, "crawl", str(tmp_path / "missing.txt"), user_agent=AGENT)
    assert done.exit_code == 2
    assert one_error_line(done.stderr).startswith("sitemapcrawl: error: cannot read seeds")
    with Store(settings) as store:
        assert store.existing_tables() == []
    no_agent = cli(settings, "crawl")
    assert no_agent.exit_code == 2 and "a user agent is required" in one_error_line(no_agent.stderr)
    with Store(settings) as store:
        assert store.existing_tables() == []


@pytest.mark.parametrize("address", ["foo://127.0.0.1:8786", "tcp://[::1", "inproc://x", "tcp://host:99999",
                                     "tcp://", "tcp://a b:1"])
def test_a_dask_address_that_is_none_is_refused_before_connecting(settings: Settings, address: str) -> None:
    for args in (["crawl", "--dask", address], ["parse", "--batch", "b1", "--dask", address]):
        # Subprocesses with a timeout: a check that connected first would take Dask's 10-20 s, or hang.
        done = subprocess.run(cli_command(settings, "--user-agent", AGENT, *args), capture_output=True,
                              text=True, timeout=60, check=False)
        assert done.returncode == 2
        assert one_error_line(done.stderr).startswith(f"sitemapcrawl: error: --dask {address.strip()!r}")
