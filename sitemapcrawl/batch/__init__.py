"""Batches and the runners of their splits: who holds which work, and who runs it.

`registry` records each batch (its members, phases, counts) in the batch
table; `leases` lets one worker at a time hold a split of a phase, by
check-and-put in HBase, so a rerun or a second machine is safe; `calls`
is one split of one phase as a plain picklable call, what every runner
receives; `workers` is the runner interface of a phase's splits and its
local back end (N processes, their counts merged); `dask_runner` the Dask
back end (`--dask`).
"""

__all__ = ["calls", "dask_runner", "leases", "registry", "workers"]
