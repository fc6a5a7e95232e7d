"""The GPU checks that are not pytest runs, each printing one JSON line per figure
(``tools/gpu_check.sh`` runs them with time limits and gathers the lines into its summary).

    python tools/gpu_checks.py train MODEL BACKEND [--epochs N] [--seed S]
    python tools/gpu_checks.py memory          # memory_report() against cupy's pool, sublinear
    python tools/gpu_checks.py profile [--policy mixed_float16]  # per-op roofline on the GPU

``train`` runs an example of ``examples/`` on a backend and prints its test accuracy; ``memory``
compares what the plan says a step holds with what cupy's memory pool holds after it; ``profile``
places each op type of a train step on the GPU's measured roofline.
"""
import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def emit(**figures):
    print("FIGURE " + json.dumps(figures), flush=True)


def train(args):
    os.environ["HIAPI_BACKEND"] = args.backend
    sys.path.insert(0, str(ROOT / "examples"))
    example = __import__({"mlp": "mnist_mlp", "convnet": "mnist_convnet"}[args.model])
    start = time.perf_counter()
    accuracy = example.main(["--epochs", str(args.epochs), "--seed", str(args.seed),
                             "--verbose", "2"])
    emit(check="train", model=args.model, backend=args.backend, epochs=args.epochs,
         seed=args.seed, test_accuracy=float(accuracy),
         seconds=round(time.perf_counter() - start, 1))


def _models():
    import hiapi
    from hiapi import layers
    yield "mlp_b256", (256, 784), lambda: hiapi.Sequential([
        hiapi.Input(shape=(784,)), layers.Dense(1024, activation="relu"),
        layers.Dense(1024, activation="relu"), layers.Dense(10)])
    yield "convnet_b128", (128, 28, 28, 1), lambda: hiapi.Sequential([
        hiapi.Input(shape=(28, 28, 1)), layers.Conv2D(32, 3, activation="relu"),
        layers.MaxPooling2D(), layers.Conv2D(64, 3, activation="relu"), layers.MaxPooling2D(),
        layers.Flatten(), layers.Dropout(0.5), layers.Dense(10)])
    yield "mlp8x2048_b1024", (1024, 1024), lambda: hiapi.Sequential(
        [hiapi.Input(shape=(1024,))] + [layers.Dense(2048, activation="relu") for _ in range(8)]
        + [layers.Dense(10)])


def _train_executable(model):
    step = [f for key, f in model._step_functions.items() if key[0] == "train"][-1]
    return list(step._executables.values())[-1]


def _kernel_count(model):
    return len(_train_executable(model).steps)


def _host_and_device_ms(model, x, y, repeats=30):
    """Median ms of a whole ``train_on_batch`` and of the compiled step's ``run`` alone (inputs
    already on the device, the GPU drained after each): their difference is what the trainer
    costs around the step on the host."""
    import cupy
    whole, alone = [], []
    executable, coerced = model.compiled_train_step(x, y)
    for _ in range(repeats):
        start = time.perf_counter()
        model.train_on_batch(x, y)
        whole.append(time.perf_counter() - start)
        start = time.perf_counter()
        executable.run(coerced)
        cupy.cuda.get_current_stream().synchronize()
        alone.append(time.perf_counter() - start)
    return round(1000 * float(np.median(whole)), 3), round(1000 * float(np.median(alone)), 3)


def memory(args):
    os.environ["HIAPI_BACKEND"] = "cupy"
    import cupy
    import hiapi
    from hiapi.graph.memory.report import memory_rows
    pool = cupy.get_default_memory_pool()
    for name, shape, build in _models():
        for mode in (None, "sublinear"):
            hiapi.utils.set_random_seed(0)
            pool.free_all_blocks()
            before = pool.used_bytes()
            model = build()
            model.compile(hiapi.optimizers.SGD(0.01, momentum=0.9),
                          hiapi.losses.SparseCategoricalCrossentropy(from_logits=True),
                          memory=mode)
            rng = np.random.default_rng(0)
            x = rng.random(shape).astype(np.float32)
            y = rng.integers(0, 10, shape[0])
            model.train_on_batch(x, y)
            model.train_on_batch(x, y)
            cupy.cuda.get_current_stream().synchronize()
            used = pool.used_bytes() - before
            step = [f for key, f in model._step_functions.items() if key[0] == "train"][-1]
            rows = memory_rows(list(step._executables.values())[-1], model)
            batch = x.nbytes + y.astype(np.int64).nbytes
            lines = []
            model.memory_report(print_fn=lines.append)
            print("\n".join(lines), flush=True)
            # three more steps: the third call records the step as a CUDA graph, whose kept
            # inputs come from the default pool and whose temporaries from a pool of its own
            for _ in range(3):
                model.train_on_batch(x, y)
            cupy.cuda.get_current_stream().synchronize()
            replay = list(step._executables.values())[-1].replay
            graph_pool = replay.pool.total_bytes() if replay and replay.pool else 0  # held
            replayed = pool.used_bytes() - before + graph_pool
            emit(check="memory", model=name, memory=mode or "default",
                 report_total_mb=round(rows["total"] / 2**20, 2),
                 activations_mb=round(rows["activations"] / 2**20, 2),
                 pool_used_mb=round(used / 2**20, 2), batch_mb=round(batch / 2**20, 2),
                 pool_over_report=round(used / rows["total"], 3),
                 replays=replay.replays if replay is not None else 0,
                 graph_pool_mb=round(graph_pool / 2**20, 2),
                 replayed_pools_over_report=round(replayed / rows["total"], 3))
            del model, step
            import gc
            gc.collect()


def profile(args):
    os.environ["HIAPI_BACKEND"] = "cupy"
    import hiapi
    if args.policy != "float32":     # where a mixed-precision step spends its time
        hiapi.mixed_precision.set_global_policy(args.policy)
    for name, shape, build in _models():
        hiapi.utils.set_random_seed(0)
        model = build()
        model.compile(hiapi.optimizers.SGD(0.01, momentum=0.9),
                      hiapi.losses.SparseCategoricalCrossentropy(from_logits=True))
        rng = np.random.default_rng(0)
        x = rng.random(shape).astype(np.float32)
        y = rng.integers(0, 10, shape[0])
        model.train_on_batch(x, y)
        step_ms, run_ms = _host_and_device_ms(model, x, y)
        emit(check="step_split", model=name, policy=args.policy, train_on_batch_ms=step_ms,
             executable_run_ms=run_ms, kernels=_kernel_count(model))
        lines = []
        rows = model.profile(x, y, repeats=5, print_fn=lines.append)
        print(f"== {name}\n" + "\n".join(lines), flush=True)
        for row in rows[:3]:
            emit(check="profile", model=name, policy=args.policy, op=row["op"],
                 ms=round(1000 * row["seconds"], 3),
                 achieved_gflops=round(row["achieved_gflops"], 1),
                 intensity=round(row["intensity"], 2), bound=row["bound"],
                 roofline_fraction=round(row["roofline_fraction"], 3))
    from hiapi.profiler import machine_roofline
    from hiapi.backends import get_backend
    roof = machine_roofline(get_backend())
    emit(check="roofline", peak_fp32_gflops=round(roof.peak_gflops, 1),
         bandwidth_gbs=round(roof.bandwidth_gbs, 1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train")
    t.add_argument("model", choices=["mlp", "convnet"])
    t.add_argument("backend", choices=["numpy", "numba", "cupy"])
    t.add_argument("--epochs", type=int, default=3)
    t.add_argument("--seed", type=int, default=1)
    sub.add_parser("memory")
    p = sub.add_parser("profile")
    p.add_argument("--policy", default="float32",
                   help="a hiapi.mixed_precision policy for the profiled models")
    args = parser.parse_args()
    {"train": train, "memory": memory, "profile": profile}[args.command](args)


if __name__ == "__main__":
    main()
