"""`processes.pid_alive`: the one check of whether a process of this machine still runs."""

from __future__ import annotations

import os
import subprocess
import sys

from sitemapcrawl.processes import pid_alive


def test_this_process_and_one_not_ours_to_signal_are_alive() -> None:
    assert pid_alive(os.getpid())
    assert pid_alive(1)  # init: another user's for most of us, and a PermissionError is not "gone"


def test_a_process_that_exited_and_was_reaped_is_gone() -> None:
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True, check=True)
    assert not pid_alive(int(finished.stdout))
