"""What hiapi's thread-count-proof GEMMs cost against OpenBLAS's own threads, train step by
train step.

    python benchmarks/gemm_bands.py [--rounds 6] [--steps 20] [--workloads mnist_mlp,mlp]
                                    [--backends numpy,numba]

``backends/gemm_bands.py`` runs every matrix product whose bits BLAS would change with the
thread count whole on more than one thread and on one in the blocks of ``k`` that BLAS's
threaded driver sums (``backends/threaded_blocks.py``), or cut along ``k`` into pieces that do
not change (``backends/k_pieces.py``) or, failing that, in bands fixed by the shape, each one single-threaded BLAS call on hiapi's threads, so
the bits do not depend on the thread count (and fit's thread tuner may run in seeded scripts).
OpenBLAS's own threads share the packed operands, make one pass over the output and split
without a dispatch through Python, so this may cost something: this times the same compiled
train step with the products as the tuner runs them ("banded") and handed whole to OpenBLAS
at the same thread count (``gemm_bands.enable`` switched on and off), alternating
blocks of ``--steps`` steps ``--rounds`` times in one process per backend, so a noisy
neighbour hits both alike. One JSON line per (workload, backend): medians and their ratio.

    mnist_mlp  examples/mnist_mlp.py's model, 784-512-10, batch 128
    mlp        benchmarks/train_step.py's MLP, 784-1024-1024-10, batch 256
    convnet    train_step.py's Keras MNIST convnet, batch 128 (its gradients' GEMMs are banded too)
"""
import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import train_step  # noqa: E402  (the models and their compiled step, shared with train_step.py)

train_step.BATCH["mnist_mlp"], train_step.INPUT["mnist_mlp"] = 128, (784,)
_train_step_model = train_step.hiapi_model


def hiapi_model(workload):
    """train_step.py's models, and examples/mnist_mlp.py's (784-512-10) as ``mnist_mlp``."""
    if workload != "mnist_mlp":
        return _train_step_model(workload)
    import hiapi
    from hiapi import layers
    return hiapi.Sequential([hiapi.Input(shape=(784,)), layers.Dense(512, activation="relu"),
                             layers.Dense(10)])


train_step.hiapi_model = hiapi_model


def measure(workload, backend, rounds, steps):
    step = train_step.hiapi_step(workload, backend)     # seeded, compiled, SGD with momentum
    import hiapi
    from hiapi.backends import gemm_bands
    times = {"bands": [], "whole": []}
    for _ in range(3):
        step()
    for _ in range(rounds):
        for name, banded in (("bands", True), ("whole", False)):
            gemm_bands._enabled = banded        # what fit's thread tuner turns on
            step()                              # one untimed step after the switch
            for _ in range(steps):
                start = time.perf_counter()
                step()
                times[name].append(time.perf_counter() - start)
    return {"threads": hiapi.threads.active_threads(), **times}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--workloads", default="mnist_mlp,mlp")
    parser.add_argument("--backends", default="numpy,numba")
    parser.add_argument("--one", nargs=2, metavar=("WORKLOAD", "BACKEND"))
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(*args.one, args.rounds, args.steps)))
        return
    for workload in args.workloads.split(","):
        for backend in args.backends.split(","):
            out = subprocess.run([sys.executable, __file__, "--one", workload, backend,
                                  "--rounds", str(args.rounds), "--steps", str(args.steps)],
                                 capture_output=True, text=True, check=True)
            run = json.loads(out.stdout.strip().splitlines()[-1])
            bands, whole_ = (float(np.median(run[k])) for k in ("bands", "whole"))
            print(json.dumps({"workload": workload, "backend": backend, "threads": run["threads"],
                              "bands_ms": round(1000 * bands, 2),
                              "openblas_threads_ms": round(1000 * whole_, 2),
                              "bands_over_openblas": round(bands / whole_, 3),
                              "steps_each": len(run["bands"]),
                              "load_average": round(os.getloadavg()[0], 2)}), flush=True)


if __name__ == "__main__":
    main()
