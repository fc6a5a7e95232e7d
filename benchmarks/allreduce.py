"""Allreduce latency and bandwidth, MPI's native algorithm against hiapi's ring, one run.

    mpiexec -n 2 python benchmarks/allreduce.py
    mpiexec -n 4 python benchmarks/allreduce.py

Rank 0 prints one JSON line per message size: median seconds of each algorithm, the "bus
bandwidth" 2(P-1)/P * bytes / time that a bandwidth-optimal allreduce would reach, and the
ratio ring / native (time). Sizes run from 4 KB to 64 MB (float32).
"""
import json
import time

import numpy as np

from hiapi.distribute import MPICommunicator


def median_seconds(comm, array, repeats):
    times = []
    for _ in range(repeats):
        comm.barrier()
        start = time.perf_counter()
        comm.allreduce(array)
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def main():
    native, ring = MPICommunicator(algorithm="native"), MPICommunicator(algorithm="ring")
    size = native.size
    for nbytes in [4 << 10 << (2 * i) for i in range(8)]:          # 4 KB ... 64 MB
        array = np.ones(nbytes // 4, np.float32)
        repeats = 50 if nbytes <= 1 << 20 else 5
        results = {name: median_seconds(comm, array.copy(), repeats)
                   for name, comm in (("native", native), ("ring", ring))}
        if native.rank == 0:
            bus = lambda t: 2 * (size - 1) / size * nbytes / t / 1e9
            print(json.dumps({"benchmark": "allreduce", "ranks": size, "bytes": nbytes,
                              "native_s": results["native"], "ring_s": results["ring"],
                              "native_busbw_GBps": round(bus(results["native"]), 3),
                              "ring_busbw_GBps": round(bus(results["ring"]), 3),
                              "ring_over_native": round(results["ring"] / results["native"],
                                                        3)}), flush=True)


if __name__ == "__main__":
    main()
