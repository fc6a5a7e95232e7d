"""Train an MLP on the numpy backend for a few steps; print the planned arena that
``memory_report()`` states and how much the resident set grew over compile and steps.

    python tests/backends/fused_memory_worker.py MEMORY DEPTH WIDTH BATCH

Run with ``MALLOC_MMAP_THRESHOLD_`` set so that freed buffers go back to the system and the
resident set holds only what is kept. MEMORY is ``default`` or ``sublinear``."""
import json
import os
import re
import sys

import numpy as np

import hiapi
from hiapi import layers, losses


def resident_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


memory, depth, width, batch = sys.argv[1], *map(int, sys.argv[2:5])
hiapi.backends.set_backend("numpy")
hiapi.utils.set_random_seed(0)
model = hiapi.Sequential([hiapi.Input(shape=(width,))] +
                         [layers.Dense(width, activation="relu") for _ in range(depth)] +
                         [layers.Dense(10)])
model.compile(optimizer=hiapi.optimizers.SGD(0.01),
              loss=losses.SparseCategoricalCrossentropy(from_logits=True),
              memory=None if memory == "default" else memory)
x = np.random.default_rng(0).normal(size=(batch, width)).astype(np.float32)
y = np.random.default_rng(1).integers(0, 10, batch)
before = resident_bytes()
for _ in range(3):
    model.train_on_batch(x, y)
growth = resident_bytes() - before
lines = []
model.memory_report(print_fn=lines.append)
arena = float(re.search(r"planned \(arena\)\s+([\d.]+) MiB", lines[0]).group(1)) * 2**20
print(json.dumps({"arena_bytes": arena, "rss_growth_bytes": growth}), flush=True)
