"""Train-step time of hiapi (numpy and numba backends) against PyTorch on the CPU, one run.

    python benchmarks/train_step.py [--rounds 3] [--steps 20] [--workloads mlp,convnet,cifar]
                                    [--threads 2]

Needs a CPU build of torch (``pip install torch==2.13.0``). Workloads, SGD with momentum 0.9:

    mlp      MLP 784-1024-1024-10, batch 256
    convnet  the Keras MNIST convnet (Conv32-Pool-Conv64-Pool-Dropout-Dense10), batch 128
    cifar    Conv32-Conv32-Pool-Conv64-Conv64-Pool-Dense512-Dense10 on 32x32x3, batch 64

A framework ``numba-im2col`` (or ``numpy-im2col``) is that backend with ``HIAPI_WINOGRAD=0``:
every convolution as im2col + GEMM, for comparing against the Winograd 3x3 kernels.

Each (workload, framework) runs in its own process, ``--rounds`` times, the frameworks
interleaved round by round so that a noisy neighbour hits all of them alike; every process
warms up, then times ``--steps`` steps. One JSON line per (workload, framework): median and
min-max step time over all rounds, peak RSS, the ratio of medians to torch from the same run,
and for the MLP the fraction of this machine's float32 GEMM peak (measured here, numpy).
Each step's process CPU time is reported too (median, and its ratio to torch's): on a busy
machine a preempted step stretches in wall time but not in CPU time. With ``--threads 1`` CPU
time is the work done; with more threads it also counts the time a thread spins waiting for
the others (OpenBLAS and OpenMP both do), which grows with the load.

Every process gets ``--threads`` threads, 2 by default (``OMP_NUM_THREADS``,
``NUMBA_NUM_THREADS``, torch's ``set_num_threads``) and ``OPENBLAS_THREAD_TIMEOUT=4``: by
default OpenBLAS keeps its threads spinning for ~2^28 cycles after a GEMM, which on 2 cores
takes the CPU away from whatever runs next (numba's threads, or the main thread); hiapi sets
it itself when imported first, the benchmark sets it for every framework alike.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

WARMUP = 3
THREADS = {"OMP_NUM_THREADS": "2", "NUMBA_NUM_THREADS": "2", "OPENBLAS_THREAD_TIMEOUT": "4"}
BATCH = {"mlp": 256, "convnet": 128, "cifar": 64}


def hiapi_model(workload):
    import hiapi
    from hiapi import layers
    if workload == "mlp":
        return hiapi.Sequential([hiapi.Input(shape=(784,)), layers.Dense(1024, activation="relu"),
                                 layers.Dense(1024, activation="relu"), layers.Dense(10)])
    if workload == "convnet":
        return hiapi.Sequential([
            hiapi.Input(shape=(28, 28, 1)), layers.Conv2D(32, 3, activation="relu"),
            layers.MaxPooling2D(), layers.Conv2D(64, 3, activation="relu"),
            layers.MaxPooling2D(), layers.Flatten(), layers.Dropout(0.5), layers.Dense(10)])
    return hiapi.Sequential([
        hiapi.Input(shape=(32, 32, 3)),
        layers.Conv2D(32, 3, padding="same", activation="relu"),
        layers.Conv2D(32, 3, activation="relu"), layers.MaxPooling2D(),
        layers.Conv2D(64, 3, padding="same", activation="relu"),
        layers.Conv2D(64, 3, activation="relu"), layers.MaxPooling2D(),
        layers.Flatten(), layers.Dense(512, activation="relu"), layers.Dense(10)])


def torch_model(workload):
    from torch import nn
    if workload == "mlp":
        return nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                             nn.Linear(1024, 10))
    if workload == "convnet":
        return nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                             nn.Dropout(0.5), nn.Linear(1600, 10))
    return nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 32, 3),
                         nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(),
                         nn.Conv2d(64, 64, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(64 * 6 * 6, 512), nn.ReLU(), nn.Linear(512, 10))


INPUT = {"mlp": (784,), "convnet": (28, 28, 1), "cifar": (32, 32, 3)}   # NHWC for hiapi


def hiapi_step(workload, backend):
    if backend.endswith("-im2col"):         # Winograd off: every convolution as im2col + GEMM
        os.environ["HIAPI_WINOGRAD"] = "0"
        backend = backend[:-len("-im2col")]
    os.environ["HIAPI_BACKEND"] = backend
    import hiapi
    hiapi.utils.set_random_seed(0)
    model = hiapi_model(workload)
    x = np.random.rand(BATCH[workload], *INPUT[workload]).astype(np.float32)
    y = np.random.randint(0, 10, len(x))
    model.compile(optimizer=hiapi.optimizers.SGD(0.01, momentum=0.9),
                  loss=hiapi.losses.SparseCategoricalCrossentropy(from_logits=True))
    return lambda: model.train_on_batch(x, y)


def torch_step(workload):
    import torch
    if "OMP_NUM_THREADS" in os.environ:      # else torch's own choice (ranks_per_node.py)
        torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    torch.manual_seed(0)
    model = torch_model(workload)
    shape = INPUT[workload]
    x = torch.rand(BATCH[workload], *(shape if len(shape) == 1 else (shape[2],) + shape[:2]))
    y = torch.randint(0, 10, (len(x),))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step():
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
    return step


def measure(workload, framework, steps):
    step = torch_step(workload) if framework == "torch" else hiapi_step(workload, framework)
    for _ in range(WARMUP):
        step()
    times, cpu_times = [], []
    for _ in range(steps):
        start, cpu_start = time.perf_counter(), time.process_time()
        step()
        times.append(time.perf_counter() - start)
        cpu_times.append(time.process_time() - cpu_start)
    return {"times": times, "cpu_times": cpu_times,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def gemm_peak_gflops(size=1024):
    a = np.random.rand(size, size).astype(np.float32)
    np.matmul(a, a)
    best = float("inf")
    for _ in range(20):
        start = time.perf_counter()
        np.matmul(a, a)
        best = min(best, time.perf_counter() - start)
    return 2 * size**3 / best / 1e9


MLP_FLOP = 2 * 256 * (784 * 1024 + 1024 * 1024 + 1024 * 10) * 3   # forward + two backward GEMMs


def run_all(workloads, frameworks, rounds, steps):
    env = {**os.environ, **THREADS}
    results = {(w, f): {"times": [], "cpu_times": [], "peak_rss_mb": 0.0}
               for w in workloads for f in frameworks}
    for _ in range(rounds):
        for workload in workloads:
            for framework in frameworks:
                out = subprocess.run([sys.executable, __file__, "--one", workload, framework,
                                      "--steps", str(steps)],
                                     capture_output=True, text=True, env=env, check=True)
                run = json.loads(out.stdout.strip().splitlines()[-1])
                total = results[workload, framework]
                total["times"] += run["times"]
                total["cpu_times"] += run["cpu_times"]
                total["peak_rss_mb"] = max(total["peak_rss_mb"], run["peak_rss_mb"])
    return results


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--workloads", default="mlp,convnet,cifar")
    parser.add_argument("--frameworks", default="torch,numpy,numba")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--one", nargs=2, metavar=("WORKLOAD", "FRAMEWORK"))
    args = parser.parse_args()
    THREADS["OMP_NUM_THREADS"] = THREADS["NUMBA_NUM_THREADS"] = str(args.threads)
    if args.one:
        print(json.dumps(measure(*args.one, args.steps)))
        return
    for name, value in THREADS.items():
        os.environ[name] = value                # the GEMM peak under the same settings
    peak = gemm_peak_gflops()
    workloads, frameworks = args.workloads.split(","), args.frameworks.split(",")
    results = run_all(workloads, frameworks, args.rounds, args.steps)
    for workload in workloads:
        medians = {f: float(np.median(results[workload, f]["times"])) for f in frameworks}
        cpu = {f: float(np.median(results[workload, f]["cpu_times"])) for f in frameworks}
        for framework in frameworks:
            times = results[workload, framework]["times"]
            line = {"workload": workload, "framework": framework, "batch": BATCH[workload],
                    "median_ms": round(1000 * medians[framework], 2),
                    "min_max_ms": [round(1000 * min(times), 2), round(1000 * max(times), 2)],
                    "cpu_median_ms": round(1000 * cpu[framework], 2),
                    "steps_timed": len(times), "threads": args.threads,
                    "load_average": round(os.getloadavg()[0], 2),
                    "peak_rss_mb": round(results[workload, framework]["peak_rss_mb"], 1)}
            if "torch" in medians:
                line["over_torch"] = round(medians[framework] / medians["torch"], 3)
                line["cpu_over_torch"] = round(cpu[framework] / cpu["torch"], 3)
            if workload == "mlp":
                line["fraction_of_gemm_peak"] = round(MLP_FLOP / medians[framework] / 1e9 / peak,
                                                      3)
                line["gemm_peak_gflops"] = round(peak, 1)
            print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
