"""The runner interface: every phase's split tasks carry a command line and a picklable call that agree.

A recording runner takes the place of the local processes or Dask: the
tasks of generate, fetch, parse and updatedb name the same split in their
command line and in their call, and the call survives plain `pickle`
(what an engine sends to its workers). Without `distributed`, `--dask` is one
line naming the extra to install; the `dask_scheduler` setting is read from
the environment.
"""

import functools
import os
import pickle
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from sitemapcrawl.batch.workers import SplitTask, WorkerResults
from sitemapcrawl.config import Settings, load_settings
from sitemapcrawl.fetcher.model import FetchOptions
from sitemapcrawl.jobs.crawl import BatchSplit, fetch_workers, generate_workers, parse_workers, run_split
from sitemapcrawl.jobs.generate import GenerateOptions
from sitemapcrawl.model.splits import Split
from sitemapcrawl.modes import CrawlMode

SETTINGS = Settings(hbase="127.0.0.1:1", table_prefix="t_", user_agent="test/1.0", max_connections=3)


class Recorder:
    """A runner that records the tasks it was given; its one result names the batch alone."""

    def __init__(self) -> None:
        self.runs: list[tuple[str, str, list[SplitTask]]] = []

    def run(self, phase: str, batch: str, tasks: Sequence[SplitTask]) -> WorkerResults:
        self.runs.append((phase, batch, list(tasks)))
        return WorkerResults([{"batch_id": batch}], [])


def call_of(task: SplitTask) -> functools.partial[object]:
    call = pickle.loads(pickle.dumps(task.call))
    assert isinstance(call, functools.partial) and call.func is run_split
    return call


def test_parse_tasks_name_their_split_in_the_command_and_the_call() -> None:
    recorder = Recorder()
    parse_workers(recorder, SETTINGS, "b1", CrawlMode.MIXED, Split(1, 2), 2)
    [(phase, batch, tasks)] = recorder.runs
    assert (phase, batch) == ("parse", "b1")
    assert [t.label for t in tasks] == ["2/4", "3/4"]  # split 1/2 as two sub-splits
    assert tasks[0].argv == ["parse", "--batch", "b1", "--split", "2/4", "--mode", "mixed"]
    assert call_of(tasks[1]).args == (SETTINGS, "parse", BatchSplit("b1", CrawlMode.MIXED, Split(3, 4)))


def test_generate_tasks_share_one_batch_and_split_top_n() -> None:
    recorder = Recorder()
    generate_workers(recorder, SETTINGS, GenerateOptions(top_n=10, batch_id="g1", partitions=3), 3)
    [(_phase, batch, tasks)] = recorder.runs
    options = [call_of(t).args[2] for t in tasks]
    assert batch == "g1" and all(isinstance(o, GenerateOptions) and o.batch_id == "g1" for o in options)
    assert [o.split for o in options] == [Split(0, 3), Split(1, 3), Split(2, 3)]
    assert [o.top_n for o in options] == [3, 3, 4]  # the shares add up to the batch's 10
    assert "--topN" in tasks[0].argv and tasks[0].argv[tasks[0].argv.index("--topN") + 1] == "10"


def test_fetch_tasks_are_partitions_that_take_a_lease_over() -> None:
    recorder = Recorder()
    fetch_workers(recorder, FetchOptions.from_settings(SETTINGS, "b2"), SETTINGS, 2)
    [(_phase, _batch, tasks)] = recorder.runs
    assert [t.argv[:3] for t in tasks] == [["fetch", "--partition", "0/2"], ["fetch", "--partition", "1/2"]]
    options = call_of(tasks[1]).args[2]
    assert isinstance(options, FetchOptions)
    assert options.partition == (1, 2) and options.wait and options.connections == 3


def test_dask_without_distributed_says_what_to_install(tmp_path: Path) -> None:
    code = ("import sys; sys.modules['distributed'] = None; from sitemapcrawl.cli.app import main; "
            "sys.argv = ['sitemapcrawl', 'parse', '--batch', 'b1', '--dask', 'tcp://127.0.0.1:1']; main()")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                          env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2])))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "sitemapcrawl: error: --dask needs the Dask client: pip install 'sitemapcrawl[dask]'"]


def test_the_dask_scheduler_setting_comes_from_the_environment() -> None:
    settings = load_settings(environ={"SITEMAPCRAWL_DASK_SCHEDULER": "tcp://10.0.0.5:8786"})
    assert settings.dask_scheduler == "tcp://10.0.0.5:8786"
    assert load_settings(environ={}).dask_scheduler is None
