"""What the collective stall inspector (``hiapi.distribute.watchdog``) costs per collective.

    mpiexec -n 2 python benchmarks/stall_inspector.py

For 4 KB and 4 MB float32 arrays, times (median of interleaved rounds, a barrier before each
call) a blocking allreduce and a non-blocking iallreduce + wait through the MPICommunicator
with the watchdog watching and with it switched off, plus mpi4py's bare ``Allreduce``. Rank 0
prints one JSON line per size and kind: microseconds each way (median over rounds of each
round's median) and the overhead as the median over rounds of the paired difference, which
other jobs slowing the machine for a while affect least. The bookkeeping alone (no MPI) is
timed with timeit, since on a busy machine it is below the collectives' noise.
"""
import json
import time
import timeit

import numpy as np
from mpi4py import MPI

from hiapi.distribute import MPICommunicator


def one_call(communicator, array, kind):
    communicator.comm.Barrier()
    start = time.perf_counter()
    if kind == "allreduce":
        communicator.allreduce(array)
    elif kind == "iallreduce":
        communicator.iallreduce(array).wait()
    else:
        communicator.comm.Allreduce(MPI.IN_PLACE, array, op=MPI.SUM)
    return time.perf_counter() - start


def main(rounds=30, calls=40):
    communicator = MPICommunicator()
    watchdog = communicator.watchdog
    assert watchdog is not None, "run under mpiexec with HIAPI_COLLECTIVE_TIMEOUT unset"
    for nbytes in (4 << 10, 4 << 20):
        array = np.ones(nbytes // 4, np.float32)
        for kind in ("allreduce", "iallreduce"):
            times = {"watched": [], "unwatched": [], "bare mpi4py": []}
            for _ in range(rounds):
                for label in times:                      # interleaved: same machine state
                    communicator.watchdog = None if label == "unwatched" else watchdog
                    mode = "bare" if label == "bare mpi4py" else kind
                    times[label].append(np.median([one_call(communicator, array, mode)
                                                   for _ in range(calls)]))
            communicator.watchdog = watchdog
            if communicator.rank == 0:
                us = {k: round(float(np.median(v)) * 1e6, 2) for k, v in times.items()}
                paired = float(np.median(np.subtract(times["watched"], times["unwatched"])))
                print(json.dumps({"bytes": nbytes, "kind": kind, "median_us": us,
                                  "overhead_us": round(paired * 1e6, 2),
                                  "overhead_pct": round(100 * paired * 1e6 / us["unwatched"],
                                                        2)}), flush=True)
    if communicator.rank == 0:
        print(json.dumps({"bookkeeping_ns": bookkeeping_ns(watchdog)}), flush=True)


def bookkeeping_ns(watchdog, number=200000):
    """The watchdog's own work per collective, without MPI."""
    array = np.ones(4, np.float32)

    def blocking():
        watchdog.enter("allreduce", array)
        watchdog.current = None

    def non_blocking():                 # what MPICommunicator.iallreduce does, inline
        watchdog.started += 1
        number = watchdog.started
        watchdog.last = (number, "iallreduce", array, watchdog.progress)

        def wait():
            watchdog.current = (number, "wait for iallreduce", array, watchdog.progress)
            watchdog.current = None
        wait()
    return {name: round(min(timeit.repeat(f, number=number, repeat=5)) / number * 1e9)
            for name, f in (("blocking", blocking), ("non_blocking", non_blocking))}


if __name__ == "__main__":
    main()
