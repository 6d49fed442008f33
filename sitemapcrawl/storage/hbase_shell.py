"""Run a script through the HBase shell, for what Thrift1 cannot do (pre-split, namespaces).

The command comes from the `hbase_shell` setting (`hbase shell -n` on a
cluster node, `scripts/hbase-local shell` here); the script's path is
appended. The shell prints `ERROR: ...` for a refused command: that line
becomes the error.
"""

from __future__ import annotations

import logging
import shlex
import subprocess
import tempfile
from pathlib import Path

from sitemapcrawl.errors import StoreRejectedError, UsageError

log = logging.getLogger(__name__)

#: Longest wait for the shell (a JVM start plus table creation).
SHELL_TIMEOUT_S = 600


def run_script(command: str, script: str) -> str:
    """Run `script` with `command FILE`; return its output; StoreRejectedError with the shell's ERROR line.

    Cost: one JVM start (several seconds) and the script's round trips.
    Raises UsageError when the command cannot be started.
    """
    argv = shlex.split(command)
    if not argv:
        raise UsageError("setting hbase_shell is empty: give the command that runs an HBase shell script")
    with tempfile.TemporaryDirectory(prefix="sitemapcrawl-") as folder:
        path = Path(folder) / "schema.hbase"
        path.write_text(script, encoding="utf-8")
        try:
            done = subprocess.run([*argv, str(path)], capture_output=True, text=True, errors="replace",
                                  timeout=SHELL_TIMEOUT_S, check=False)
        except FileNotFoundError:
            raise UsageError(f"setting hbase_shell: {argv[0]!r} not found (e.g. `hbase shell -n`)") from None
        except subprocess.TimeoutExpired:
            raise StoreRejectedError(f"the HBase shell ({command}) did not finish in {SHELL_TIMEOUT_S}s") from None
    output = done.stdout + done.stderr
    log.debug("HBase shell said: %s", output)
    error = next((line.strip() for line in output.splitlines() if line.strip().startswith("ERROR")), None)
    if error is not None or done.returncode != 0:
        last = error or next((line.strip() for line in reversed(output.splitlines()) if line.strip()), "")
        raise StoreRejectedError(f"the HBase shell ({command}) failed (exit {done.returncode}): {last[:300]}")
    return output
