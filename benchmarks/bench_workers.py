"""Workers benchmark (issues 12, 25): one process, W local worker processes and W Dask workers, same crawl.

Run from the repository root (it starts and stops its OWN HBase, never the
shared one on 9090):

    export PYTHONPATH=$PWD
    .venv/bin/python benchmarks/bench_workers.py                    # 40 hosts x 50 pages, local 1 2 4, Dask 2
    .venv/bin/python benchmarks/bench_workers.py --workers 1 2 --repeat 3   # issue 25: 1 process, local 2, Dask 2
    .venv/bin/python benchmarks/bench_workers.py --backends local       # no Dask (no [dask] extra needed)

What it does:

1. `scripts/hbase-local start --regionservers 3` in a temporary folder on
   free ports; the PIDs of its JVMs come from the folder's `run/*.pid`.
2. A loopback test web (`testweb.bulk_web`) of `--hosts` hosts with
   `--pages` pages each, every page listed by its host's sitemap and linking
   to others, served by this process.
3. A warm-up crawl (1 process, not reported). Then `--repeat` times, in turn
   (so drift hits every configuration alike): for each local W of
   `--workers` and each Dask W of `--dask-workers`, fresh tables pre-split
   into `--regions` regions (`init --split-from-seeds`), then one whole
   `crawl SEEDS --mode mixed --rounds 3 --delay 0 --max-connections 8 --workers W`
   (W=1 local: one process), with Dask also `--dask ADDRESS` on a real
   `dask scheduler` and W `dask worker` processes (one thread, no nanny) on
   loopback, started before the clock (a user's cluster is already up).
   CPU seconds, all processes, as process trees: the crawl command and every
   child it waited for (wait4's rusage), the Dask scheduler and workers and
   the HBase JVMs (utime+stime+cutime+cstime from /proc/PID/stat, before and
   after), and the loopback web (this process).
4. Checks: no URL fetched twice (robots.txt aside), the same row count for
   every run, every URL of the web has a row.

Printed: every run; then per configuration the median wall and total CPU
(with the spread of the repeats); speedup and split overhead against one
process; Dask against local at the same W (target: total CPU <= 1.1x); and
where the CPU went (crawl processes, Dask, HBase's Thrift and RegionServers,
the web) in cores busy over the wall time.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from harness import (
    AGENT,
    HBASE_LOCAL,
    REPO,
    Cluster,
    bench_parser,
    commit,
    load_average,
    run_timed,
    source_env,
    stat_cpu_seconds,
    table_prefix,
    target_line,
)

from sitemapcrawl.config import Settings
from sitemapcrawl.model.webpage import WEBPAGE_TABLE
from sitemapcrawl.storage.store import Store
from sitemapcrawl.testweb import TestWebServer
from sitemapcrawl.testweb.generate import bulk_web

PHASES = ("generate", "fetch", "parse", "updatedb")
DASK_LIMIT = 1.10
"""Issue 25: Dask's total CPU against local workers at the same W."""
SPLIT_LIMIT = 1.10
"""Issue 12: total CPU with 2 local workers against one process."""


@dataclass
class Run:
    """One crawl with W workers on one back end ("local" or "dask")."""

    workers: int
    backend: str = "local"
    seconds: float = 0.0
    phases: dict[str, float] = field(default_factory=lambda: dict.fromkeys(PHASES, 0.0))
    crawl_cpu: float = 0.0
    """The crawl command and the children it waited for (its local worker processes)."""
    hbase_cpu: dict[str, float] = field(default_factory=dict)
    """Per HBase JVM role: thrift, regionservers, master (with ZooKeeper)."""
    dask_cpu: dict[str, float] = field(default_factory=dict)
    """The Dask scheduler's and its workers' (Dask back end only)."""
    web_cpu: float = 0.0
    rows: int = 0
    fetched: Counter[str] = field(default_factory=Counter)
    rounds: int = 0

    @property
    def name(self) -> str:
        return "1 process" if self.workers == 1 and self.backend == "local" else f"{self.backend} W={self.workers}"

    @property
    def crawler_cpu(self) -> float:
        """The crawler's own processes: the command, its workers, Dask's scheduler and workers."""
        return self.crawl_cpu + sum(self.dask_cpu.values())

    @property
    def total_cpu(self) -> float:
        """Every process of the crawl but the web: the crawler's and HBase's."""
        return self.crawler_cpu + sum(self.hbase_cpu.values())


def proc_cpu(pids: list[int]) -> float:
    """CPU seconds of these process trees so far: utime + stime + cutime + cstime (/proc/PID/stat)."""
    total = 0.0
    for pid in pids:
        try:
            total += stat_cpu_seconds(Path(f"/proc/{pid}/stat"), children=True)
        except OSError:
            continue
    return total


def hbase_cpu(cluster: Cluster) -> dict[str, float]:
    """CPU seconds so far of the cluster's JVMs by role: thrift, regionservers, master (+ ZooKeeper)."""
    roles: dict[str, list[int]] = {"thrift": [], "regionservers": [], "master": []}
    for name, pid in cluster.pids().items():
        roles["thrift" if name == "thrift" else "regionservers" if name.startswith("rs") else "master"].append(pid)
    return {role: proc_cpu(pids) for role, pids in roles.items()}


class DaskProcesses:
    """A `dask scheduler` and W `dask worker` processes (one thread each, no nanny) on loopback."""

    def __init__(self, workers: int, env: dict[str, str]) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="bench-dask-"))
        file = self.folder / "scheduler.json"
        self.scheduler = self._start([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host",
                                      "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file", str(file)], env)
        while not file.exists() or not file.read_text():
            time.sleep(0.2)
        self.address = json.loads(file.read_text())["address"]
        self.workers = [self._start([sys.executable, "-m", "distributed.cli.dask_worker", "--scheduler-file",
                                     str(file), "--nthreads", "1", "--no-nanny", "--no-dashboard", "--host",
                                     "127.0.0.1"], env) for _ in range(workers)]
        from distributed import Client

        with Client(self.address, timeout=60) as client:
            client.wait_for_workers(workers, timeout=120)

    def _start(self, command: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        log = (self.folder / f"{len(list(self.folder.iterdir()))}.log").open("wb")
        return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)

    def cpu(self) -> dict[str, float]:
        return {"scheduler": proc_cpu([self.scheduler.pid]), "workers": proc_cpu([w.pid for w in self.workers])}

    def stop(self) -> None:
        for worker in self.workers:
            worker.kill()
            worker.wait()
        self.scheduler.send_signal(signal.SIGTERM)
        try:
            self.scheduler.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.scheduler.kill()
            self.scheduler.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


_ROUND = re.compile(r"^round \d+: .*?; (generate [\d.]+s.*)$")


def crawl_once(cluster: Cluster, web: TestWebServer, seeds: Path, workers: int, regions: int,
               backend: str = "local") -> Run:
    prefix = table_prefix("workers")
    base = [sys.executable, "-m", "sitemapcrawl", "--hbase", cluster.address, "--table-prefix", prefix,
            "--user-agent", AGENT]
    env = source_env(REPO, cluster.env)
    run_timed([*base, "init", "--split-from-seeds", str(seeds), "--regions", str(regions),
               "--hbase-shell", f"{HBASE_LOCAL} shell"], env=env)
    web.reset()
    run = Run(workers, backend)
    dask = DaskProcesses(workers, env) if backend == "dask" else None
    try:
        engine = ["--dask", dask.address] if dask else []
        hbase_before, dask_before, web_before = hbase_cpu(cluster), dask.cpu() if dask else {}, time.process_time()
        done = run_timed([*base, "crawl", str(seeds), "--mode", "mixed", "--rounds", "3", "--delay", "0",
                          "--max-connections", "8", "--workers", str(workers), *engine], env=env)
        run.seconds, run.crawl_cpu = done.seconds, done.cpu_seconds
        run.hbase_cpu = {role: took - hbase_before[role] for role, took in hbase_cpu(cluster).items()}
        run.web_cpu = time.process_time() - web_before
        if dask:
            run.dask_cpu = {name: took - dask_before[name] for name, took in dask.cpu().items()}
    finally:
        if dask:
            dask.stop()
    for line in done.stderr.splitlines():
        match = _ROUND.match(line)
        if match:
            run.rounds += 1
            for stage, took in re.findall(r"(\w+) ([\d.]+)s", match.group(1)):
                run.phases[stage] = run.phases.get(stage, 0.0) + float(took)
    run.fetched = Counter(r.url for r in web.log.records() if r.status != 0 and r.target != "/robots.txt")
    with Store(Settings(hbase=cluster.address, table_prefix=prefix)) as store:
        run.rows = sum(1 for _ in store.scan(WEBPAGE_TABLE, columns=[b"f:st"]))
        store.drop_tables()
    return run


def startup_cpu(env: dict[str, str], times: int = 3) -> float:
    """CPU seconds of one worker process's start: Python and the modules a phase imports."""
    command = [sys.executable, "-c", "import sitemapcrawl.cli.worker, sitemapcrawl.jobs.fetch, "
               "sitemapcrawl.jobs.parse, sitemapcrawl.jobs.updatedb, sitemapcrawl.storage.store"]
    return sum(run_timed(command, env=env).cpu_seconds for _ in range(times)) / times


def median_run(runs: list[Run]) -> Run:
    """The run with the median total CPU (the lower middle one of an even count)."""
    return sorted(runs, key=lambda run: run.total_cpu)[(len(runs) - 1) // 2]


def spread(values: list[float]) -> str:
    """`median (min-max)` of repeated figures, or the one figure."""
    if len(values) == 1:
        return f"{values[0]:.1f}"
    return f"{statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f})"


def report(every: list[Run], web_urls: int, startup: float) -> None:
    print(f"\nevery run\n{'configuration':>14} {'wall s':>7} " + " ".join(f"{p + ' s':>10}" for p in PHASES)
          + f" {'crawl CPU':>9} {'Dask sch.':>9} {'Dask wrk.':>9} {'HBase CPU':>9} {'total CPU':>9}"
          + f" {'rows':>6} {'max fetches':>11}")
    for run in every:
        print(f"{run.name:>14} {run.seconds:>7.1f} " + " ".join(f"{run.phases[p]:>10.2f}" for p in PHASES)
              + f" {run.crawl_cpu:>9.1f} {run.dask_cpu.get('scheduler', 0):>9.1f}"
              + f" {run.dask_cpu.get('workers', 0):>9.1f}"
              + f" {sum(run.hbase_cpu.values()):>9.1f} {run.total_cpu:>9.1f} {run.rows:>6}"
              + f" {max(run.fetched.values(), default=0):>11}")
    groups: dict[tuple[str, int], list[Run]] = {}
    for run in every:
        groups.setdefault((run.backend, run.workers), []).append(run)
    print(f"\nper configuration, median (min-max) of {max(len(runs) for runs in groups.values())} run(s)\n"
          f"{'configuration':>14} {'wall s':>18} {'crawler CPU s':>18} {'HBase CPU s':>18} {'total CPU s':>18}")
    for runs in groups.values():
        print(f"{runs[0].name:>14} {spread([r.seconds for r in runs]):>18} {spread([r.crawler_cpu for r in runs]):>18}"
              f" {spread([sum(r.hbase_cpu.values()) for r in runs]):>18} {spread([r.total_cpu for r in runs]):>18}")

    def median(backend: str, workers: int, figure: str) -> float | None:
        runs = groups.get((backend, workers))
        return statistics.median(getattr(r, figure) for r in runs) if runs else None

    one_wall, one_cpu = median("local", 1, "seconds"), median("local", 1, "total_cpu")
    for (backend, workers), runs in groups.items():
        if (backend, workers) == ("local", 1) or one_wall is None or one_cpu is None:
            continue
        wall, cpu = median(backend, workers, "seconds"), median(backend, workers, "total_cpu")
        assert wall is not None and cpu is not None
        print(f"{runs[0].name} against 1 process: end to end {one_wall / wall:.2f}x faster; total CPU "
              f"{cpu / one_cpu:.2f}x")
    two_cpu = median("local", 2, "total_cpu")
    if two_cpu is not None and one_cpu is not None:
        print(target_line("split overhead, total CPU local W=2 / 1 process", two_cpu / one_cpu, SPLIT_LIMIT))
        two = median_run(groups[("local", 2)])
        starts = (two.rounds * len(PHASES) + 1) * two.workers  # + the generate that found nothing due
        print(f"  of which worker process starts: {starts} x {startup:.2f} CPU s = {starts * startup:.1f} CPU s")
    for backend, workers in groups:
        local_cpu, local_wall = median("local", workers, "total_cpu"), median("local", workers, "seconds")
        if backend != "dask" or local_cpu is None or local_wall is None:
            continue
        cpu, wall = median("dask", workers, "total_cpu"), median("dask", workers, "seconds")
        crawler, local_crawler = median("dask", workers, "crawler_cpu"), median("local", workers, "crawler_cpu")
        assert cpu is not None and wall is not None and crawler is not None and local_crawler is not None
        print(target_line(f"Dask overhead, total CPU dask W={workers} / local W={workers}", cpu / local_cpu,
                          DASK_LIMIT))
        print(f"  crawler processes alone (HBase aside): {crawler:.1f} against {local_crawler:.1f} CPU s, "
              f"{crawler / local_crawler:.2f}x; wall {wall:.1f} against {local_wall:.1f} s, {wall / local_wall:.2f}x")
    print("\nwhere the CPU went (the median run of each), in cores busy over its wall time")
    for runs in groups.values():
        run = median_run(runs)
        parts = {"crawl command" + (" + its workers" if run.backend == "local" and run.workers > 1 else ""):
                 run.crawl_cpu, **{f"Dask {name}": took for name, took in run.dask_cpu.items()},
                 **{f"HBase {role}": took for role, took in run.hbase_cpu.items()}, "loopback web": run.web_cpu}
        busy = sum(parts.values()) / run.seconds
        print(f"  {run.name}: {run.seconds:.1f} s wall, {busy:.2f} cores busy: "
              + ", ".join(f"{name} {took:.1f} s ({took / run.seconds:.2f})" for name, took in parts.items()))
    rows = {run.rows for run in every}
    twice = sorted({run.name for run in every if max(run.fetched.values(), default=0) > 1})
    print(f"\nrows: {sorted(rows)} (same for every run: {len(rows) == 1}; the web has {web_urls} URLs); "
          f"a URL fetched twice: {'in ' + ', '.join(twice) if twice else 'never'}")
    print(f"cores: {os.cpu_count()}; load average at the end: {load_average()}; commit {commit()}")


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--hosts", type=int, default=40)
    parser.add_argument("--pages", type=int, default=50, help="pages per host")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4],
                        help="local worker counts (1: one process)")
    parser.add_argument("--dask-workers", type=int, nargs="+", default=[2], help="Dask worker counts")
    parser.add_argument("--backends", nargs="+", choices=("local", "dask"), default=["local", "dask"],
                        help="local worker processes, Dask tasks (needs the dask extra), or both")
    parser.add_argument("--repeat", type=int, default=1, help="times every configuration runs, in turn")
    parser.add_argument("--regionservers", type=int, default=3)
    parser.add_argument("--regions", type=int, default=6, help="regions each fresh table is pre-split into")
    args = parser.parse_args()
    plan = [("local", w) for w in args.workers if "local" in args.backends]
    plan += [("dask", w) for w in args.dask_workers if "dask" in args.backends]
    cluster = Cluster(args.regionservers, "bench_workers")
    web = TestWebServer(bulk_web(args.hosts, args.pages, first_host="127.0.20.1")).start()
    seeds = Path(tempfile.mkdtemp(prefix="bench-workers-")) / "seeds.txt"
    seeds.write_text("".join(f"{url}\n" for url in web.base_urls()), encoding="utf-8")
    try:
        print(f"commit {commit()}, load average {load_average()}; starting HBase with {args.regionservers} "
              f"RegionServers in {cluster.home} ...", flush=True)
        started = time.monotonic()
        cluster.start()
        print(f"  up in {time.monotonic() - started:.0f}s: {cluster.pids()}", flush=True)
        # A fresh cluster's JVMs compile as they go: a first crawl, not reported, warms them up.
        print("warm-up crawl (not reported) ...", flush=True)
        crawl_once(cluster, web, seeds, 1, args.regions)
        runs = []
        for repeat in range(1, args.repeat + 1):
            for backend, workers in plan:
                print(f"[{repeat}/{args.repeat}] crawl, {backend} W={workers} ...", flush=True)
                runs.append(crawl_once(cluster, web, seeds, workers, args.regions, backend))
                print(f"  {runs[-1].seconds:.1f}s, {runs[-1].total_cpu:.1f} CPU s, {runs[-1].rows} rows, "
                      f"load {load_average()}", flush=True)
        urls = args.hosts * (args.pages + 2)  # each host: its pages, its root page, its sitemap
        report(runs, urls, startup_cpu(source_env(REPO, cluster.env)))
    finally:
        web.stop()
        cluster.stop()
        shutil.rmtree(seeds.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
