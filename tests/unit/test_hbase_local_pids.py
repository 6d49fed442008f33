"""`scripts/hbase-local`'s `pid_alive`: what a start and a stop believe about a server's PID file.

The function is taken from the script itself and run by bash, on real
processes: a live one, one that exited and was reaped, and a zombie (killed,
not yet reaped by its parent: `kill -0` still succeeds on it, and a start
right after a `kill -9` of the master used to say "already running").
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "hbase-local"


def pid_alive(run: Path, name: str) -> bool:
    """Run the script's own `pid_alive NAME` with `run` as its PID folder."""
    program = f'source <(sed -n "/^pid_alive()/,/^}}/p" "{SCRIPT}"); run="{run}"; pid_alive {name}'
    return subprocess.run(["bash", "-c", program], check=False).returncode == 0


def test_a_live_process_is_alive_and_a_missing_or_reaped_one_is_not(tmp_path: Path) -> None:
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (tmp_path / "master.pid").write_text(f"{sleeper.pid}\n")
        assert pid_alive(tmp_path, "master")
    finally:
        sleeper.kill()
        sleeper.wait()
    assert not pid_alive(tmp_path, "master")  # exited and reaped
    assert not pid_alive(tmp_path, "thrift")  # no PID file


def test_a_zombie_is_dead(tmp_path: Path) -> None:
    child = os.fork()
    if child == 0:  # pragma: no cover - the child exits at once
        os._exit(0)
    try:
        os.waitid(os.P_PID, child, os.WEXITED | os.WNOWAIT)  # it has exited; not reaped: a zombie
        assert Path(f"/proc/{child}/stat").read_text().rsplit(") ", 1)[1][0] == "Z"
        (tmp_path / "master.pid").write_text(f"{child}\n")
        assert not pid_alive(tmp_path, "master")
    finally:
        os.waitpid(child, 0)
