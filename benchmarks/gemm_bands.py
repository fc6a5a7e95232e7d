"""What hiapi's fixed GEMM bands cost against OpenBLAS's own threads, train step by train step.

    python benchmarks/gemm_bands.py [--rounds 6] [--steps 20] [--workloads mnist_mlp,mlp]
                                    [--backends numpy,numba]

``backends/gemm_bands.py`` cuts every matrix product into bands fixed by the shape, each one
single-threaded BLAS call on hiapi's threads, so the bits do not depend on the thread count
(and fit's thread tuner may run in seeded scripts). OpenBLAS's own threads share the packed
operands and split without a dispatch through Python, so the bands may cost something: this
times the same compiled train step with the bands and with the products handed whole to
OpenBLAS at the same thread count (the bands switched on and off), alternating
blocks of ``--steps`` steps ``--rounds`` times in one process per backend, so a noisy
neighbour hits both alike. One JSON line per (workload, backend): medians and their ratio.

    mnist_mlp  examples/mnist_mlp.py's model, 784-512-10, batch 128
    mlp        benchmarks/train_step.py's MLP, 784-1024-1024-10, batch 256
    convnet    the Keras MNIST convnet, batch 128 (its gradients' GEMMs are banded too)
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

BATCH = {"mnist_mlp": 128, "mlp": 256, "convnet": 128}
INPUT = {"mnist_mlp": (784,), "mlp": (784,), "convnet": (28, 28, 1)}


def model_for(workload):
    import hiapi
    from hiapi import layers
    if workload == "mnist_mlp":
        body = [layers.Dense(512, activation="relu"), layers.Dense(10)]
    elif workload == "mlp":
        body = [layers.Dense(1024, activation="relu"), layers.Dense(1024, activation="relu"),
                layers.Dense(10)]
    else:
        body = [layers.Conv2D(32, 3, activation="relu"), layers.MaxPooling2D(),
                layers.Conv2D(64, 3, activation="relu"), layers.MaxPooling2D(),
                layers.Flatten(), layers.Dense(10)]
    return hiapi.Sequential([hiapi.Input(shape=INPUT[workload])] + body)


def measure(workload, backend, rounds, steps):
    os.environ["HIAPI_BACKEND"] = backend
    import hiapi
    from hiapi.backends import gemm_bands
    hiapi.utils.set_random_seed(0)
    model = model_for(workload)
    x = np.random.rand(BATCH[workload], *INPUT[workload]).astype(np.float32)
    y = np.random.randint(0, 10, len(x))
    model.compile(optimizer=hiapi.optimizers.SGD(0.01, momentum=0.9),
                  loss=hiapi.losses.SparseCategoricalCrossentropy(from_logits=True))
    times = {"bands": [], "whole": []}
    for _ in range(3):
        model.train_on_batch(x, y)
    for _ in range(rounds):
        for name, banded in (("bands", True), ("whole", False)):
            gemm_bands._enabled = banded        # what fit's thread tuner turns on
            model.train_on_batch(x, y)                  # one untimed step after the switch
            for _ in range(steps):
                start = time.perf_counter()
                model.train_on_batch(x, y)
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
