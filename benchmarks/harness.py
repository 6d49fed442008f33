"""The benchmarks' one harness: options, HBase tables, timed processes, memory, floors, loopback webs.

Every benchmark measures a whole process or a step against a floor in the
same run, so the ratios hold on a shared machine. What they all need lives
here once: the `--hbase` option and a check that Thrift answers, unique
table prefixes dropped at the end (also on error), a command timed from
spawn to exit with its own peak RSS and CPU (`os.wait4`), the plain
happybase put floor, target lines, and loopback webs (a static folder in
this process, or the bulk test web in a process of its own).

The top imports only the standard library (children of bench_parse import
this module, and their start-up and memory are measured); happybase and
sitemapcrawl are imported where used.
Cost: nothing at import; each helper says its round trips.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, NamedTuple, TypeVar

if TYPE_CHECKING:
    import happybase

REPO = Path(__file__).resolve().parents[1]
#: Runs a command and reports its own peak RSS (see its docstring for why a process sits in between).
PEAK_RSS = REPO / "scripts" / "peak-rss"
HBASE_LOCAL = REPO / "scripts" / "hbase-local"
AGENT = "sitemapcrawl-bench/1.0"
DEFAULT_HBASE = "127.0.0.1:9090"
#: Seconds between two tries of an HBase call cut by a Thrift restart (other work shares the server).
RETRY_PAUSE = 20

T = TypeVar("T")


# ----------------------------------------------------------------- options --


def bench_parser(doc: str | None) -> argparse.ArgumentParser:
    """An argument parser whose --help shows the benchmark's docstring: first paragraph, then the rest."""
    head, _, rest = (doc or "").strip().partition("\n\n")
    return argparse.ArgumentParser(description=head, epilog=rest or None,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)


def size_list(text: str) -> list[int]:
    """`--sizes 10000,100000` as [10000, 100000] (an argparse type: a bad size is a usage error)."""
    try:
        sizes = [int(part.replace("_", "")) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of whole numbers: {text!r}") from None
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"sizes must be positive: {text!r}")
    return sizes


def add_hbase_option(parser: argparse.ArgumentParser) -> None:
    """`--hbase HOST:PORT`, default $SITEMAPCRAWL_HBASE or the local HBase."""
    parser.add_argument("--hbase", default=os.environ.get("SITEMAPCRAWL_HBASE", DEFAULT_HBASE),
                        help="HBase Thrift HOST:PORT [default: $SITEMAPCRAWL_HBASE or %(default)s]")


# ------------------------------------------------------------------- HBase --


def connect(hbase: str, timeout_ms: int = 600_000) -> happybase.Connection:
    """A plain happybase connection to `hbase` (HOST:PORT). Cost: one TCP connect."""
    import happybase

    host, _, port = hbase.rpartition(":")
    return happybase.Connection(host, int(port), timeout=timeout_ms)


def require_hbase(hbase: str) -> None:
    """Exit 2 with one line when no Thrift server answers at `hbase`. Cost: one round trip."""
    try:
        connection = connect(hbase, timeout_ms=10_000)
        try:
            connection.tables()
        finally:
            connection.close()
    except Exception as exc:  # noqa: BLE001 (any failure means the same: no HBase to measure)
        print(f"{Path(sys.argv[0]).name}: no HBase Thrift server answers at {hbase} ({type(exc).__name__}): "
              "start it with scripts/hbase-local start, or name another with --hbase", file=sys.stderr)
        raise SystemExit(2) from None


def with_retries(what: str, action: Callable[[], T], attempts: int = 6) -> T:
    """`action()`, again after a wire error (another session may restart the shared Thrift server).

    Bounded: `attempts` tries, `RETRY_PAUSE` seconds apart. Only for idempotent
    actions; a timed action times itself inside, so a failed try never counts.
    """
    from thriftpy2.thrift import TException

    for attempt in range(1, attempts + 1):
        try:
            return action()
        except (OSError, TException) as exc:
            if attempt == attempts:
                raise
            print(f"[{what}: {type(exc).__name__}; retry {attempt} in {RETRY_PAUSE} s]", file=sys.stderr, flush=True)
            time.sleep(RETRY_PAUSE)
    raise AssertionError("unreachable")


def table_prefix(bench: str) -> str:
    """A table prefix no other run uses: `bench_<name>_<hex>_`."""
    return f"bench_{bench}_{uuid.uuid4().hex[:8]}_"


def drop_prefix(hbase: str, prefix: str) -> None:
    """Drop every table whose name starts with `prefix` (ours only), retried. Cost: a round trip a table."""

    def drop() -> None:
        connection = connect(hbase)
        try:
            for name in connection.tables():
                if name.decode().startswith(prefix):
                    connection.delete_table(name, disable=True)
        finally:
            connection.close()

    with_retries("drop tables", drop)


@contextmanager
def dropped_at_end(hbase: str, prefix: str) -> Iterator[str]:
    """Yield `prefix`; at the end, also on error or Ctrl-C, drop every table it names."""
    try:
        yield prefix
    finally:
        drop_prefix(hbase, prefix)


def plain_puts(table: happybase.Table, rows: Iterable[tuple[bytes, dict[bytes, bytes]]],
               batch_size: int) -> tuple[int, int]:
    """The put floor: plain happybase batch puts of `rows`; returns (rows, cells).

    `batch_size` is happybase's, counted in cells (a caller that sends N rows
    a call passes N x cells per row). Cost: one round trip a batch.
    """
    count = cells = 0
    with table.batch(batch_size=batch_size) as batch:
        for key, data in rows:
            batch.put(key, data)
            count += 1
            cells += len(data)
    return count, cells


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Cluster:
    """An HBase of its own (scripts/hbase-local in a temporary folder, free ports), never the shared one.

    `regionservers` 0 is the standalone HBase (one JVM), as `scripts/hbase-local start` runs it.
    `start` then `stop` (which wipes it). Cost: starting takes a minute or more and a JVM per server.
    """

    def __init__(self, regionservers: int, name: str) -> None:
        lib = Path(os.environ.get("HBASE_LOCAL_LIB") or REPO / ".hbase-local" / "lib").resolve()
        if not (lib / ".complete").exists():
            sys.exit(f"{name}: no HBase jars (.hbase-local/lib): run scripts/setup first")
        self.name = name
        self.home = Path(tempfile.mkdtemp(prefix=f"{name}-hbase-"))
        self.thrift = free_port()
        self.env = dict(os.environ, HBASE_LOCAL_DIR=str(self.home), HBASE_LOCAL_LIB=str(lib),
                        HBASE_LOCAL_THRIFT_PORT=str(self.thrift), HBASE_LOCAL_ZK_PORT=str(free_port()))
        self.regionservers = regionservers

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.thrift}"

    def local(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        """Run `scripts/hbase-local ARGS` for this cluster."""
        return subprocess.run([str(HBASE_LOCAL), *args], capture_output=True, text=True, env=self.env,
                              timeout=timeout, stdin=subprocess.DEVNULL)

    def start(self) -> None:
        done = self.local("start", *(("--regionservers", str(self.regionservers)) if self.regionservers else ()))
        if done.returncode != 0:
            raise SystemExit(f"{self.name}: the cluster did not start:\n{done.stderr[-3000:]}")

    def stop(self) -> None:
        self.local("stop", "--wipe")
        shutil.rmtree(self.home, ignore_errors=True)

    def pids(self) -> dict[str, int]:
        """Process name (master, rs1, thrift...) -> PID, from the folder's run/*.pid."""
        found = {}
        for path in (self.home / "run").glob("*.pid"):
            text = path.read_text().strip()
            if text.isdigit() and Path(f"/proc/{text}").exists():
                found[path.stem] = int(text)
        return found

    def cpu_seconds(self) -> float:
        """utime + stime of every JVM of the cluster so far (/proc/PID/stat)."""
        return hbase_cpu_seconds(self.home)


_TICK = os.sysconf("SC_CLK_TCK")


def stat_cpu_seconds(stat: Path, children: bool = False) -> float:
    """utime + stime so far of the process or thread whose /proc `stat` file this is (with `children`, also
    those of its waited-for children: cutime + cstime). OSError when it is gone."""
    fields = stat.read_text().rsplit(")", 1)[1].split()  # after the command name, which may hold spaces
    return sum(int(value) for value in fields[11:15 if children else 13]) / _TICK


#: The /proc/stat `cpu` fields that are busy time: user, nice, system, irq, softirq, steal (guest time is
#: inside user and nice already; idle and iowait are not busy).
_BUSY_FIELDS = (0, 1, 2, 5, 6, 7)


def busy_cpu_seconds(proc_stat: str) -> float:
    """CPU seconds the whole machine has been busy since boot, from the text of /proc/stat (its aggregate
    `cpu` line), steal included: the time the host gave our virtual CPUs to someone else."""
    for line in proc_stat.splitlines():
        if line.startswith("cpu "):
            fields = line.split()[1:]
            return sum(int(fields[i]) for i in _BUSY_FIELDS if i < len(fields)) / _TICK
    raise ValueError("no aggregate cpu line in /proc/stat")


def machine_busy_seconds() -> float:
    """`busy_cpu_seconds` of this machine now; two readings around a run, minus what our processes used,
    give the CPU that other work took meanwhile (figure 1's "others' CPU")."""
    return busy_cpu_seconds(Path("/proc/stat").read_text())


def hbase_cpu_seconds(home: Path) -> float:
    """utime + stime so far of every process of the `scripts/hbase-local` HBase whose HBASE_LOCAL_DIR is
    `home` (its run/*.pid files, read in /proc/PID/stat); 0 for a folder without live processes."""
    total = 0.0
    for path in (home / "run").glob("*.pid"):
        try:
            total += stat_cpu_seconds(Path(f"/proc/{path.read_text().strip()}/stat"))
        except OSError:
            continue
    return total


#: What an HBase JVM thread does, by its name (first match; the Thrift JVM's own threads are "thrift").
HBASE_ACTIVITIES = (
    ("compactions", re.compile(r"Compactions")),
    ("flushes", re.compile(r"MemStoreFlusher")),
    ("WAL", re.compile(r"append-pool|^sync\.|AsyncFSWAL|WAL")),
    ("RPC", re.compile(r"RpcServer|RS-EventLoopGroup")),
    ("JIT", re.compile(r"Compiler")),
    ("GC", re.compile(r"GC Thread|G1 |VM Thread")),
)


def _thread_names(pid: int) -> dict[int, str]:
    """Thread id -> Java thread name of a JVM, from `jcmd PID Thread.print` (its `nid=0x...`); empty when jcmd
    is not there or fails (the kernel's 15-character names are used then)."""
    jcmd = shutil.which("jcmd") or str(Path(os.path.realpath(shutil.which("java") or "java")).with_name("jcmd"))
    try:
        text = subprocess.run([jcmd, str(pid), "Thread.print"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    return {int(nid, 16): name for name, nid in re.findall(r'^"([^"]*)".*? nid=0x([0-9a-f]+) ', text, re.M)}


def hbase_cpu_by_thread(home: Path) -> dict[tuple[str, int], tuple[str, float]]:
    """(process, thread id) -> (thread name, utime + stime so far) of every live thread of the HBase JVMs in
    `home` (run/*.pid); the process's total under (process, 0), named "", so a difference of two of these
    counts the CPU of threads that ended between them too (`hbase_cpu_by_activity`)."""
    found: dict[tuple[str, int], tuple[str, float]] = {}
    for path in (home / "run").glob("*.pid"):
        pid = int(path.read_text().strip())
        names = _thread_names(pid)
        try:
            tasks = list(Path(f"/proc/{pid}/task").iterdir())
            found[path.stem, 0] = ("", stat_cpu_seconds(Path(f"/proc/{pid}/stat")))
        except OSError:
            continue
        for task in tasks:
            try:
                used = stat_cpu_seconds(task / "stat")
                name = names.get(int(task.name)) or (task / "comm").read_text().strip()
            except OSError:
                continue
            found[path.stem, int(task.name)] = (name, used)
    return found


def hbase_cpu_by_activity(before: dict[tuple[str, int], tuple[str, float]],
                          after: dict[tuple[str, int], tuple[str, float]]) -> dict[str, float]:
    """CPU seconds of the HBase JVMs between two `hbase_cpu_by_thread` snapshots, by `HBASE_ACTIVITIES`; the
    Thrift JVM's other threads are "thrift", the rest (threads that ended between, others) "other"."""
    spent = dict.fromkeys([*(name for name, _ in HBASE_ACTIVITIES), "thrift", "other"], 0.0)
    for (process, tid), (name, seconds) in after.items():
        if tid == 0:
            continue
        used = seconds - before.get((process, tid), (name, 0.0))[1]
        activity = next((label for label, pattern in HBASE_ACTIVITIES if pattern.search(name)),
                        "thrift" if process == "thrift" else "other")
        spent[activity] += used
    total = sum(after[key][1] - before.get(key, ("", 0.0))[1] for key in after if key[1] == 0)
    spent["other"] += total - sum(spent.values())
    return spent


# --------------------------------------------------------------- processes --


class Run(NamedTuple):
    """One finished process: seconds spawn to exit, peak RSS (MB), CPU seconds, its output."""

    seconds: float
    peak_mb: float
    cpu_seconds: float
    """User + system CPU of the process and the children it waited for (wait4's rusage)."""
    stdout: str
    stderr: str

    def last_line(self, width: int = 200) -> str:
        """The last non-blank line of the output (a command's summary), cut to `width` characters."""
        said = [line for line in (self.stdout + self.stderr).splitlines() if line.strip()]
        return said[-1][:width] if said else ""


def run_timed(command: list[str], *, env: Mapping[str, str] | None = None, cwd: Path | str | None = None,
              stdout_path: Path | None = None, timeout: float | None = None) -> Run:
    """Run `command` and time it from spawn to exit; raise RuntimeError unless it exits 0 in time.

    The CPU is the process's own and its waited-for children's (`os.wait4`),
    so other children of this process never count; the peak memory is the
    process's and its descendants' together, measured by `scripts/peak-rss`
    (a child of this process would otherwise inherit this process's
    high-water mark). Its stdout goes
    to `stdout_path` when given (then `Run.stdout` is empty).
    """
    killed = threading.Event()
    with _Spool() as kept, _Spool() as err, (open(stdout_path, "wb") if stdout_path else nullcontext(kept)) as out, \
            tempfile.NamedTemporaryFile("r", suffix=".kb") as peak:
        started = time.perf_counter()
        child = subprocess.Popen([sys.executable, str(PEAK_RSS), peak.name, *command], stdout=out, stderr=err,
                                 stdin=subprocess.DEVNULL, env=env, cwd=cwd)
        timer = threading.Timer(timeout, lambda: (killed.set(), child.kill())) if timeout else None
        if timer:
            timer.start()
        _pid, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - started
        if timer:
            timer.cancel()
        child.returncode = os.waitstatus_to_exitcode(status)
        run = Run(seconds, _peak_mb(peak.read()), usage.ru_utime + usage.ru_stime, kept.text(), err.text())
    if killed.is_set():
        raise RuntimeError(f"timed out after {timeout:.0f} s: {' '.join(command)}")
    if child.returncode != 0:
        raise RuntimeError(f"exit {child.returncode}: {' '.join(command)}\n{run.stderr[-2000:]}")
    return run


def run_cli(hbase: str, prefix: str, args: list[str], timeout: float) -> Run:
    """`python -m sitemapcrawl ARGS` on HBase `hbase`'s tables of `prefix`, timed spawn to exit (`run_timed`);
    raise RuntimeError on failure."""
    return run_timed([sys.executable, "-m", "sitemapcrawl", "--hbase", hbase, "--table-prefix", prefix,
                      "--user-agent", AGENT, *args], timeout=timeout)


def _peak_mb(report: str) -> float:
    """The KB figure `scripts/peak-rss` wrote, in MB (0 when it was killed before writing)."""
    return int(report) / 1024 if report.strip() else 0.0


class _Spool:
    """A temporary file that holds a child's output (a pipe would fill up while we wait)."""

    def __enter__(self) -> _Spool:
        self.file = tempfile.TemporaryFile()
        return self

    def fileno(self) -> int:
        return self.file.fileno()

    def text(self) -> str:
        self.file.seek(0)
        return self.file.read().decode(errors="replace")

    def __exit__(self, *_exc: object) -> None:
        self.file.close()


def run_json(command: list[str], *, env: Mapping[str, str] | None = None,
             cwd: Path | str | None = None) -> dict[str, float]:
    """Run a measuring child and return the JSON object of its last stdout line (its own figures)."""
    run = run_timed(command, env=env, cwd=cwd)
    return json.loads(run.stdout.strip().splitlines()[-1])


def python_child(code: str, *args: str, env: Mapping[str, str] | None = None) -> dict[str, float]:
    """`python -c CHILD_PRELUDE + code args...` in a fresh process; its last stdout line as JSON."""
    return run_json([sys.executable, "-c", CHILD_PRELUDE + code, *args], env=env)


#: Prepended to a `python -c` child: what it needs to report its figures, nothing it would not import anyway.
CHILD_PRELUDE = r"""
import json, sys, time
def peak_kb():
    # VmHWM, as high_water_mb reads it: ru_maxrss would start at the parent's peak (see scripts/peak-rss)
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
def report(**figures):
    print(json.dumps(figures))
"""


def source_env(source: Path = REPO, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment that makes a child import sitemapcrawl from `source` (a checkout or an export)."""
    return dict(base if base is not None else os.environ, PYTHONPATH=str(source))


def baseline_tree(ref: str, into: Path) -> Path:
    """The package as it was at `ref`, extracted into `into` (`git archive`): a tree `source_env` can run."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", ref, "sitemapcrawl"], capture_output=True,
                             check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def high_water_mb() -> float:
    """This process's peak resident memory in MB (VmHWM: unlike ru_maxrss, not inherited across fork and exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def best_of(commands: Mapping[str, tuple[list[str], Path | None]], repeat: int,
            **options: object) -> dict[str, float]:
    """Best seconds of `repeat` runs of each command, run in turn so a floor and what is compared with it
    see the same load. `options` go to `run_timed`."""
    best = dict.fromkeys(commands, float("inf"))
    for _ in range(repeat):
        for name, (command, stdout_path) in commands.items():
            best[name] = min(best[name], run_timed(command, stdout_path=stdout_path, **options).seconds)  # type: ignore[arg-type]
    return best


# ----------------------------------------------------------- loopback webs --


@contextmanager
def serve_folder(folder: Path, pages: bool = False) -> Iterator[str]:
    """Serve `folder`'s files over HTTP on 127.0.0.1 (an ephemeral port) in this process; yield the base URL.
    With `pages`, a path that names no file answers 200 with a small HTML page of its own (so the URLs a
    generated sitemap lists can be fetched without a file each)."""
    import html
    import io
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the base class's name)
            return

        def send_head(self) -> BinaryIO | None:
            if not pages or Path(self.translate_path(self.path)).exists():
                return super().send_head()
            title = html.escape(self.path)
            body = f"<html><head><title>{title}</title></head><body><h1>{title}</h1></body></html>\n".encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            return io.BytesIO(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), lambda *a, **k: Quiet(*a, directory=str(folder), **k))
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def bulk_web_process(hosts: int, pages: int, folder: Path, heads: int = 0) -> Iterator[list[str]]:
    """The bulk test web (`hosts` x `pages`; `heads`: realistic page heads, `PageRange.heads`) served by
    `python -m sitemapcrawl.testweb serve` in its own process, so its CPU is not the measured process's;
    yield every page URL."""
    ready = folder / "ready.txt"
    process = subprocess.Popen(
        [sys.executable, "-m", "sitemapcrawl.testweb", "serve", "--web", "bulk", "--hosts", str(hosts),
         "--pages", str(pages), "--heads", str(heads), "--ready-file", str(ready)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise SystemExit(f"test web did not start: {process.stderr.read().decode() if process.stderr else ''}")
            time.sleep(0.1)
        bases = ready.read_text(encoding="utf-8").split()
        yield [f"{base}p/{i}.html" for base in bases for i in range(pages)]
    finally:
        process.terminate()
        process.wait(timeout=30)


# ----------------------------------------------------------------- reading --


def verdict(value: float, limit: float) -> str:
    """"met" when `value` is at most `limit`, else "MISSED"."""
    return "met" if value <= limit else "MISSED"


def target_line(label: str, value: float, limit: float, unit: str = "x") -> str:
    """One line that checks a target: `target: LABEL: VALUE (limit LIMIT) -> met | MISSED by N%`."""
    result = verdict(value, limit)
    if result != "met":
        result += f" by {value / limit - 1:.0%}"
    return f"target: {label}: {value:.2f}{unit} (limit {limit:g}{unit}) -> {result}"


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def commit() -> str:
    """The checkout's short commit, for a run's header line."""
    try:
        return subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
