"""Run one numba train step of a small model; print the first step's time and how many of the
numba functions it called came from the on-disk cache (hits) or were compiled (misses)."""
import json
import time

import numpy as np

import hiapi
from hiapi import layers

hiapi.backends.set_backend("numba")
from hiapi.backends.numba_backend import conv, fused, pooling  # noqa: E402
from numba.core.registry import CPUDispatcher  # noqa: E402

model = hiapi.Sequential([hiapi.Input((12,)), layers.Dense(3, activation="relu")])
model.compile(optimizer="sgd", loss="mse")
start = time.perf_counter()
model.train_on_batch(np.ones((16, 12), "float32"), np.zeros((16, 3), "float32"))
first_step = time.perf_counter() - start
dispatchers = [f for m in (conv, pooling) for f in vars(m).values() if isinstance(f, CPUDispatcher)]
dispatchers += [f for pair in fused._compiled.values() if pair for f in pair]
print(json.dumps({"first_step_s": first_step,
                  "hits": sum(sum(d.stats.cache_hits.values()) for d in dispatchers),
                  "misses": sum(sum(d.stats.cache_misses.values()) for d in dispatchers)}),
      flush=True)
