"""Train-step time of hiapi on the cupy backend against PyTorch on the same NVIDIA GPU, one run.

    python benchmarks/gpu_train_step.py     # needs a GPU, pip install -e '.[cuda13]', CUDA torch

hiapi runs twice: as users get it ("cupy": each step recorded as a CUDA graph at its third call
and replayed) and with ``HIAPI_CUDA_GRAPHS=0`` ("cupy-launched": every kernel launched from
Python). Workloads (``--workloads``): the MLP 784-1024-1024-10 at batch 256, the Keras MNIST convnet at
batch 128 and the CIFAR CNN at batch 64 of ``benchmarks/train_step.py``, and a large model, 24 x
Dense(4096) at batch 4096 (about 10 TFLOP a step); SGD with momentum, float32 everywhere (TF32
off in both: cupy's GEMMs are full float32 unless CUPY_TF32=1, and torch's cuDNN convolutions
would otherwise use TF32). Each framework runs in its own process.
Both steps copy the batch from host memory (as a data loader feeds them; hiapi's ``fit`` takes
numpy arrays) and the loss back to the host, which waits for the step's GPU work, so wall-clock
time per step is GPU time plus whatever launch overhead the GPU could not hide. One
JSON line per (workload, framework) with the median and min-max step time, the ratio to torch
measured in the same run, and the GPU memory the framework's allocator held; the MLP lines also
give the fraction of this GPU's float32 GEMM peak (an 8192x8192 cupy matmul timed with events).
"""
import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from train_step import (hiapi_model as cpu_benchmark_model,  # noqa: E402
                        torch_model as cpu_torch_model)

STEPS, WARMUP = 50, 5     # the first steps compile kernels (cupy) or pick algorithms (cuDNN)
BATCH = {"mlp": 256, "convnet": 128, "cifar": 64, "large": 4096}
INPUT = {"mlp": (784,), "convnet": (28, 28, 1), "cifar": (32, 32, 3), "large": (4096,)}
LARGE_DEPTH, LARGE_WIDTH = 24, 4096      # the "24 x Dense(4096) at batch 4096"


def hiapi_model(workload):
    import hiapi
    from hiapi import layers
    if workload != "large":
        return cpu_benchmark_model(workload)
    return hiapi.Sequential([hiapi.Input(shape=(LARGE_WIDTH,))] +
                            [layers.Dense(LARGE_WIDTH, activation="relu")
                             for _ in range(LARGE_DEPTH)] + [layers.Dense(10)])


def torch_model(workload):
    from torch import nn
    if workload != "large":
        return cpu_torch_model(workload)
    blocks = []
    for _ in range(LARGE_DEPTH):
        blocks += [nn.Linear(LARGE_WIDTH, LARGE_WIDTH), nn.ReLU()]
    return nn.Sequential(*blocks, nn.Linear(LARGE_WIDTH, 10))


def step_flops(workload):
    """Multiply-adds x 2 x 3 (forward, and the two backward GEMMs) of the dense layers; the
    convolutions' too, counted from their output sizes. An estimate for the GFLOP/s column."""
    if workload == "mlp":
        widths = [784, 1024, 1024, 10]
    elif workload == "large":
        widths = [LARGE_WIDTH] * (LARGE_DEPTH + 1) + [10]
    else:
        return None
    return 6 * BATCH[workload] * sum(a * b for a, b in zip(widths, widths[1:]))


def hiapi_steps(workload, policy, graphs=True):
    os.environ["HIAPI_BACKEND"] = "cupy"
    os.environ["HIAPI_CUDA_GRAPHS"] = "1" if graphs else "0"
    import cupy
    import hiapi
    if policy != "float32":
        hiapi.mixed_precision.set_global_policy(policy)
    hiapi.utils.set_random_seed(0)
    model = hiapi_model(workload)
    x = np.random.rand(BATCH[workload], *INPUT[workload]).astype(np.float32)
    y = np.random.randint(0, 10, len(x))
    model.compile(optimizer=hiapi.optimizers.SGD(0.01, momentum=0.9),
                  loss=hiapi.losses.SparseCategoricalCrossentropy(from_logits=True))
    return (lambda: model.train_on_batch(x, y)), \
        (lambda: cupy.get_default_memory_pool().total_bytes())


def torch_steps(workload, policy):
    import contextlib
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(0)
    nn, device = torch.nn, torch.device("cuda")
    model = torch_model(workload).to(device)
    shape = INPUT[workload]
    x = torch.rand(BATCH[workload], *(shape if len(shape) == 1 else (shape[2],) + shape[:2]))
    y = torch.randint(0, 10, (len(x),))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    # mixed precision as torch users write it: autocast, and a GradScaler for float16
    low = {"mixed_float16": torch.float16, "mixed_bfloat16": torch.bfloat16}.get(policy)
    scaler = torch.amp.GradScaler("cuda") if low is torch.float16 else None

    def step():
        optimizer.zero_grad()
        with torch.autocast("cuda", dtype=low) if low else contextlib.nullcontext():
            loss = nn.functional.cross_entropy(model(x.to(device)), y.to(device))
        if scaler is None:
            loss.backward()
            optimizer.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        return loss.item()          # to the host, as hiapi's train_on_batch returns its loss
    return step, torch.cuda.max_memory_reserved


def measure(workload, framework, policy="float32"):
    if framework == "torch":
        step, memory = torch_steps(workload, policy)
    else:
        step, memory = hiapi_steps(workload, policy, graphs=framework == "cupy")
    steps, warmup = (10, 3) if workload == "large" else (STEPS, WARMUP)
    for _ in range(warmup):
        step()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return {"workload": workload, "framework": framework, "policy": policy,
            "median_ms": 1000 * float(np.median(times)),
            "min_max_ms": [1000 * min(times), 1000 * max(times)],
            "gpu_memory_mb": round(memory() / 2**20, 1)}


def gemm_peak():
    """Best float32 GFLOP/s of an 8192x8192 matmul on this GPU, and the GPU's name."""
    import cupy
    n = 8192
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
    if len(sys.argv) in (3, 4) and sys.argv[1] in ("peak", *BATCH):
        print(json.dumps(gemm_peak() if sys.argv[1] == "peak" else measure(*sys.argv[1:])))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workloads", default="mlp,convnet,cifar,large")
    parser.add_argument("--frameworks", default="torch,cupy,cupy-launched",
                        help="torch; cupy (hiapi, steps replayed as CUDA graphs); "
                             "cupy-launched (hiapi with HIAPI_CUDA_GRAPHS=0)")
    parser.add_argument("--policies", default="float32",
                        help="comma-separated: float32, mixed_float16, mixed_bfloat16 "
                             "(hiapi.mixed_precision; torch.autocast on the torch side)")
    arguments = parser.parse_args()
    workloads, policies = arguments.workloads.split(","), arguments.policies.split(",")
    problem = missing_requirement()
    if problem:
        sys.exit(f"gpu_train_step.py needs an NVIDIA GPU with cupy and a CUDA build of torch: "
                 f"{problem}. For the CPU backends, run benchmarks/train_step.py.")

    def child(*args):
        out = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True)
        if out.returncode != 0:
            return {"error": (out.stderr.strip().splitlines() or ["no message"])[-1]}
        return json.loads(out.stdout.strip().splitlines()[-1])

    peak = child("peak", "-")
    for workload, policy in [(w, p) for p in policies for w in workloads]:
        runs = {framework: child(workload, framework, policy)
                for framework in arguments.frameworks.split(",")}
        for framework, run in runs.items():
            run.update(workload=workload, framework=framework, policy=policy,
                       device=peak.get("device"))
            if "error" not in run and "error" not in runs.get("torch", {"error": "not run"}):
                run["over_torch"] = round(run["median_ms"] / runs["torch"]["median_ms"], 3)
                run["throughput_vs_torch"] = round(1 / run["over_torch"], 3)
            work = step_flops(workload)
            if work and "median_ms" in run and "gemm_peak_gflops" in peak:
                run["gflops"] = round(work / (run["median_ms"] / 1000) / 1e9, 1)
                run["fraction_of_gemm_peak"] = round(run["gflops"] / peak["gemm_peak_gflops"], 3)
                run["gemm_peak_gflops"] = round(peak["gemm_peak_gflops"], 1)
            print(json.dumps(run), flush=True)


if __name__ == "__main__":
    main()
