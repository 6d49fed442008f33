"""The runner interface: every phase's split tasks are one picklable call (job, settings, options).

A recording runner takes the place of the local processes or Dask: the
tasks of generate, fetch, parse and updatedb name their split in their label
and in their options, and survive plain `pickle` (what a local worker reads
on its stdin and an engine sends to its workers). Without `distributed`,
`--dask` is one line naming the extra to install; the `dask_scheduler`
setting is read from the environment.
"""

import os
import pickle
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sitemapcrawl.batch.calls import BatchSplit, SplitTask
from sitemapcrawl.batch.workers import WorkerResults
from sitemapcrawl.config import Settings, load_settings
from sitemapcrawl.fetcher.model import FetchOptions
from sitemapcrawl.jobs.crawl import fetch_workers, generate_workers, parse_workers
from sitemapcrawl.jobs.fetch import fetch_phase
from sitemapcrawl.jobs.generate import GenerateOptions, generate_phase
from sitemapcrawl.jobs.parse import parse_phase
from sitemapcrawl.model.splits import Split
from sitemapcrawl.modes import CrawlMode

SETTINGS = Settings(hbase="127.0.0.1:1", table_prefix="t_", user_agent="test/1.0", max_connections=3,
                    headers=("Authorization: Bearer s3cret",))


class Recorder:
    """A runner that records the tasks it was given; its one result names the batch alone."""

    def __init__(self, reruns: bool = False) -> None:
        self.reruns = reruns
        self.runs: list[tuple[str, str, list[SplitTask[Any]]]] = []

    def run(self, phase: str, batch: str, tasks: Sequence[SplitTask[Any]]) -> WorkerResults:
        self.runs.append((phase, batch, list(tasks)))
        return WorkerResults([{"batch_id": batch}], [])


def sent(task: SplitTask[Any]) -> SplitTask[Any]:
    """The task as a worker receives it: pickled once, the settings (credentials too) as they were."""
    again = pickle.loads(pickle.dumps(task))
    assert again == task and again.settings.headers == SETTINGS.headers
    return again


def test_parse_tasks_name_their_split_in_the_label_and_the_options() -> None:
    recorder = Recorder()
    parse_workers(recorder, SETTINGS, "b1", CrawlMode.MIXED, Split(1, 2), 2)
    [(phase, batch, tasks)] = recorder.runs
    assert (phase, batch) == ("parse", "b1")
    assert [t.label for t in tasks] == ["2/4", "3/4"]  # split 1/2 as two sub-splits
    task = sent(tasks[1])
    assert (task.phase, task.job, task.settings) == ("parse", parse_phase, SETTINGS)
    assert task.options == BatchSplit("b1", CrawlMode.MIXED, Split(3, 4))  # local workers do not wait


def test_the_tasks_of_a_runner_that_reruns_wait_for_a_lease() -> None:
    recorder = Recorder(reruns=True)
    parse_workers(recorder, SETTINGS, "b1", CrawlMode.MIXED, Split(0, 1), 2)
    fetch_workers(recorder, FetchOptions.from_settings(SETTINGS, "b2"), SETTINGS, 2)
    assert all(t.options.wait for _phase, _batch, tasks in recorder.runs for t in tasks)


def test_generate_tasks_share_one_batch_and_split_top_n() -> None:
    recorder = Recorder()
    generate_workers(recorder, SETTINGS, GenerateOptions(top_n=10, batch_id="g1", fetch_splits=3), 3)
    [(_phase, batch, tasks)] = recorder.runs
    assert all(sent(t).job is generate_phase for t in tasks)
    options = [t.options for t in tasks]
    assert batch == "g1" and all(isinstance(o, GenerateOptions) and o.batch_id == "g1" for o in options)
    assert [o.split for o in options] == [Split(0, 3), Split(1, 3), Split(2, 3)]
    assert [o.top_n for o in options] == [3, 3, 4]  # the shares add up to the batch's 10
    assert [t.label for t in tasks] == ["0/3", "1/3", "2/3"]


def test_fetch_tasks_are_the_fetch_splits() -> None:
    recorder = Recorder()
    fetch_workers(recorder, FetchOptions.from_settings(SETTINGS, "b2"), SETTINGS, 2)
    [(_phase, _batch, tasks)] = recorder.runs
    assert [t.label for t in tasks] == ["0/2", "1/2"]
    task = sent(tasks[1])
    assert task.job is fetch_phase and isinstance(task.options, FetchOptions)
    assert task.options.fetch_split == (1, 2) and not task.options.wait and task.options.connections == 3


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
