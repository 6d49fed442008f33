"""`--split auto`: this task's split K/N, from the variables a batch scheduler sets.

Kubernetes Indexed Jobs set `JOB_COMPLETION_INDEX` (no count: N is the
`splits` setting, `--splits N` or `SITEMAPCRAWL_SPLITS`, the Job's
`completions`); Slurm job arrays `SLURM_ARRAY_TASK_ID` and `_COUNT` (K is
counted from `_MIN` in steps of `_STEP`, so `--array=1-8` is 0/8..7/8); AWS
Batch array jobs `AWS_BATCH_JOB_ARRAY_INDEX` and `_SIZE`; Cloud Run jobs
`CLOUD_RUN_TASK_INDEX` and `_COUNT`. A scheduler whose count is missing takes
`splits` too. Values are ASCII digits, at most `MAX_DIGITS` of them. Missing,
non-numeric or inconsistent values (K >= N, `splits` disagreeing with the
scheduler's count, two schedulers disagreeing) are one UsageError line naming
the variables. Pure: the environment is handed in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sitemapcrawl.errors import UsageError
from sitemapcrawl.model.splits import BUCKETS, Split

__all__ = ["SCHEDULERS", "Scheduler", "split_from_scheduler"]


@dataclass(frozen=True)
class Scheduler:
    """A batch scheduler's names for a task's index and the task count."""

    name: str
    index: str
    count: str | None
    first: str | None = None
    """The variable holding the first index, when indexes need not start at 0 (Slurm)."""
    step: str | None = None
    """The variable holding the step between indexes (Slurm's `--array=0-30:10`)."""


SCHEDULERS = (
    Scheduler("Kubernetes Indexed Job", "JOB_COMPLETION_INDEX", None),
    Scheduler("Slurm job array", "SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN",
              "SLURM_ARRAY_TASK_STEP"),
    Scheduler("AWS Batch array job", "AWS_BATCH_JOB_ARRAY_INDEX", "AWS_BATCH_JOB_ARRAY_SIZE"),
    Scheduler("Cloud Run job", "CLOUD_RUN_TASK_INDEX", "CLOUD_RUN_TASK_COUNT"),
)

_SPLITS = "--splits (or SITEMAPCRAWL_SPLITS)"


#: Most digits a scheduler variable may have: more than any index or count, few enough to show in one line.
MAX_DIGITS = 9


def _number(environ: Mapping[str, str], name: str, smallest: int) -> int:
    """The value of variable `name` as a whole number >= `smallest`: ASCII digits only, at most MAX_DIGITS
    (`str.isdigit` also takes `²` and `٣`); UsageError, one line with the value cut short, otherwise."""
    text = environ[name].strip()
    if not (0 < len(text) <= MAX_DIGITS and text.isascii() and text.isdigit()) or int(text) < smallest:
        shown = repr(text if len(text) <= 40 else text[:37] + "...")
        raise UsageError(f"--split auto: {name}={shown}: expected a whole number >= {smallest} "
                         f"(ASCII digits, at most {MAX_DIGITS})")
    return int(text)


def _split_of(scheduler: Scheduler, environ: Mapping[str, str], splits: int | None) -> Split:
    """K/N from one scheduler's variables (its index variable is set)."""
    index = _number(environ, scheduler.index, 0)
    shown = f"{scheduler.index}={index}"
    if scheduler.first is not None and environ.get(scheduler.first, "").strip():
        first = _number(environ, scheduler.first, 0)
        step = 1
        if scheduler.step is not None and environ.get(scheduler.step, "").strip():
            step = _number(environ, scheduler.step, 1)
        if index < first or (index - first) % step:
            raise UsageError(f"--split auto: {shown} is not {scheduler.first}={first} plus a multiple of "
                             f"the step {step}")
        index = (index - first) // step
        shown += f" (task {index} from {first})"
    if scheduler.count is not None and environ.get(scheduler.count, "").strip():
        count = _number(environ, scheduler.count, 1)
        if splits is not None and splits != count:
            raise UsageError(f"--split auto: {_SPLITS} {splits} disagrees with {scheduler.count}={count}")
        counted = f"{scheduler.count}={count}"
    elif splits is not None:
        count, counted = splits, f"{_SPLITS} {splits}"
    else:
        missing = f"{scheduler.count} is not set and " if scheduler.count else ""
        raise UsageError(f"--split auto: {scheduler.name} ({shown}): {missing}no {_SPLITS} gives the task count")
    if count > BUCKETS:
        raise UsageError(f"--split auto: {counted}: at most {BUCKETS} splits")
    if index >= count:
        raise UsageError(f"--split auto: {shown} is not below {counted} (a {scheduler.name} of {count} tasks "
                         f"counts them from 0 to {count - 1})")
    return Split(index, count)


def split_from_scheduler(environ: Mapping[str, str], splits: int | None = None) -> Split:
    """This task's split, from the batch scheduler variables in `environ` (see the module docstring).

    `splits` is the task count the user gave (`--splits`, `SITEMAPCRAWL_SPLITS`): the count for
    Kubernetes, and a check for the others. Raises UsageError (one line) when no scheduler's index is
    set, or when what is set is not a consistent K/N.
    """
    found = [(scheduler, _split_of(scheduler, environ, splits)) for scheduler in SCHEDULERS
             if environ.get(scheduler.index, "").strip()]
    if not found:
        names = ", ".join(s.index for s in SCHEDULERS)
        raise UsageError(f"--split auto: no batch scheduler's task index is set ({names}); give --split K/N")
    (first_scheduler, split), *others = found
    for scheduler, other in others:
        if other != split:
            raise UsageError(f"--split auto: the {first_scheduler.name} variables say {split.text()} but the "
                             f"{scheduler.name} variables say {other.text()}")
    return split
