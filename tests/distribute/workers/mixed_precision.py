"""Two ranks train a mixed_float16 MLP with train_on_batch; at step 2 only rank 1's batch is
large enough that its first kernel's float16 gradient overflows at the loss scale (the first
layer's small weights keep every other value, and so every other gradient, finite: under
sharded optimizer state only that kernel's owner sees the overflow). Each rank writes its loss
scale after every step, its iteration count and its final weights.

usage: mixed_precision.py OUT_DIR SHARD(0|1)
"""
import json
import sys

import numpy as np

import hiapi
from hiapi import layers

if __name__ == "__main__":
    out, shard = sys.argv[1], sys.argv[2] == "1"
    hiapi.mixed_precision.set_global_policy("mixed_float16")
    strategy = hiapi.distribute.Strategy(shard_optimizer_state=shard, bucket_cap_mb=0.001)
    with strategy.scope():
        hiapi.utils.set_random_seed(3)
        model = hiapi.Sequential([hiapi.Input((16,)), layers.Dense(
            16, activation="relu", kernel_initializer=hiapi.initializers.RandomNormal(
                stddev=1e-3)), layers.Dense(16, activation="relu"), layers.Dense(3),
                                  layers.Activation("softmax", dtype="float32")])
        model.compile(optimizer=hiapi.optimizers.LossScaleOptimizer(
            hiapi.optimizers.SGD(0.1), initial_scale=2.0 ** 12), loss="sparse_categorical_crossentropy")
    rank = strategy.rank
    rng = np.random.default_rng(rank)
    scales, wire = [], []
    for step in range(5):
        x = rng.normal(size=(8, 16)).astype(np.float32)
        if step == 2 and rank == 1:
            x *= 1000.0           # x.T @ (scale * gradient) passes float16's 65504
        model.train_on_batch(x, rng.integers(0, 3, 8))
        scales.append(float(model.optimizer.dynamic_scale.numpy()))
    json.dump({"scales": scales, "iterations": int(model.optimizer.iterations.numpy()),
               "weights": [w.tolist() for w in model.get_weights()]},
              open(f"{out}/rank_{rank}.json", "w"))
