"""bench_scale's figure 1c: the HBase JVMs' CPU between two thread snapshots, split by what the threads do.

The split is what the issue 24 note reads to tell write amplification
(compactions and flushes, which follow the bytes stored) from per-call work
(RPC, WAL) and from the JVM warming up (JIT); a thread that ended between
the snapshots must still be counted, in "other", or the parts would not add
up to the process's CPU.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from harness import hbase_cpu_by_activity  # noqa: E402

#: (process, thread id, name, CPU seconds at the first snapshot (None: not yet born), at the second (None:
#: ended)); thread id 0 is the process's total.
THREADS = [
    ("master", 0, "", 100.0, 160.0),
    ("master", 11, "RS:0;127.0.0.1:33217-shortCompactions-0", 10.0, 25.0),
    ("master", 12, "MemStoreFlusher.0", 5.0, 9.0),
    ("master", 13, "RpcServer.default.FPBQ.Fifo.handler=19,queue=1,port=33217", 20.0, 50.0),
    ("master", 14, "short-lived", 1.0, None),
    ("master", 15, "RS:0;127.0.0.1:33217.append-pool-0", None, 2.0),
    ("thrift", 0, "", 30.0, 45.0),
    ("thrift", 21, "thrift-worker-1", 4.0, 12.0),
    ("thrift", 22, "C2 CompilerThread0", 6.0, 9.0),
    ("thrift", 23, "RPCClient-NioEventLoopGroup-1-1", None, 3.0),
]


def _snapshot(at: int) -> dict[tuple[str, int], tuple[str, float]]:
    return {(process, tid): (name, seconds[at]) for process, tid, name, *seconds in THREADS
            if seconds[at] is not None}


def test_threads_are_split_by_activity_and_ended_threads_count_as_other() -> None:
    before, after = _snapshot(0), _snapshot(1)

    spent = hbase_cpu_by_activity(before, after)

    assert spent["compactions"] == pytest.approx(15.0)
    assert spent["flushes"] == pytest.approx(4.0)
    assert spent["RPC"] == pytest.approx(30.0)
    assert spent["WAL"] == pytest.approx(2.0)  # a thread born between the snapshots: all its CPU
    assert spent["JIT"] == pytest.approx(3.0)
    assert spent["thrift"] == pytest.approx(11.0)  # the gateway's own threads
    # master: 60 s in all, 51 s in live threads: 9 s (thread 14, ended) is other; thrift: 15 = 3 + 11 + 1.
    assert spent["other"] == pytest.approx(9.0 + 1.0)
    assert sum(spent.values()) == pytest.approx(60.0 + 15.0)
