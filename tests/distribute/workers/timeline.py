"""Train a tiny model under a Strategy with ``HIAPI_TIMELINE`` set by the test: dense buckets
and DGC-compressed buckets, so the trace holds both kinds of exchange.

usage: timeline.py COMPRESSION
"""
import sys

import numpy as np

import hiapi
from hiapi import layers

rng = np.random.default_rng(0)
x, y = rng.random((64, 12)).astype("float32"), rng.integers(0, 3, 64)
options = {"sparsity": 0.9, "warmup_epochs": 0, "sparse_exchange": "sparse_allreduce"} \
    if sys.argv[1] == "dgc" else {}
strategy = hiapi.distribute.Strategy(compression=sys.argv[1], bucket_cap_mb=0.0005, **options)
with strategy.scope():
    model = hiapi.Sequential([hiapi.Input(shape=(12,)), layers.Dense(16, activation="relu"),
                              layers.Dense(3)])
    model.compile(optimizer=hiapi.optimizers.SGD(0.1, momentum=0.9),
                  loss=hiapi.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(x, y, batch_size=8, epochs=2, verbose=0)
