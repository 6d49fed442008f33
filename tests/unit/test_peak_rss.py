"""`scripts/peak-rss` reports the command's own peak memory, not its parent's, with its children's.

Tests and benchmarks hold memory ceilings on commands (issue 27's 200 MB);
a child forked straight from a large test worker inherits the worker's
high-water mark, which once failed those ceilings for a 40 MB command.
"""

from __future__ import annotations

import os
import runpy
import subprocess
import sys
from pathlib import Path

PEAK_RSS = Path(__file__).resolve().parents[2] / "scripts" / "peak-rss"
SMALL_CHILD = [sys.executable, "-c", "pass"]
#: How often peak-rss samples a command's process tree (the script's own constant: it runs nothing on load).
SAMPLE_SECONDS = runpy.run_path(str(PEAK_RSS))["SAMPLE_SECONDS"]
#: Samples a test's processes stay at their peak for (one would do on a quiet machine).
HOLD_SAMPLES = 5


def test_a_small_command_from_a_large_parent_reports_its_own_peak(tmp_path: Path) -> None:
    ballast = b"\x01" * (256 * 1024 * 1024)
    report = tmp_path / "peak.kb"
    direct = subprocess.Popen(SMALL_CHILD)
    _pid, _status, usage = os.wait4(direct.pid, 0)
    probed = subprocess.run([sys.executable, str(PEAK_RSS), str(report), *SMALL_CHILD], check=False)
    del ballast
    assert usage.ru_maxrss > 256 * 1024, "this kernel no longer passes the parent's peak to a child"
    assert probed.returncode == 0
    assert int(report.read_text()) < 64 * 1024


def test_the_command_s_exit_status_and_a_missing_command(tmp_path: Path) -> None:
    report = tmp_path / "peak.kb"
    assert subprocess.run([sys.executable, str(PEAK_RSS), str(report), sys.executable, "-c", "raise SystemExit(3)"],
                          check=False).returncode == 3
    missing = subprocess.run([sys.executable, str(PEAK_RSS), str(report), "no-such-command-here"],
                             capture_output=True, text=True, check=False)
    assert missing.returncode == 127
    assert missing.stderr.strip() == "peak-rss: cannot run no-such-command-here: No such file or directory"


def test_a_command_s_children_count_with_it(tmp_path: Path) -> None:
    # The command holds 64 MB while a child it started holds 96 MB: their sum is the command's memory. The
    # child says when it holds its share and keeps it until its stdin closes; both hold theirs for
    # HOLD_SAMPLES of peak-rss's samples.
    child = ("import sys; ballast = b'\\x01' * (96 * 1024 * 1024); print('held', flush=True); "
             "sys.stdin.read()")
    command = [sys.executable, "-c",
               "import subprocess, sys, time\n"
               f"child = subprocess.Popen([sys.executable, '-c', {child!r}], stdin=subprocess.PIPE,"
               " stdout=subprocess.PIPE, text=True)\n"
               "ballast = b'\\x01' * (64 * 1024 * 1024)\n"
               "assert child.stdout.readline() == 'held\\n'\n"
               f"time.sleep({HOLD_SAMPLES} * {SAMPLE_SECONDS})\n"
               "child.communicate('')"]
    report = tmp_path / "peak.kb"
    assert subprocess.run([sys.executable, str(PEAK_RSS), str(report), *command], check=False).returncode == 0
    assert int(report.read_text()) > (64 + 96) * 1024
