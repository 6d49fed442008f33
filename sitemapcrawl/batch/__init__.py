"""Batches and the runners of their splits: who holds which work, and who runs it.

`registry` records each batch (its members, phases, counts) in the batch
table; `leases` lets one worker at a time hold a split of a phase, by
check-and-put in HBase, so a rerun or a second machine is safe; `calls`
is one split of one phase as a plain picklable call, what every runner
receives; `workers` is the runner interface of a phase's splits and its
local back end (N processes, their counts merged); `dask_runner` the Dask
back end (`--dask`).
"""

#: What other packages may use of this one, module by module (tests/unit/test_layout.py refuses any other
#: name): a module or a name not here is this package's own.
FACE: dict[str, tuple[str, ...]] = {
    "calls": ("BatchSplit", "SplitTask", "StageUpdate", "Work", "as_dict"),
    "dask_runner": ("DaskRunner", "INSTALL_HINT", "check_address", "connect"),
    "leases": ("Lease",),
    "registry": (
        "BatchState", "FETCH", "PARSE", "SPREAD", "UPDATE", "barrier", "begin_generating", "begun_splits",
        "end_generating", "every_batch", "fetch_split_names", "finish_generating", "forget_generating",
        "generated_within", "holding", "missing_splits", "phase_split_name", "read_batch", "record_done",
        "record_generated", "release", "require_batch", "too_old", "unfinished", "working_on",
    ),
    "workers": (
        "Channel", "Pool", "Runner", "WorkerResults", "merge_counts", "raise_failed", "run_splits", "sub_splits",
        "tasks_wait", "top_n_of_split",
    ),
}
