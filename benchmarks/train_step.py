"""Train-step time of hiapi (numpy and numba backends) against PyTorch on the CPU, one run.

    python benchmarks/train_step.py            # needs torch (CPU build), e.g. torch==2.13.0

Workloads: MLP 784-1024-1024-10 at batch 256 and the Keras MNIST convnet at batch 128, SGD with
momentum, 2 threads. Each backend runs in its own process; one JSON line per (workload,
framework) with the median and min-max of the step time, peak RSS and, for hiapi, the ratio to
torch measured in the same run. The MLP line also gives the fraction of this machine's GEMM peak.
"""
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

STEPS, WARMUP = 20, 3


def hiapi_steps(workload, backend):
    os.environ["HIAPI_BACKEND"] = backend
    import hiapi
    from hiapi import layers
    hiapi.utils.set_random_seed(0)
    if workload == "mlp":
        model = hiapi.Sequential([hiapi.Input(shape=(784,)), layers.Dense(1024, activation="relu"),
                                  layers.Dense(1024, activation="relu"), layers.Dense(10)])
        x = np.random.rand(256, 784).astype(np.float32)
    else:
        model = hiapi.Sequential([
            hiapi.Input(shape=(28, 28, 1)), layers.Conv2D(32, 3, activation="relu"),
            layers.MaxPooling2D(), layers.Conv2D(64, 3, activation="relu"),
            layers.MaxPooling2D(), layers.Flatten(), layers.Dropout(0.5), layers.Dense(10)])
        x = np.random.rand(128, 28, 28, 1).astype(np.float32)
    y = np.random.randint(0, 10, len(x))
    model.compile(optimizer=hiapi.optimizers.SGD(0.01, momentum=0.9),
                  loss=hiapi.losses.SparseCategoricalCrossentropy(from_logits=True))
    return lambda: model.train_on_batch(x, y)


def torch_steps(workload):
    import torch
    torch.set_num_threads(2)
    torch.manual_seed(0)
    nn = torch.nn
    if workload == "mlp":
        model = nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                              nn.Linear(1024, 10))
        x = torch.rand(256, 784)
    else:
        model = nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                              nn.Dropout(0.5), nn.Linear(1600, 10))
        x = torch.rand(128, 1, 28, 28)
    y = torch.randint(0, 10, (len(x),))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step():
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
    return step


def measure(workload, framework):
    step = torch_steps(workload) if framework == "torch" else hiapi_steps(workload, framework)
    for _ in range(WARMUP):
        step()
    times = []
    for _ in range(STEPS):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return {"workload": workload, "framework": framework,
            "median_ms": 1000 * float(np.median(times)),
            "min_max_ms": [1000 * min(times), 1000 * max(times)],
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def gemm_peak_gflops():
    a = np.random.rand(1024, 1024).astype(np.float32)
    np.matmul(a, a)
    best = min(_time(lambda: np.matmul(a, a)) for _ in range(5))
    return 2 * 1024**3 / best / 1e9


def _time(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


MLP_FLOP = 2 * 256 * (784 * 1024 + 1024 * 1024 + 1024 * 10) * 3


def main():
    if len(sys.argv) == 3:
        print(json.dumps(measure(*sys.argv[1:])))
        return
    env = {**os.environ, "OMP_NUM_THREADS": "2", "NUMBA_NUM_THREADS": "2"}
    peak = gemm_peak_gflops()
    for workload in ("mlp", "convnet"):
        runs = {}
        for framework in ("torch", "numpy", "numba"):
            out = subprocess.run([sys.executable, __file__, workload, framework],
                                 capture_output=True, text=True, env=env, check=True)
            runs[framework] = json.loads(out.stdout.strip().splitlines()[-1])
        for framework, run in runs.items():
            run["over_torch"] = round(run["median_ms"] / runs["torch"]["median_ms"], 3)
            if workload == "mlp":
                run["fraction_of_gemm_peak"] = round(
                    MLP_FLOP / (run["median_ms"] / 1000) / 1e9 / peak, 3)
                run["gemm_peak_gflops"] = round(peak, 1)
            print(json.dumps(run), flush=True)


if __name__ == "__main__":
    main()
