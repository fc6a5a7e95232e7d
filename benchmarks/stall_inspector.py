"""What the collective stall inspector (``hiapi.distribute.watchdog``) costs per collective.

    mpiexec -n 2 python benchmarks/stall_inspector.py

For 4 KB and 4 MB float32 arrays, times (median of interleaved rounds, a barrier before each
call) a blocking allreduce and a non-blocking iallreduce + wait through the MPICommunicator
with the watchdog watching and with it switched off, plus mpi4py's bare ``Allreduce``. Rank 0
prints one JSON line per size and kind: microseconds each way and the difference.
"""
import json
import time

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
                    times[label] += [one_call(communicator, array, mode) for _ in range(calls)]
            communicator.watchdog = watchdog
            if communicator.rank == 0:
                us = {k: round(float(np.median(v)) * 1e6, 2) for k, v in times.items()}
                print(json.dumps({"bytes": nbytes, "kind": kind, "median_us": us,
                                  "overhead_us": round(us["watched"] - us["unwatched"], 2),
                                  "overhead_pct": round(100 * (us["watched"] / us["unwatched"]
                                                               - 1), 2)}), flush=True)


if __name__ == "__main__":
    main()
