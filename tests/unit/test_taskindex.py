"""`--split auto`: K/N from the variables of Kubernetes, Slurm, AWS Batch and Cloud Run, right and wrong."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from sitemapcrawl.cli.app import app
from sitemapcrawl.errors import UsageError
from sitemapcrawl.model.splits import Split
from sitemapcrawl.model.taskindex import SCHEDULERS, split_from_scheduler


@pytest.mark.parametrize(("environ", "splits", "expected"), [
    ({"JOB_COMPLETION_INDEX": "2"}, 4, Split(2, 4)),  # Kubernetes: N from --splits
    ({"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_MIN": "0"}, None, Split(3, 4)),
    # --array=1-8: the first task is split 0
    ({"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "8", "SLURM_ARRAY_TASK_MIN": "1"}, None, Split(0, 8)),
    ({"SLURM_ARRAY_TASK_ID": "8", "SLURM_ARRAY_TASK_COUNT": "8", "SLURM_ARRAY_TASK_MIN": "1"}, None, Split(7, 8)),
    # --array=0-30:10 is four tasks, 0 10 20 30
    ({"SLURM_ARRAY_TASK_ID": "20", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_MIN": "0",
      "SLURM_ARRAY_TASK_STEP": "10"}, None, Split(2, 4)),
    ({"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "2"}, 2, Split(0, 2)),  # --splits agrees: fine
    ({"AWS_BATCH_JOB_ARRAY_INDEX": "9", "AWS_BATCH_JOB_ARRAY_SIZE": "10"}, None, Split(9, 10)),
    ({"AWS_BATCH_JOB_ARRAY_INDEX": "1"}, 3, Split(1, 3)),  # no size variable: --splits gives it
    ({"CLOUD_RUN_TASK_INDEX": "0", "CLOUD_RUN_TASK_COUNT": "1"}, None, Split(0, 1)),  # one task: the whole
    ({"CLOUD_RUN_TASK_INDEX": " 5 ", "CLOUD_RUN_TASK_COUNT": "256"}, None, Split(5, 256)),
    # Two schedulers that agree (a Job's index also exported under another name): fine
    ({"JOB_COMPLETION_INDEX": "1", "CLOUD_RUN_TASK_INDEX": "1", "CLOUD_RUN_TASK_COUNT": "2"}, 2, Split(1, 2)),
    ({"JOB_COMPLETION_INDEX": "1", "SLURM_ARRAY_TASK_ID": "", "PATH": "/bin"}, 2, Split(1, 2)),  # empty: unset
])
def test_each_schedulers_variables_give_k_of_n(environ: dict[str, str], splits: int | None, expected: Split) -> None:
    assert split_from_scheduler(environ, splits) == expected


@pytest.mark.parametrize(("environ", "splits", "message"), [
    ({}, None, "--split auto: no batch scheduler's task index is set (JOB_COMPLETION_INDEX, SLURM_ARRAY_TASK_ID, "
               "AWS_BATCH_JOB_ARRAY_INDEX, CLOUD_RUN_TASK_INDEX); give --split K/N"),
    ({"JOB_COMPLETION_INDEX": "2"}, None, "--split auto: Kubernetes Indexed Job (JOB_COMPLETION_INDEX=2): no "
                                          "--splits (or SITEMAPCRAWL_SPLITS) gives the task count"),
    ({"JOB_COMPLETION_INDEX": "4"}, 4, "--split auto: JOB_COMPLETION_INDEX=4 is not below --splits (or "
                                       "SITEMAPCRAWL_SPLITS) 4 (a Kubernetes Indexed Job of 4 tasks counts them "
                                       "from 0 to 3)"),
    ({"JOB_COMPLETION_INDEX": "two"}, 4, "--split auto: JOB_COMPLETION_INDEX='two': expected a whole number >= 0"),
    ({"JOB_COMPLETION_INDEX": "-1"}, 4, "--split auto: JOB_COMPLETION_INDEX='-1': expected a whole number >= 0"),
    ({"SLURM_ARRAY_TASK_ID": "3"}, None, "--split auto: Slurm job array (SLURM_ARRAY_TASK_ID=3): "
                                         "SLURM_ARRAY_TASK_COUNT is not set and no --splits (or SITEMAPCRAWL_SPLITS) "
                                         "gives the task count"),
    # --array=1-4 read without its minimum would be 4/4; with it, task 3 of 4. A list (--array=1,5) has a gap:
    ({"SLURM_ARRAY_TASK_ID": "5", "SLURM_ARRAY_TASK_COUNT": "2", "SLURM_ARRAY_TASK_MIN": "1"}, None,
     "--split auto: SLURM_ARRAY_TASK_ID=5 (task 4 from 1) is not below SLURM_ARRAY_TASK_COUNT=2"),
    ({"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "2", "SLURM_ARRAY_TASK_MIN": "1"}, None,
     "--split auto: SLURM_ARRAY_TASK_ID=0 is not SLURM_ARRAY_TASK_MIN=1 plus a multiple of the step 1"),
    ({"SLURM_ARRAY_TASK_ID": "15", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_MIN": "0",
      "SLURM_ARRAY_TASK_STEP": "10"}, None, "--split auto: SLURM_ARRAY_TASK_ID=15 is not SLURM_ARRAY_TASK_MIN=0 plus "
                                            "a multiple of the step 10"),
    ({"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "0"}, None,
     "--split auto: SLURM_ARRAY_TASK_COUNT='0': expected a whole number >= 1"),
    ({"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "4"}, 8,
     "--split auto: --splits (or SITEMAPCRAWL_SPLITS) 8 disagrees with SLURM_ARRAY_TASK_COUNT=4"),
    ({"AWS_BATCH_JOB_ARRAY_INDEX": "10", "AWS_BATCH_JOB_ARRAY_SIZE": "10"}, None,
     "--split auto: AWS_BATCH_JOB_ARRAY_INDEX=10 is not below AWS_BATCH_JOB_ARRAY_SIZE=10"),
    ({"AWS_BATCH_JOB_ARRAY_INDEX": "1", "AWS_BATCH_JOB_ARRAY_SIZE": "1e3"}, None,
     "--split auto: AWS_BATCH_JOB_ARRAY_SIZE='1e3': expected a whole number >= 1"),
    ({"AWS_BATCH_JOB_ARRAY_INDEX": "1", "AWS_BATCH_JOB_ARRAY_SIZE": "10000"}, None,
     "--split auto: AWS_BATCH_JOB_ARRAY_SIZE=10000: at most 256 splits"),
    ({"CLOUD_RUN_TASK_INDEX": "0"}, None, "--split auto: Cloud Run job (CLOUD_RUN_TASK_INDEX=0): "
                                          "CLOUD_RUN_TASK_COUNT is not set"),
    ({"CLOUD_RUN_TASK_INDEX": "1", "CLOUD_RUN_TASK_COUNT": "4", "JOB_COMPLETION_INDEX": "2"}, 4,
     "--split auto: the Kubernetes Indexed Job variables say 2/4 but the Cloud Run job variables say 1/4"),
])
def test_missing_wrong_and_disagreeing_variables_are_one_line(environ: dict[str, str], splits: int | None,
                                                              message: str) -> None:
    with pytest.raises(UsageError) as caught:
        split_from_scheduler(environ, splits)
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(("name", "value", "others"), [
    ("JOB_COMPLETION_INDEX", "\u00b2", {}),  # superscript two: str.isdigit says yes, int() says no
    ("JOB_COMPLETION_INDEX", "\u0663", {}),  # Arabic-Indic three: int() would take it as 3
    ("SLURM_ARRAY_TASK_STEP", "\u00b2", {"SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_COUNT": "4",
                                         "SLURM_ARRAY_TASK_MIN": "0"}),
    ("AWS_BATCH_JOB_ARRAY_SIZE", "\u00b3", {"AWS_BATCH_JOB_ARRAY_INDEX": "1"}),
    ("CLOUD_RUN_TASK_COUNT", "4" * 5_000, {"CLOUD_RUN_TASK_INDEX": "1"}),
    ("CLOUD_RUN_TASK_INDEX", "0" * 10 + "1", {"CLOUD_RUN_TASK_COUNT": "2"}),  # past the bound, however small
    ("JOB_COMPLETION_INDEX", "\uff11", {}),  # fullwidth one
])
def test_only_a_few_ascii_digits_make_a_number(name: str, value: str, others: dict[str, str]) -> None:
    with pytest.raises(UsageError) as caught:
        split_from_scheduler({**others, name: value}, 4)
    message = str(caught.value)
    assert message.startswith(f"--split auto: {name}=") and "expected a whole number" in message
    assert "\n" not in message and len(message) < 200  # a 5,000-digit value is not repeated back


@pytest.mark.parametrize(("args", "env", "message"), [
    (["crawl", "--split", "auto"], {}, "--split auto: no batch scheduler's task index is set"),
    (["generate", "--batch-id", "b1", "--split", "auto"],
     {"SLURM_ARRAY_TASK_ID": "5", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_MIN": "1"},
     "--split auto: SLURM_ARRAY_TASK_ID=5 (task 4 from 1) is not below SLURM_ARRAY_TASK_COUNT=4"),
    (["parse", "--batch", "b1", "--split", "auto"], {"JOB_COMPLETION_INDEX": "1"},
     "--split auto: Kubernetes Indexed Job (JOB_COMPLETION_INDEX=1): no --splits"),
    (["updatedb", "--batch", "b1", "--split", "auto", "--splits", "2"],
     {"JOB_COMPLETION_INDEX": "1", "SITEMAPCRAWL_SPLITS": "3"},  # the flag wins over the setting: 1/2, then
     None),
    (["parse", "--batch", "b1", "--split", "0/2", "--splits", "2"], {},
     "--splits N goes with --split auto"),
    (["crawl", "--split", "auto"], {"JOB_COMPLETION_INDEX": "\u00b2", "SITEMAPCRAWL_SPLITS": "4"},
     "--split auto: JOB_COMPLETION_INDEX='\u00b2': expected a whole number >= 0"),
    (["crawl", "--split", "auto"], {"AWS_BATCH_JOB_ARRAY_INDEX": "1", "AWS_BATCH_JOB_ARRAY_SIZE": "9" * 5_000},
     "--split auto: AWS_BATCH_JOB_ARRAY_SIZE='99999"),
    (["crawl", "--split", "auto"], {"CLOUD_RUN_TASK_INDEX": "0", "CLOUD_RUN_TASK_COUNT": "2",
                                    "SITEMAPCRAWL_SPLITS": "4"},
     "--split auto: --splits (or SITEMAPCRAWL_SPLITS) 4 disagrees with CLOUD_RUN_TASK_COUNT=2"),
])
def test_the_commands_refuse_a_bad_split_auto_in_one_line_before_touching_hbase(
        args: list[str], env: dict[str, str], message: str | None) -> None:
    cleared = {s.index: "" for s in SCHEDULERS} | {"SITEMAPCRAWL_SPLITS": ""}
    # Nothing listens on port 1: a command that got past its split would fail on HBase, exit 2 naming it.
    done = CliRunner().invoke(app, ["--hbase", "127.0.0.1:1", "--user-agent", "t/1", *args], env=cleared | env)
    assert done.exit_code == 2
    lines = done.stderr.strip().splitlines()
    if message is None:
        assert "127.0.0.1:1" in done.stderr and "--split" not in done.stderr
    else:
        assert len(lines) == 1 and lines[0].startswith(f"sitemapcrawl: error: {message}"), done.stderr
