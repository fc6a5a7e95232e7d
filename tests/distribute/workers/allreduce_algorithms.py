"""Each rank checks every allreduce algorithm (blocking and non-blocking) against numpy, and
writes what ``auto`` picks per size (``report_<rank>.json`` in the folder given) so the test
can check every rank picked the same."""
import json
import sys
import warnings
from pathlib import Path

import numpy as np

from hiapi.distribute import MPICommunicator
from hiapi.distribute.algorithms import ALGORITHMS, SharedMemoryAllreduce, node_communicator

comms = {name: MPICommunicator(algorithm=name) for name in ALGORITHMS
         if name != "shared_memory" or node_communicator(
             MPICommunicator().comm).Get_size() == MPICommunicator().size}
rank, size = comms["native"].rank, comms["native"].size


def mine(r, length, dtype):
    return (np.arange(length) * (r + 1) + r).astype(dtype)


for length in (1, 2, 3, 7, 13, 1001, 4099, 70001):
    for dtype in (np.float32, np.float64, np.int32):
        expected = sum(mine(r, length, dtype) for r in range(size)).astype(dtype)
        for name, comm in comms.items():
            got = comm.allreduce(mine(rank, length, dtype))
            assert np.array_equal(got, expected), (name, length, dtype, got[:4], expected[:4])
            pending = [comm.iallreduce(mine(rank, length, dtype)) for _ in range(3)]
            for request in pending:                      # several in flight, waited in order
                assert np.array_equal(request.wait(), expected), ("i" + name, length, dtype)
matrix = np.arange(12, dtype=np.float64).reshape(3, 4) * (rank + 1)
for name, comm in comms.items():
    assert np.array_equal(comm.allreduce(matrix.copy()),
                          np.arange(12).reshape(3, 4) * sum(range(1, size + 1))), name
with warnings.catch_warnings():                    # overflow is inf, silently, as in MPI
    warnings.simplefilter("error")
    for name, comm in comms.items():
        big = np.full(1001, 3e38, np.float32)
        assert np.isinf(comm.allreduce(big)).all(), name
for name, comm in comms.items():                   # a copy would take the sum: refused
    if name not in ("native", "auto"):
        try:
            comm.allreduce(np.ones((4, 4))[:, ::2])
            raise AssertionError(f"{name}: a strided array was accepted")
        except ValueError as error:
            assert "C-contiguous" in str(error) and name in str(error), error
if "shared_memory" in comms:                       # messages larger than the slots: chunks
    small = SharedMemoryAllreduce(comms["native"].comm.Dup(), chunk_bytes=64 << 10)
    values = mine(rank, 100003, np.float32)
    expected = sum(mine(r, 100003, np.float32) for r in range(size))
    np.testing.assert_array_equal(small(values), expected)
auto = comms["auto"].allreducer
picks = {n: auto.choose(n).name for n in (8, 4 << 10, 256 << 10, 4 << 20, 64 << 20)}
report = {"rank": rank, "picks": picks,
          "hierarchical_nodes": comms["hierarchical"].allreducer.local_size}
(Path(sys.argv[1]) / f"report_{rank}.json").write_text(json.dumps(report))
