"""Batches and the runners of their splits: who holds which work, and who runs it.

`registry` records each batch (its members, phases, counts) in the batch
table; `leases` lets one worker at a time hold a split of a phase, by
check-and-put in HBase, so a rerun or a second machine is safe; `workers`
runs the N splits of a phase as local processes and merges their counts.
"""

__all__ = ["leases", "registry", "workers"]
