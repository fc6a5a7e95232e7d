"""Train-step time of hiapi on the cupy backend against PyTorch on the same NVIDIA GPU, one run.

    python benchmarks/gpu_train_step.py     # needs a GPU, pip install -e '.[cupy]', CUDA torch

Workloads: MLP 784-1024-1024-10 at batch 256 and the Keras MNIST convnet at batch 128, SGD with
momentum, float32 everywhere (TF32 off in both: cupy's GEMMs are full float32 unless CUPY_TF32=1,
and torch's cuDNN convolutions would otherwise use TF32). Each framework runs in its own process.
Both steps copy the batch from host memory (as a data loader feeds them; hiapi's ``fit`` takes
numpy arrays) and the loss back to the host, which waits for the step's GPU work, so wall-clock
time per step is GPU time plus whatever launch overhead the GPU could not hide. One
JSON line per (workload, framework) with the median and min-max step time, the ratio to torch
measured in the same run, and the GPU memory the framework's allocator held; the MLP lines also
give the fraction of this GPU's float32 GEMM peak (a 4096x4096 cupy matmul timed with events).
"""
import json
import os
import subprocess
import sys
import time

import numpy as np

STEPS, WARMUP = 50, 5     # the first steps compile kernels (cupy) or pick algorithms (cuDNN)


def hiapi_steps(workload):
    os.environ["HIAPI_BACKEND"] = "cupy"
    import cupy
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
    return (lambda: model.train_on_batch(x, y)), \
        (lambda: cupy.get_default_memory_pool().total_bytes())


def torch_steps(workload):
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(0)
    nn, device = torch.nn, torch.device("cuda")
    if workload == "mlp":
        model = nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                              nn.Linear(1024, 10))
        x = torch.rand(256, 784)
    else:
        model = nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                              nn.Dropout(0.5), nn.Linear(1600, 10))
        x = torch.rand(128, 1, 28, 28)
    model = model.to(device)
    y = torch.randint(0, 10, (len(x),))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step():
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()
        return loss.item()          # to the host, as hiapi's train_on_batch returns its loss
    return step, torch.cuda.max_memory_reserved


def measure(workload, framework):
    step, memory = torch_steps(workload) if framework == "torch" else hiapi_steps(workload)
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
            "gpu_memory_mb": round(memory() / 2**20, 1)}


def gemm_peak():
    """Best float32 GFLOP/s of a 4096x4096 matmul on this GPU, and the GPU's name."""
    import cupy
    n = 4096
    a = cupy.random.rand(n, n, dtype=cupy.float32)
    b = cupy.random.rand(n, n, dtype=cupy.float32)
    c = cupy.matmul(a, b)
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    best = float("inf")
    for _ in range(10):
        start.record()
        cupy.matmul(a, b, out=c)
        end.record()
        end.synchronize()
        best = min(best, cupy.cuda.get_elapsed_time(start, end) / 1000)
    name = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["name"].decode()
    return {"gemm_peak_gflops": 2 * n**3 / best / 1e9, "device": name}


MLP_FLOP = 2 * 256 * (784 * 1024 + 1024 * 1024 + 1024 * 10) * 3


def missing_requirement():
    """Why this benchmark cannot run here, or None."""
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() == 0:
            raise RuntimeError("no CUDA device")
    except ImportError:
        return "cupy is not installed: pip install -e '.[cupy]'"
    except RuntimeError as error:
        return f"no NVIDIA GPU / CUDA driver is visible to cupy ({error})"
    try:
        import torch
    except ImportError:
        return "torch is not installed: install a CUDA build of torch"
    if not torch.cuda.is_available():
        return f"torch {torch.__version__} sees no GPU (a CPU-only build?)"
    return None


def main():
    if len(sys.argv) == 3:
        print(json.dumps(gemm_peak() if sys.argv[1] == "peak" else measure(*sys.argv[1:])))
        return
    problem = missing_requirement()
    if problem:
        sys.exit(f"gpu_train_step.py needs an NVIDIA GPU with cupy and a CUDA build of torch: "
                 f"{problem}. For the CPU backends, run benchmarks/train_step.py.")

    def child(*args):
        out = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True,
                             check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])

    peak = child("peak", "-")
    for workload in ("mlp", "convnet"):
        runs = {framework: child(workload, framework) for framework in ("torch", "cupy")}
        for framework, run in runs.items():
            run["device"] = peak["device"]
            run["over_torch"] = round(run["median_ms"] / runs["torch"]["median_ms"], 3)
            if workload == "mlp":
                run["fraction_of_gemm_peak"] = round(
                    MLP_FLOP / (run["median_ms"] / 1000) / 1e9 / peak["gemm_peak_gflops"], 3)
                run["gemm_peak_gflops"] = round(peak["gemm_peak_gflops"], 1)
            print(json.dumps(run), flush=True)


if __name__ == "__main__":
    main()
