"""Where a ``zero_copy`` allreduce's time goes, at 1, 4 and 16 MB: fences, bytes, Python.

    .venv/bin/mpiexec -n 2 .venv/bin/python benchmarks/zero_copy_profile.py [--rounds 20]

Each call on an array in shared memory is timed in its phases: the first fence (waiting for
every rank's data), the sum-and-push of this rank's slice (numpy), the second fence (waiting
for every slice), and what ``MPICommunicator.allreduce`` adds around the algorithm (the
watchdog, the background runner, ``auto``'s lookup). The numpy phase is split further: its
numpy calls times the cost of one call on a one-element block (Python and numpy's dispatch),
and the rest is moving bytes, given as GB/s of the 2n bytes a rank reads and writes. MPI's
native allreduce is timed in the same rounds for reference. Rank 0 prints one JSON line per
size (medians over the rounds, microseconds) and the load average.
"""
import argparse
import json
import os
import time

import numpy as np

SIZES = (1 << 20, 4 << 20, 16 << 20)


class PhaseTimed:
    """``zero_copy``'s call (``ZeroCopyAllreduce._reduce``) with a clock between its phases."""

    def __init__(self, algorithm):
        from hiapi.distribute.algorithms.zero_copy import reduce_and_push
        from hiapi.distribute.ring import segment_bounds
        self.algorithm, self.reduce, self.bounds = algorithm, reduce_and_push, segment_bounds

    def __call__(self, array):
        algorithm, clock = self.algorithm, time.perf_counter
        copies = algorithm.arrays.peers(array)
        bounds = self.bounds(len(array), algorithm.size)
        block = max(1, algorithm.block_bytes // array.itemsize)
        t0 = clock()
        algorithm.fence()
        t1 = clock()
        self.reduce(copies, algorithm.rank, bounds[algorithm.rank], bounds[algorithm.rank + 1],
                    block)
        t2 = clock()
        algorithm.fence()
        t3 = clock()
        return t1 - t0, t2 - t1, t3 - t2


def numpy_calls(nbytes, size, block_bytes):
    """The numpy calls one rank makes for ``nbytes``: per block, P-1 adds and P-1 copies."""
    blocks = -(-(nbytes // size) // block_bytes)
    return blocks * 2 * (size - 1)


def per_call_overhead(size):
    """Seconds of one numpy add or copy on one element (what each call costs beyond bytes)."""
    a, b = np.zeros(1, np.float32), np.zeros(1, np.float32)
    start = time.perf_counter()
    for _ in range(2000):
        np.add(a, b, out=a)
        np.copyto(b, a)
    return (time.perf_counter() - start) / 4000


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    from hiapi.distribute import MPICommunicator
    comm = MPICommunicator(algorithm="zero_copy")
    native = MPICommunicator()
    algorithm = comm.allreducer
    timed = PhaseTimed(algorithm)
    shared = comm.shared_array(SIZES[-1] // 4, np.float32)
    overhead = per_call_overhead(comm.size)
    for nbytes in SIZES:
        array = shared[:nbytes // 4]
        private = np.zeros(nbytes // 4, np.float32)
        comm.allreduce(array)
        native.allreduce(private)
        rows = {"fence_1": [], "sum_and_push": [], "fence_2": [], "algorithm": [],
                "communicator": [], "native": []}
        for _ in range(args.rounds):
            native.barrier()
            first, work, second = timed(array)
            rows["fence_1"].append(first)
            rows["sum_and_push"].append(work)
            rows["fence_2"].append(second)
            native.barrier()
            start = time.perf_counter()
            algorithm(array)
            rows["algorithm"].append(time.perf_counter() - start)
            native.barrier()
            start = time.perf_counter()
            comm.allreduce(array)
            rows["communicator"].append(time.perf_counter() - start)
            native.barrier()
            start = time.perf_counter()
            native.allreduce(private)
            rows["native"].append(time.perf_counter() - start)
        if comm.rank == 0:
            us = {k: round(float(np.median(v)) * 1e6, 1) for k, v in rows.items()}
            calls = numpy_calls(nbytes, comm.size, algorithm.block_bytes)
            python = calls * overhead
            bytes_s = max(np.median(rows["sum_and_push"]) - python, 1e-9)
            print(json.dumps({
                "benchmark": "zero_copy_profile", "ranks": comm.size, "bytes": nbytes,
                "microseconds": us, "numpy_calls": calls,
                "python_and_dispatch_us": round(python * 1e6, 1),
                "moving_bytes_us": round(bytes_s * 1e6, 1),
                "gb_per_s": round(2 * nbytes / bytes_s / 1e9, 1),
                "communicator_adds_us": round(us["communicator"] - us["algorithm"], 1),
                "loadavg": os.getloadavg()[0]}), flush=True)


if __name__ == "__main__":
    main()
