"""Workers benchmark (issues 12, 25): a crawl with 1, 2 and 4 workers per phase, as local processes and as
Dask tasks, on a 3-RegionServer HBase.

Run from the repository root (it starts and stops its OWN HBase, never the
shared one on 9090):

    export PYTHONPATH=$PWD
    .venv/bin/python benchmarks/bench_workers.py                       # 40 hosts x 50 pages, workers 1 2 4
    .venv/bin/python benchmarks/bench_workers.py --hosts 20 --pages 20 --workers 1 2
    .venv/bin/python benchmarks/bench_workers.py --backends dask          # Dask alone (needs [dask])

What it does:

1. `scripts/hbase-local start --regionservers 3` in a temporary folder on
   free ports (as `tests/integration/test_hbase_local_cluster.py`); the PIDs
   of its JVMs come from the folder's `run/*.pid`.
2. A loopback test web (`sitemapcrawl.testweb.bulk_web`) of `--hosts` hosts
   with `--pages` pages each, every page listed by its host's sitemap and
   linking to others.
3. A warm-up crawl (1 worker, not reported: a fresh cluster's JVMs compile
   as they go). Then for each worker count W: fresh tables pre-split into `--regions` regions
   from the seeds (`init --split-from-seeds --hbase-shell 'hbase-local shell'`),
   then one whole `crawl SEEDS --mode mixed --rounds 3 --delay 0 --workers W`
   (W processes per phase; fetch with W partitions) as a subprocess; with
   the `dask` back end the same crawl with `--dask ADDRESS --workers W` on a
   Dask scheduler and W workers (one thread each, no nanny) started for that
   W, before the crawl's clock (a Dask cluster is already running). Per
   phase: the seconds summed over the rounds (from its round lines); end to
   end: the command's wall time. CPU seconds: the crawl and its workers
   (rusage of children) and the HBase JVMs (utime+stime from /proc/PID/stat,
   before and after), in the same run; with Dask also the scheduler's and
   the workers' (/proc), and for both the loopback web (this process).
4. Checks: no URL fetched twice (the web's access log, robots.txt aside) and
   no row lost (the same number of webpage rows for every W, and every URL of
   the web has a row).

Printed: a table per W with phase seconds, speedup against W=1, CPU seconds
of workers and of HBase, and the split overhead (total CPU seconds of W=2
against W=1, and what the worker processes' start-up costs: W processes per
phase per round, each paying Python's and the modules' import). Targets:
>= 1.6x with 2 workers on parse and updatedb where the machine allows (a
2-core machine where the JVMs take the second core does not: then the HBase
CPU share says why); split overhead <= 1.1x; Dask against local
processes at the same W: total CPU <= 1.1x. Then, for W = 2, where the CPU
went (the crawl, its workers, the Dask scheduler, HBase, the web), in
cores busy over the wall time.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from harness import AGENT, HBASE_LOCAL, REPO, Cluster, bench_parser, run_timed, source_env, table_prefix

from sitemapcrawl.config import Settings
from sitemapcrawl.model.webpage import WEBPAGE_TABLE
from sitemapcrawl.storage.store import Store
from sitemapcrawl.testweb import TestWebServer
from sitemapcrawl.testweb.generate import bulk_web

PHASES = ("generate", "fetch", "parse", "updatedb")


@dataclass
class Run:
    """One crawl with W workers on one back end."""

    workers: int
    backend: str = "local"
    seconds: float = 0.0
    phases: dict[str, float] = field(default_factory=lambda: dict.fromkeys(PHASES, 0.0))
    worker_cpu: float = 0.0
    hbase_cpu: float = 0.0
    rows: int = 0
    fetched: Counter[str] = field(default_factory=Counter)
    rounds: int = 0
    dask_cpu: dict[str, float] = field(default_factory=dict)
    """CPU seconds of the Dask scheduler and of its workers during the crawl (Dask back end only)."""
    web_cpu: float = 0.0

    @property
    def total_cpu(self) -> float:
        """Every process of the crawl: the command and its children, Dask's, HBase's (not the web)."""
        return self.worker_cpu + sum(self.dask_cpu.values()) + self.hbase_cpu


def proc_cpu(pids: list[int]) -> float:
    """utime + stime of these processes so far (/proc/PID/stat)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick
    return total


class DaskProcesses:
    """A Dask scheduler and W workers (one thread each, no nanny) on loopback, stopped by PID."""

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
        hbase_before, dask_before, web_before = cluster.cpu_seconds(), dask.cpu() if dask else {}, time.process_time()
        # The crawl's CPU counts the worker processes it waited for (wait4's rusage).
        done = run_timed([*base, "crawl", str(seeds), "--mode", "mixed", "--rounds", "3", "--delay", "0",
                          "--threads", "8", "--workers", str(workers), *engine], env=env)
        run.seconds, run.worker_cpu = done.seconds, done.cpu_seconds
        run.hbase_cpu = cluster.cpu_seconds() - hbase_before
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
    command = [sys.executable, "-c", "import sitemapcrawl.cli.app, sitemapcrawl.jobs.fetch, "
               "sitemapcrawl.jobs.parse, sitemapcrawl.jobs.updatedb, sitemapcrawl.storage.store"]
    return sum(run_timed(command, env=env).cpu_seconds for _ in range(times)) / times


def report(every: list[Run], web_urls: int, startup: float) -> None:
    runs = [run for run in every if run.backend == "local"] or every
    one = runs[0]
    print(f"\nlocal worker processes (--workers W){'' if runs[0].backend == 'local' else ': none run; Dask below'}")
    print(f"{'workers':>8} {'wall s':>8} " + " ".join(f"{p + ' s':>11}" for p in PHASES)
          + f" {'worker CPU':>11} {'HBase CPU':>10} {'HBase share':>11} {'rows':>6} {'max fetches':>11}")
    for run in runs:
        cpu = run.worker_cpu + run.hbase_cpu
        print(f"{run.workers:>8} {run.seconds:>8.1f} " + " ".join(f"{run.phases[p]:>11.2f}" for p in PHASES)
              + f" {run.worker_cpu:>11.1f} {run.hbase_cpu:>10.1f} {run.hbase_cpu / cpu if cpu else 0:>11.0%}"
              + f" {run.rows:>6} {max(run.fetched.values(), default=0):>11}")
    print("\nspeedup against 1 worker (target >= 1.6x with 2 workers on parse and updatedb where the machine allows)")
    for run in runs[1:]:
        ratios = " ".join(f"{p} {one.phases[p] / run.phases[p] if run.phases[p] else 0:.2f}x" for p in PHASES)
        print(f"  {run.workers} workers: {ratios}; end to end {one.seconds / run.seconds:.2f}x")
    two = next((run for run in runs if run.workers == 2), None)
    if two is not None:
        base_cpu, split_cpu = one.worker_cpu + one.hbase_cpu, two.worker_cpu + two.hbase_cpu
        print(f"split overhead: 2 workers {split_cpu:.1f} CPU s against 1 worker {base_cpu:.1f} CPU s: "
              f"{split_cpu / base_cpu:.2f}x (target <= 1.10x)")
        starts = (two.rounds * len(PHASES) + 1) * two.workers  # + the generate that found nothing due
        print(f"  of which process starts: {starts} worker processes x {startup:.2f} CPU s = {starts * startup:.1f} "
              f"CPU s; without them {(split_cpu - starts * startup) / base_cpu:.2f}x")
    rows = {run.rows for run in runs}
    twice = [run.workers for run in runs if max(run.fetched.values(), default=0) > 1]
    print(f"rows: {sorted(rows)} (same for every W: {len(rows) == 1}; the web has {web_urls} URLs); "
          f"a URL fetched twice: {'with ' + str(twice) + ' workers' if twice else 'never'}")
    print(f"cores: {os.cpu_count()}")
    dask_report(every)


def dask_report(every: list[Run]) -> None:
    """Dask against local processes at the same W; where the CPU went with 2 workers."""
    dask = {run.workers: run for run in every if run.backend == "dask"}
    local = {run.workers: run for run in every if run.backend == "local"}
    if not dask:
        return
    print(f"\nDask tasks (--dask, W workers of one thread)\n{'workers':>8} {'wall s':>8} {'crawl CPU':>10} "
          f"{'workers CPU':>12} {'sched. CPU':>11} {'HBase CPU':>10} {'total CPU':>10} {'vs local':>9} "
          f"{'rows':>6} {'max fetches':>11}")
    for workers, run in sorted(dask.items()):
        base = local.get(workers)
        ratio = f"{run.total_cpu / base.total_cpu:.2f}x" if base else "-"
        print(f"{workers:>8} {run.seconds:>8.1f} {run.worker_cpu:>10.1f} {run.dask_cpu['workers']:>12.1f} "
              f"{run.dask_cpu['scheduler']:>11.1f} {run.hbase_cpu:>10.1f} {run.total_cpu:>10.1f} {ratio:>9} "
              f"{run.rows:>6} {max(run.fetched.values(), default=0):>11}")
    print("Dask overhead: total CPU against --workers at the same W (target <= 1.10x)")
    for workers, run in sorted(dask.items()):
        if workers in local:
            print(f"  W={workers}: {run.total_cpu:.1f} against {local[workers].total_cpu:.1f} CPU s: "
                  f"{run.total_cpu / local[workers].total_cpu:.2f}x; wall {run.seconds:.1f}s against "
                  f"{local[workers].seconds:.1f}s")
    for backend, run in (("local", local.get(2)), ("dask", dask.get(2))):
        if run is None:
            continue
        parts = {"crawl (+ its worker processes)" if backend == "local" else "crawl (the Dask client)": run.worker_cpu,
                 **{f"Dask {name}": took for name, took in run.dask_cpu.items()}, "HBase JVMs": run.hbase_cpu,
                 "loopback web (this process)": run.web_cpu}
        busy = sum(parts.values()) / run.seconds
        print(f"where the CPU went, W=2 {backend}: {run.seconds:.1f}s wall, {busy:.2f} cores busy: "
              + ", ".join(f"{name} {took:.1f} s ({took / run.seconds:.2f} cores)" for name, took in parts.items()))


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--hosts", type=int, default=40)
    parser.add_argument("--pages", type=int, default=50, help="pages per host")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4], help="worker counts to compare")
    parser.add_argument("--regionservers", type=int, default=3)
    parser.add_argument("--regions", type=int, default=6, help="regions each fresh table is pre-split into")
    parser.add_argument("--backends", nargs="+", choices=("local", "dask"), default=["local", "dask"],
                        help="local worker processes, Dask tasks (needs the dask extra), or both")
    args = parser.parse_args()
    cluster = Cluster(args.regionservers, "bench_workers")
    web = TestWebServer(bulk_web(args.hosts, args.pages, first_host="127.0.20.1")).start()
    seeds = Path(tempfile.mkdtemp(prefix="bench-workers-")) / "seeds.txt"
    seeds.write_text("".join(f"{url}\n" for url in web.base_urls()), encoding="utf-8")
    try:
        print(f"starting HBase with {args.regionservers} RegionServers in {cluster.home} ...", flush=True)
        started = time.monotonic()
        cluster.start()
        print(f"  up in {time.monotonic() - started:.0f}s: {cluster.pids()}", flush=True)
        # A fresh cluster's JVMs compile as they go: a first crawl, not reported, warms them up.
        print("warm-up crawl (not reported) ...", flush=True)
        crawl_once(cluster, web, seeds, 1, args.regions)
        runs = []
        for backend in args.backends:
            for workers in args.workers:
                print(f"crawl with {workers} worker(s), {backend} ...", flush=True)
                runs.append(crawl_once(cluster, web, seeds, workers, args.regions, backend))
                print(f"  {runs[-1].seconds:.1f}s, {runs[-1].rows} rows", flush=True)
        urls = args.hosts * (args.pages + 2)  # each host: its pages, its root page, its sitemap
        report(runs, urls, startup_cpu(source_env(REPO, cluster.env)))
    finally:
        web.stop()
        cluster.stop()
        shutil.rmtree(seeds.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
