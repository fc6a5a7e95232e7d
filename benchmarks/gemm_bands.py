"""What hiapi's thread-count-proof GEMMs cost against OpenBLAS's own threads, train step by
train step.

    python benchmarks/gemm_bands.py [--rounds 6] [--steps 20] [--workloads mnist_mlp,small,mlp]
                                    [--backends numpy,numba]

``backends/gemm_bands.py`` runs every matrix product whose bits BLAS would change with the
thread count whole on more than one thread and on one in the blocks of ``k`` that BLAS's
threaded driver sums (``backends/threaded_blocks.py``), or cut along ``k`` into pieces that do
not change (``backends/k_pieces.py``) or, failing that, in bands fixed by the shape, each one
single-threaded BLAS call, all in one call of BLAS's batched GEMM (``backends/blas_batch.py``)
or on hiapi's chunk workers, so the bits do not depend on the thread count (and fit's thread
tuner may run in seeded scripts). OpenBLAS's own threads share the packed operands, make one
pass over the output and split without a dispatch through Python, so this may cost
something: this times the same compiled train step with the products as the tuner runs them
("bands"), as it ran them before the batched call (``pool``: every band on the chunk
workers) and handed whole to OpenBLAS at the same thread count (``gemm_bands.enable``
switched on and off), alternating blocks of ``--steps`` steps ``--rounds`` times in one
process per backend, so a noisy neighbour hits all alike. One JSON line per (workload,
backend): medians, their ratios, and the median of each round's own ratio (``_paired``).

    mnist_mlp  examples/mnist_mlp.py's model, 784-512-10, batch 128
    small      784-128-10 at Keras's default batch 32 (single products too narrow for two
               256-wide bands)
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

HIDDEN = {"mnist_mlp": 512, "small": 128}
for _name, _batch in (("mnist_mlp", 128), ("small", 32)):
    train_step.BATCH[_name], train_step.INPUT[_name] = _batch, (784,)
_train_step_model = train_step.hiapi_model
VARIANTS = ("bands", "pool", "whole")


def hiapi_model(workload):
    """train_step.py's models, examples/mnist_mlp.py's (784-512-10) as ``mnist_mlp`` and
    784-128-10 as ``small``."""
    if workload not in HIDDEN:
        return _train_step_model(workload)
    import hiapi
    from hiapi import layers
    return hiapi.Sequential([hiapi.Input(shape=(784,)),
                             layers.Dense(HIDDEN[workload], activation="relu"),
                             layers.Dense(10)])


train_step.hiapi_model = hiapi_model


def measure(workload, backend, rounds, steps):
    step = train_step.hiapi_step(workload, backend)     # seeded, compiled, SGD with momentum
    import hiapi
    from hiapi.backends import blas_batch, gemm_bands
    prepare = blas_batch.prepare
    times = {name: [] for name in VARIANTS}
    for _ in range(3):
        step()
    for _ in range(rounds):
        for name in VARIANTS:
            gemm_bands._enabled = name != "whole"       # what fit's thread tuner turns on
            blas_batch.prepare = prepare if name == "bands" else (lambda *args: None)
            gemm_bands._routes.clear()                  # decided again for the variant
            step()                                      # one untimed step after the switch
            block = []
            for _ in range(steps):
                start = time.perf_counter()
                step()
                block.append(time.perf_counter() - start)
            times[name].append(block)
    return {"threads": hiapi.threads.active_threads(), **times}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--workloads", default="mnist_mlp,small,mlp")
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
            median = {name: float(np.median(run[name])) for name in VARIANTS}
            rounds = {name: np.median(run[name], axis=1) for name in VARIANTS}
            line = {"workload": workload, "backend": backend, "threads": run["threads"],
                    "bands_ms": round(1000 * median["bands"], 3),
                    "pool_ms": round(1000 * median["pool"], 3),
                    "openblas_threads_ms": round(1000 * median["whole"], 3)}
            for name in ("bands", "pool"):
                line[f"{name}_over_openblas"] = round(median[name] / median["whole"], 3)
                line[f"{name}_over_openblas_paired"] = round(
                    float(np.median(rounds[name] / rounds["whole"])), 3)
            line.update(steps_each=sum(map(len, run["bands"])),
                        load_average=round(os.getloadavg()[0], 2))
            print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
