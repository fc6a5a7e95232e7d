"""Train small MLPs and CNNs for two steps and print, per configuration, the total that
``memory_report()`` states and how much the process really grew (resident set now, and its
peak, over the state before the model was built).

    python tests/graph/memory_truth_worker.py BACKEND

Run with ``MALLOC_MMAP_THRESHOLD_`` set so that freed buffers go back to the system and the
resident set holds only what is kept. Every configuration runs once first at full size, so
imports and numba's compilation are not counted: a tiny copy compiled too little on a cold
cache (kernels are typed by array layout, and some are chosen by size), and the compiler's
memory then showed as the step's (10 MiB over the report, with ``HIAPI_CACHE_DIR`` empty)."""
import ctypes
import gc
import json
import os
import sys

import numpy as np

import hiapi
from hiapi import layers, losses
from hiapi.graph.memory.report import memory_rows

CONFIGS = [(model, memory) for model in ("mlp", "cnn") for memory in ("default", "sublinear")]


def resident():
    """(resident bytes now, peak resident bytes since the last reset) from /proc."""
    fields = dict(line.split(":", 1) for line in open("/proc/self/status"))
    return [int(fields[key].split()[0]) * 1024 for key in ("VmRSS", "VmHWM")]


def release_free_heap():
    """Collect garbage and give glibc's free heap back, so the resident set is what is live."""
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)


def reset_peak():
    """Reset VmHWM to the resident set now; False where the kernel does not let us."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def data(kind):
    """A batch: the user's data, there before the model (not the step's memory)."""
    rng = np.random.default_rng(0)
    shape = (4096, 256) if kind == "mlp" else (32, 32, 32, 3)
    return rng.normal(size=shape).astype(np.float32), rng.integers(0, 10, shape[0])


def build(kind, memory, x):
    """MLP: 6 x Dense(256) at batch 4096 (4 MiB activations, fused-program scratch); CNN:
    4 x Conv2D(32, 3x3, same) on 32x32 at batch 32 (4 MiB activations, im2col scratch)."""
    hiapi.utils.set_random_seed(0)
    if kind == "mlp":
        stack = [hiapi.Input(shape=x.shape[1:])] + \
            [layers.Dense(x.shape[1], activation="relu") for _ in range(6)] + [layers.Dense(10)]
    else:
        stack = [hiapi.Input(shape=x.shape[1:])] + \
            [layers.Conv2D(32, 3, padding="same", activation="relu") for _ in range(4)] + \
            [layers.GlobalAveragePooling2D(), layers.Dense(10)]
    model = hiapi.Sequential(stack)
    model.compile(optimizer=hiapi.optimizers.SGD(0.01, momentum=0.9),
                  loss=losses.SparseCategoricalCrossentropy(from_logits=True),
                  memory=None if memory == "default" else memory)
    return model


def measure(kind, memory):
    x, y = data(kind)
    release_free_heap()
    before, _ = resident()
    model = build(kind, memory, x)
    peak_known = reset_peak()
    for _ in range(2):
        model.train_on_batch(x, y)
    release_free_heap()
    now, peak = resident()
    step = [f for key, f in model._step_functions.items() if key[0] == "train"][-1]
    rows = memory_rows(list(step._executables.values())[-1], model)
    return {"model": kind, "memory": memory, "rows": rows, "growth": now - before,
            "peak_growth": peak - before if peak_known else None}


def main():
    hiapi.backends.set_backend(sys.argv[1])
    for kind, memory in CONFIGS:             # warm-up: compiled, then dropped
        x, y = data(kind)
        build(kind, memory, x).train_on_batch(x, y)
    for kind, memory in CONFIGS:
        print(json.dumps(measure(kind, memory)), flush=True)


if __name__ == "__main__":
    main()
