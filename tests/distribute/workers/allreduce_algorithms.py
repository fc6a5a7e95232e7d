"""Each rank checks every allreduce algorithm (blocking and non-blocking) against numpy, and
writes what ``auto`` picks per size (``report_<rank>.json`` in the folder given) so the test
can check every rank picked the same, with the tuner's real timings and with injected ones that
differ between ranks."""
import json
import sys
import warnings
from pathlib import Path

import numpy as np

from hiapi.distribute import MPICommunicator
from hiapi.distribute.algorithms import ALGORITHMS, SharedMemoryAllreduce, node_communicator
from hiapi.distribute.algorithms.auto import AutoAllreduce
from hiapi.distribute.algorithms.tuner import Tuner

comms = {name: MPICommunicator(algorithm=name) for name in ALGORITHMS
         if name not in ("shared_memory", "shared_direct", "zero_copy") or node_communicator(
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
for name, comm in comms.items():                  # rounding differs by order: every rank alike
    noisy = np.random.default_rng(rank).standard_normal(300007).astype(np.float32)
    digests = comms["native"].comm.allgather(comm.allreduce(noisy).tobytes())
    assert all(d == digests[0] for d in digests), f"{name}: ranks hold different sums"
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
if "zero_copy" in comms:                           # arrays in shared memory: summed in place
    zero_copy = comms["zero_copy"]
    for length, dtype in ((1, np.float32), (7, np.int32), (70001, np.float64), (300007, np.float32)):
        shared = zero_copy.shared_array(length, dtype)
        assert zero_copy.allreducer.arrays.peers(shared) is not None
        expected = sum(mine(r, length, dtype) for r in range(size)).astype(dtype)
        for step in range(3):                        # the same buffer, step after step
            shared[:] = mine(rank, length, dtype) * (step + 1)
            assert zero_copy.allreduce(shared) is shared
            assert np.array_equal(shared, expected * (step + 1)), (length, dtype, step)
        shared[:] = mine(rank, length, dtype)
        assert np.array_equal(zero_copy.iallreduce(shared).wait(), expected)
        part = shared[: length // 2 + 1]               # a view into the allocation
        part[:] = mine(rank, len(part), dtype)
        assert np.array_equal(zero_copy.allreduce(part), expected[:len(part)])
    matrix = zero_copy.shared_array(12, np.float64).reshape(3, 4)
    matrix[:] = np.arange(12).reshape(3, 4) * (rank + 1)
    assert np.array_equal(zero_copy.allreduce(matrix),
                          np.arange(12).reshape(3, 4) * sum(range(1, size + 1)))
    assert comms["native"].shared_array(4, np.float32) is None    # no shared memory to offer
    first, second = (zero_copy.shared_array(64, np.float32) for _ in range(2))
    for _ in range(20):      # again and again: a rank that raised and went on to its next call
        for passed in (first if rank else second, np.ones(64, np.float32) if rank else first):
            try:                                 # ranks passing different arrays: all raise
                zero_copy.allreduce(passed)
                raise AssertionError("zero_copy summed different arrays on different ranks")
            except RuntimeError as error:
                assert "passed different arrays" in str(error), error
        first[:] = rank + 1                       # and the next call is whole again
        assert np.array_equal(zero_copy.allreduce(first), np.full(64, size * (size + 1) / 2))
    # sub-communicators that allocated different numbers of arrays (ranks of one parity
    # one, the others two) must not make the next allocation over all ranks look different
    from hiapi.distribute.algorithms import ZeroCopyAllreduce
    halves = ZeroCopyAllreduce(comms["native"].comm.Split(rank % 2, rank))
    for _ in range(1 + rank % 2):
        halves.allocate(8, np.float32)
    after = zero_copy.shared_array(64, np.float32)
    after[:] = rank + 1
    assert np.array_equal(zero_copy.allreduce(after), np.full(64, size * (size + 1) / 2))
    # one rank passes a shared array, the others their own, for which the scratch array
    # must first grow (a collective the first rank does not make): all raise, none hangs
    fresh = MPICommunicator(algorithm="zero_copy")
    bucket = fresh.shared_array(64, np.float32)
    try:
        fresh.allreduce(bucket if rank == 0 else np.ones(1 << 16, np.float32))
        raise AssertionError("zero_copy summed a shared and a private array")
    except RuntimeError as error:
        assert "passed different arrays" in str(error), error
    bucket[:] = rank + 1                          # and the next call is whole again
    assert np.array_equal(fresh.allreduce(bucket), np.full(64, size * (size + 1) / 2))
auto = comms["auto"].allreducer
picks = {n: auto.choose(n).name for n in (8, 4 << 10, 256 << 10, 4 << 20, 64 << 20)}


def disagreeing_timer(algorithms, array, rounds):
    """Rank 0 measures the model's best non-native candidate fastest, the others its second:
    only the MAX over ranks makes them agree (on the second)."""
    return [[1.0, 0.5 if rank == 0 else 1.4, 0.9 if rank == 0 else 0.6] +
            [2.0] * (len(algorithms) - 3)] * rounds


def native_faster_timer(algorithms, array, rounds):
    return [[1.0] + [1.2 + rank] * (len(algorithms) - 1)] * rounds


injected = {}
for label, timer in (("disagreeing", disagreeing_timer), ("native_faster", native_faster_timer)):
    tuned = AutoAllreduce(auto.comm, comms["native"].comm, candidates=auto.candidates,
                          costs=auto.costs, tuner=Tuner(comms["native"].comm, timer=timer))
    chosen = tuned.choose(1 << 20)
    values = mine(rank, 1 << 18, np.float32)               # the pick really runs: no deadlock
    np.testing.assert_array_equal(chosen(values), sum(mine(r, 1 << 18, np.float32)
                                                      for r in range(size)))
    injected[label] = {"picked": chosen.name,
                       "shortlist": [a.name for a in tuned.shortlist(1 << 20)]}
report = {"rank": rank, "picks": picks, "injected": injected,
          "hierarchical_nodes": comms["hierarchical"].allreducer.local_size}
(Path(sys.argv[1]) / f"report_{rank}.json").write_text(json.dumps(report))
