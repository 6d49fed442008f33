"""`crawl --dask`: the splits of every phase as tasks on a real Dask scheduler and worker processes.

A scheduler (`python -m distributed.cli.dask_scheduler`) and two workers
(`--nthreads 1 --no-nanny`) run on loopback, started and stopped by PID. A
crawl of the loopback web with `--dask` must leave the same rows, statuses and
access log as a one-process crawl (no URL fetched twice). Then one worker
SIGKILLs itself in the middle of fetch, or of updatedb (`tests/dask_killpoint.py`,
a worker preload), a replacement worker joins, and the crawl still finishes
with the same rows: Dask reran the task, which took the dead worker's lease over.
Issue 47, item 1: one of two workers of two threads is killed and never
replaced (no phase needs its tasks to run at once: the crawl ends on the one
left); the scheduler is killed after round 1 and started again (the crawl
reconnects and runs the lost tasks again), or not (one line saying what to
do, and the rerun finishes the batch).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hbase_fixtures import REPO, free_port
from split_helpers import AGENT, table
from waiting import wait_for

from sitemapcrawl.config import Settings
from sitemapcrawl.storage.store import Store
from sitemapcrawl.testweb import TestWebServer
from sitemapcrawl.testweb.generate import bulk_web

WEB = bulk_web(6, 6, first_host="127.0.11.1")
KILLPOINT = REPO / "tests" / "dask_killpoint.py"
ENV = dict(os.environ, PYTHONPATH=str(REPO))


def fetches(web: TestWebServer) -> Counter[str]:
    """How often each URL was requested (robots.txt aside)."""
    return Counter(r.url for r in web.log.records() if r.status != 0 and r.target != "/robots.txt")


class DaskCluster:
    """A scheduler and its workers as processes of this test, stopped by PID."""

    def __init__(self, folder: Path) -> None:
        self.file = folder / "scheduler.json"
        self.logs = folder
        self.processes: list[subprocess.Popen[bytes]] = []
        self.schedulers: list[subprocess.Popen[bytes]] = []
        self.port = free_port()  # a port of its own, the same after a restart
        self.scheduler = self.start_scheduler()
        self.address = json.loads(self.file.read_text())["address"]

    def start_scheduler(self) -> subprocess.Popen[bytes]:
        """Start the scheduler (again) on the cluster's port; wait until it wrote its file."""
        self.file.unlink(missing_ok=True)
        scheduler = self._start("scheduler", [
            sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", str(self.port),
            "--no-dashboard", "--scheduler-file", str(self.file)])
        self.schedulers.append(scheduler)
        wait_for(lambda: scheduler.poll() is not None or (self.file.exists() and bool(self.file.read_text())), 60,
                 "the Dask scheduler did not start")
        assert scheduler.poll() is None, f"the Dask scheduler ended (exit status {scheduler.returncode})"
        return scheduler

    def kill_scheduler(self) -> None:
        """SIGKILL the scheduler (its workers notice and end)."""
        self.scheduler.kill()
        self.scheduler.wait()

    def _start(self, name: str, command: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        log = (self.logs / f"{name}-{len(self.processes)}.log").open("wb")
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env={**ENV, **(env or {})})
        self.processes.append(process)
        return process

    def worker(self, env: dict[str, str] | None = None, threads: int = 1) -> subprocess.Popen[bytes]:
        """Start one worker (`threads` threads, no nanny) and wait until the scheduler knows it."""
        from distributed import Client

        with Client(self.address, timeout=20) as client:
            before = len(client.scheduler_info(n_workers=-1)["workers"])
            process = self._start("worker", [
                sys.executable, "-m", "distributed.cli.dask_worker", "--scheduler-file", str(self.file), "--nthreads",
                str(threads), "--no-nanny", "--no-dashboard", "--host", "127.0.0.1", "--preload", str(KILLPOINT)], env)
            try:
                client.wait_for_workers(before + 1, timeout=60)
            except TimeoutError:
                raise AssertionError(f"a Dask worker did not start (exit status {process.poll()})") from None
        return process

    def stop(self) -> None:
        """Workers first (SIGKILL: they hold nothing of ours), then the schedulers (SIGTERM)."""
        for process in self.processes:
            if process not in self.schedulers and process.poll() is None:
                process.kill()
                process.wait()
        for scheduler in self.schedulers:
            if scheduler.poll() is None:
                scheduler.send_signal(signal.SIGTERM)
            try:
                scheduler.wait(timeout=20)
            except subprocess.TimeoutExpired:
                scheduler.kill()
                scheduler.wait()


@pytest.fixture
def dask_cluster(tmp_path: Path) -> Iterator[DaskCluster]:
    cluster = DaskCluster(tmp_path)
    try:
        yield cluster
    finally:
        cluster.stop()


def _crawl(settings: Settings, seeds: Path, *extra: str) -> subprocess.Popen[str]:
    command = ["--hbase", settings.hbase, "--table-prefix", settings.table_prefix, "--user-agent", AGENT,
               "crawl", str(seeds), "--rounds", "4", "--delay", "0", "--max-connections", "4", *extra]
    return subprocess.Popen([sys.executable, "-m", "sitemapcrawl", *command], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env=dict(ENV, SITEMAPCRAWL_LEASE_SECONDS="3", SITEMAPCRAWL_HBASE_BATCH_SIZE="3"))


@pytest.fixture(scope="module")
def seeds(web: TestWebServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("seeds") / "seeds.txt"
    path.write_text("".join(f"{u}\n" for u in web.base_urls()), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def one_process(web: TestWebServer, hbase_address: str, seeds: Path) -> Iterator[tuple[dict[str, object], Counter]]:
    """The rows and the access log of a crawl in one process."""
    settings = Settings(hbase=hbase_address, table_prefix=f"t_dask_ref_{os.getpid()}_")
    web.reset()
    crawl = _crawl(settings, seeds)
    _out, err = crawl.communicate(timeout=600)
    assert crawl.returncode == 0, err
    with Store(settings) as store:
        try:
            yield table(store), fetches(web)
        finally:
            store.drop_tables()


def _run(settings: Settings, seeds: Path, cluster: DaskCluster,
         meanwhile: Callable[[subprocess.Popen[str]], None] = lambda crawl: None) -> str:
    """A crawl on the Dask cluster, run to its end (after `meanwhile(crawl)`); its stderr, once it ended well."""
    crawl = _crawl(settings, seeds, "--dask", cluster.address, "--workers", "2")
    try:
        meanwhile(crawl)
        _out, err = crawl.communicate(timeout=600)
    finally:
        with contextlib.suppress(ProcessLookupError):
            crawl.kill()
    assert crawl.returncode == 0, err
    assert "Traceback" not in err and "stopped: nothing due" in err
    return err


def test_a_crawl_on_dask_leaves_the_same_table_as_one_process(
        web: TestWebServer, store: Store, settings: Settings, seeds: Path, dask_cluster: DaskCluster,
        one_process: tuple[dict[str, object], Counter[str]]) -> None:
    rows, fetched = one_process
    assert len(rows) > 30 and fetched and max(fetched.values()) == 1
    dask_cluster.worker()
    dask_cluster.worker()
    web.reset()
    err = _run(settings, seeds, dask_cluster)
    assert [line for line in err.splitlines() if line.startswith("round ")]
    assert table(store) == rows
    assert fetches(web) == fetched  # no URL fetched twice, none left out


@pytest.mark.parametrize(("phase", "writes"), [("fetch", 3), ("updatedb", 2)])
def test_a_dask_worker_killed_mid_phase_loses_nothing(
        phase: str, writes: int, web: TestWebServer, store: Store, settings: Settings, seeds: Path,
        dask_cluster: DaskCluster, one_process: tuple[dict[str, object], Counter[str]]) -> None:
    rows, fetched = one_process
    doomed = dask_cluster.worker({"KILL_PHASE": phase, "KILL_AFTER_WRITES": str(writes)})
    dask_cluster.worker()
    web.reset()

    def replace_the_killed_worker(crawl: subprocess.Popen[str]) -> None:
        # Two processes to watch: whichever ends first tells.
        wait_for(lambda: doomed.poll() is not None or crawl.poll() is not None, 300,
                 f"no worker was killed during {phase}")
        assert doomed.poll() is not None, f"no worker was killed during {phase}"
        assert doomed.returncode == -signal.SIGKILL
        dask_cluster.worker()  # a replacement joins, as a batch scheduler would restart one

    _run(settings, seeds, dask_cluster, replace_the_killed_worker)
    assert table(store) == rows  # the same rows, statuses and marks: nothing lost
    assert set(fetches(web)) == set(fetched)  # every URL fetched (a request in flight at the kill may repeat)


def test_a_worker_killed_mid_crawl_and_never_replaced_only_slows_it(
        web: TestWebServer, store: Store, settings: Settings, seeds: Path, dask_cluster: DaskCluster,
        one_process: tuple[dict[str, object], Counter[str]], tmp_path: Path) -> None:
    # Issue 47, item 1: two workers of two threads, one SIGKILLed in updatedb and not replaced. The crawl
    # made 4 splits (the cluster's threads); updatedb's splits waited for each other and needed 4 threads
    # at once: the crawl gave up after 60 s. Now no task waits for another: the one worker left runs them.
    rows, fetched = one_process
    # Both are armed: the first to make its second write in updatedb dies, the other goes on alone.
    armed = {"KILL_PHASE": "updatedb", "KILL_AFTER_WRITES": "2", "KILL_ONCE": str(tmp_path / "killed")}
    workers = [dask_cluster.worker(armed, threads=2), dask_cluster.worker(armed, threads=2)]
    web.reset()
    crawl = _crawl(settings, seeds, "--mode", "mixed", "--rounds", "5", "--dask", dask_cluster.address)
    try:
        _out, err = crawl.communicate(timeout=600)
    finally:
        with contextlib.suppress(ProcessLookupError):
            crawl.kill()
    # Killed mid-crawl, and never replaced: one worker dead, the other alive.
    assert sorted(worker.poll() or 0 for worker in workers) == [-signal.SIGKILL, 0]
    assert crawl.returncode == 0, err
    assert "Traceback" not in err and "stopped: nothing due" in err
    assert table(store) == rows  # the same rows and statuses as one process
    assert set(fetches(web)) == set(fetched)


class LoggedCrawl:
    """A crawl whose stderr a thread copies to `log` line by line, setting `round_one` once round 1 is
    done (or stderr ended: nobody waits on a crawl that is over)."""

    def __init__(self, process: subprocess.Popen[str], log: Path) -> None:
        self.process, self.log = process, log
        self.round_one, self.saw_round_one = threading.Event(), False
        self.reader = threading.Thread(target=self._copy, daemon=True)
        self.reader.start()

    def _copy(self) -> None:
        assert self.process.stderr is not None
        with self.log.open("w") as copy:
            for line in self.process.stderr:
                copy.write(line)
                copy.flush()
                if line.startswith("round 1:"):
                    self.saw_round_one = True
                    self.round_one.set()
        self.round_one.set()

    def wait(self, timeout: float) -> int:
        """The crawl's exit status, once its stderr is all in `log`."""
        code = self.process.wait(timeout=timeout)
        self.reader.join(timeout=30)
        return code


def _crawl_logged(settings: Settings, seeds: Path, log: Path, cluster: DaskCluster,
                  env: dict[str, str] | None = None) -> LoggedCrawl:
    """A crawl on the cluster, stderr to `log` (copied as it comes)."""
    command = ["--hbase", settings.hbase, "--table-prefix", settings.table_prefix, "--user-agent", AGENT,
               "crawl", str(seeds), "--rounds", "5", "--delay", "0", "--max-connections", "4", "--dask",
               cluster.address, "--workers", "2"]
    return LoggedCrawl(subprocess.Popen(
        [sys.executable, "-m", "sitemapcrawl", *command], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True, env=dict(ENV, SITEMAPCRAWL_LEASE_SECONDS="3", SITEMAPCRAWL_HBASE_BATCH_SIZE="3", **(env or {}))),
        log)


def _scheduler_restarted(settings: Settings, seeds: Path, log: Path, cluster: DaskCluster, come_back: bool,
                         env: dict[str, str] | None = None) -> tuple[subprocess.Popen[str], str]:
    """A crawl on two workers whose scheduler is killed after round 1 (and started again if `come_back`):
    the finished crawl and its stderr."""
    workers = [cluster.worker(), cluster.worker()]
    crawl = _crawl_logged(settings, seeds, log, cluster, env=env)
    try:
        _restart_after_round_one(cluster, crawl, workers, come_back=come_back)
        crawl.wait(timeout=600 if come_back else 300)
    finally:
        with contextlib.suppress(ProcessLookupError):
            crawl.process.kill()
    return crawl.process, log.read_text()


def _restart_after_round_one(cluster: DaskCluster, crawl: LoggedCrawl, workers: list[subprocess.Popen[bytes]],
                             come_back: bool) -> None:
    """Once round 1 is done, kill the scheduler and its workers; start them again if `come_back`."""
    crawl.round_one.wait(timeout=300)
    assert crawl.saw_round_one, crawl.log.read_text()
    cluster.kill_scheduler()
    for worker in workers:
        worker.kill()
        worker.wait()
    if come_back:
        cluster.scheduler = cluster.start_scheduler()
        cluster.worker()
        cluster.worker()


def test_a_scheduler_restarted_between_rounds_is_reconnected(
        web: TestWebServer, store: Store, settings: Settings, seeds: Path, dask_cluster: DaskCluster,
        one_process: tuple[dict[str, object], Counter[str]], tmp_path: Path) -> None:
    rows, fetched = one_process
    web.reset()
    crawl, err = _scheduler_restarted(settings, seeds, tmp_path / "crawl.err", dask_cluster, come_back=True)
    assert crawl.returncode == 0, err
    assert "Traceback" not in err and "stopped: nothing due" in err
    assert table(store) == rows
    assert set(fetches(web)) == set(fetched)


def test_a_scheduler_that_does_not_come_back_is_one_line_and_the_rerun_finishes(
        web: TestWebServer, store: Store, settings: Settings, seeds: Path, dask_cluster: DaskCluster,
        one_process: tuple[dict[str, object], Counter[str]], tmp_path: Path) -> None:
    rows, fetched = one_process
    web.reset()
    log = tmp_path / "crawl.err"
    crawl, err = _scheduler_restarted(settings, seeds, log, dask_cluster, come_back=False,
                                      env={"SITEMAPCRAWL_DASK_RECONNECT_WAIT": "3"})
    assert crawl.returncode == 2, err
    errors = [line for line in err.splitlines() if "error" in line.lower() or "Traceback" in line]
    assert len(errors) == 1 and errors[0] == err.strip().splitlines()[-1], err
    assert errors[0].startswith("sitemapcrawl: error: ")
    assert (f"the Dask scheduler at {dask_cluster.address} went away and did not answer again within 3 s "
            "(dask_reconnect_wait); start it and its workers, then run the crawl again") in err
    dask_cluster.scheduler = dask_cluster.start_scheduler()
    dask_cluster.worker()
    dask_cluster.worker()
    rerun = _crawl_logged(settings, seeds, log, dask_cluster)
    assert rerun.wait(timeout=600) == 0, log.read_text()
    now = table(store)
    assert now == rows, {url: (row, rows.get(url)) for url, row in now.items() if row != rows.get(url)}
    assert set(fetches(web)) == set(fetched)


def test_dask_needs_a_scheduler_that_answers(settings: Settings, tmp_path: Path) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("", encoding="utf-8")
    crawl = _crawl(dataclasses.replace(settings), seeds, "--dask", "tcp://127.0.0.1:9")
    _out, err = crawl.communicate(timeout=120)
    assert crawl.returncode == 2
    assert err.strip().splitlines()[-1].startswith("sitemapcrawl: error: --dask tcp://127.0.0.1:9: no Dask")


KEYS: list[str] = []


def _count_to(_work: object, goal: int, progress: Callable[..., None]) -> object:
    from distributed import get_worker

    from sitemapcrawl.jobs.parse import ParseCounts

    KEYS.append(str(get_worker().get_current_task()))  # the name the dashboard shows
    for done in range(1, goal + 1):
        progress("parse", done, goal, 0)
        time.sleep(0.3)  # progress events are sent at most every quarter second
    if goal == 0:
        raise RuntimeError("nothing to count")
    return ParseCounts(rows=goal, sitemaps=1)


def test_the_dask_runner_sums_progress_merges_counts_and_names_a_failed_task() -> None:
    from distributed import Client

    from sitemapcrawl.batch.calls import SplitTask
    from sitemapcrawl.batch.dask_runner import RETRIES, DaskRunner
    from sitemapcrawl.config import Settings
    from sitemapcrawl.jobs.parse import ParseCounts

    heard: list[tuple[str, int, int | None]] = []
    with Client(processes=False, n_workers=1, threads_per_worker=3, dashboard_address=None) as client:
        runner = DaskRunner(client, on_stage=lambda stage, done, total, errors: heard.append((stage, done, total)))
        tasks = [SplitTask("parse", f"{k}/3", _count_to, Settings(), goal) for k, goal in enumerate((3, 4, 0))]
        results = runner.run("parse", "b9", tasks)
    assert sorted(set(KEYS)) == ["parse-0/3-b9", "parse-1/3-b9", "parse-2/3-b9"]
    assert KEYS.count("parse-2/3-b9") == 1 + RETRIES  # the task that raised was retried
    merged = results.merged(ParseCounts)
    assert (merged.rows, merged.sitemaps) == (7, 2)
    assert results.failed == ["parse task parse-2/3-b9 failed: RuntimeError: nothing to count"]
    assert heard and {stage for stage, _d, _t in heard} == {"parse x3"}
    assert max(done for _s, done, _t in heard) >= 5  # the sum over the tasks, not one task's count
