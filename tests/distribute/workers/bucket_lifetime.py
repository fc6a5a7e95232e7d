"""Compile and fit again and again under one Strategy whose buckets live in shared memory
(``zero_copy`` or ``auto``): recompiling, changing ``trainable`` (fine-tuning), and building
new models. Each rank records after every fit how many shared-memory allocations the process
holds, how many bytes of MPICH's /dev/shm files it has mapped and its resident shared memory;
then checks that an array or step still held keeps its window (and is freed once dropped), and
finally trains the MLP of ``train.py`` so the test can compare it with one process.

usage: bucket_lifetime.py OUT_DIR ALGORITHM ROUNDS
"""
import json
import sys

import numpy as np

import hiapi
from hiapi import layers
from hiapi.distribute import MPICommunicator
from hiapi.distribute.algorithms.window_arrays import live_allocations

out, algorithm, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
(x, y), _ = hiapi.datasets.mnist.load_data()
x, y = x[:1000] / 255.0, y[:1000]
strategy = hiapi.distribute.Strategy(algorithm=algorithm, bucket_cap_mb=0.25)
comm = strategy.communicator
rank, size = comm.rank, comm.size


def shm_mapped():
    """Bytes of /dev/shm files this process has mapped (MPICH's windows are), and its
    RssShmem in bytes."""
    mapped = 0
    for line in open("/proc/self/maps"):
        if "/dev/shm/" in line:
            lo, hi = (int(a, 16) for a in line.split()[0].split("-"))
            mapped += hi - lo
    rss = next(int(line.split()[1]) * 1024 for line in open("/proc/self/status")
               if line.startswith("RssShmem:"))
    return mapped, rss


def make_model(width):
    with strategy.scope():
        return hiapi.Sequential([hiapi.Input(shape=(28, 28)), layers.Flatten(),
                                 layers.Dense(width, activation="relu"),
                                 layers.Dense(10, activation="softmax")])


def compile_and_fit(model):
    with strategy.scope():
        model.compile(optimizer=hiapi.optimizers.SGD(0.05),
                      loss="sparse_categorical_crossentropy")
    model.fit(x[:200], y[:200], batch_size=25, epochs=1, verbose=0)


records = []
model = make_model(256)                       # 200K weights: 0.8 MB of buckets a rank
for round_ in range(rounds):
    kind = ("recompile", "fine_tune", "new_model")[round_ % 3]
    if kind == "fine_tune":                   # freeze / unfreeze the first layer
        model.layers[1].trainable = not model.layers[1].trainable
    elif kind == "new_model":
        model = make_model(256)
    compile_and_fit(model)
    mapped, rss = shm_mapped()
    records.append({"kind": kind, "live": live_allocations(), "mapped": mapped, "rss": rss})

# a step still held keeps its buckets: recompiling frees nothing of it until it is dropped
live = live_allocations()
held_steps = dict(model._step_functions)
compile_and_fit(model)
assert live_allocations() > live, (live_allocations(), live)
del held_steps
compile_and_fit(model)
assert live_allocations() == live, (live_allocations(), live)

# an array from shared_array is never freed while viewed, on any rank; freed once dropped
held = comm.shared_array(50_000, np.float32)[10:]          # a view keeps it too
assert comm.release_shared() == 0
held[:] = rank + 1
assert np.array_equal(comm.allreduce(held), np.full(len(held), size * (size + 1) / 2))
only_here, held = (held if rank == 0 else None), None       # rank 0 alone still holds it
assert comm.release_shared() == 0, "freed an array rank 0 still views"
only_here = None
assert comm.release_shared() == 1
assert live_allocations() == live

# close() refuses, on every rank, while an allocation is still viewed, and frees nothing
fresh = MPICommunicator(algorithm="zero_copy")
arrays = fresh.allreducer.arrays
kept = fresh.shared_array(1000, np.float64)
before = live_allocations()
try:
    arrays.close()
    raise AssertionError("close() freed an array still in use")
except RuntimeError as error:
    assert "still in use" in str(error), error
assert live_allocations() == before
kept[:] = rank
assert np.array_equal(fresh.allreduce(kept), np.full(1000, size * (size - 1) / 2))
del kept
assert fresh.release_shared() == 1        # the watchdog's record of the call lets go of it
assert live_allocations() == before - 1
fresh.shared_array(8, np.float32)          # dropped at once: close() frees it
arrays.close()
assert live_allocations() == before - 1, (live_allocations(), before)

# finally the MLP of train.py, compared by the test with one process on the global batch
hiapi.utils.set_random_seed(11)
with strategy.scope():
    final = hiapi.Sequential([hiapi.Input(shape=(28, 28)), layers.Flatten(),
                              layers.Dense(32, activation="relu"),
                              layers.Dense(10, activation="softmax")])
    final.compile(optimizer=hiapi.optimizers.SGD(0.1, momentum=0.9),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
history = final.fit(x, y, batch_size=25, epochs=2, validation_split=0.2, verbose=0)
np.savez(f"{out}/weights_{rank}.npz", *final.get_weights())
with open(f"{out}/lifetime_{rank}.json", "w") as handle:
    json.dump({"records": records, "history": history.history,
               "allocated": strategy.stats.shared_buckets,
               "freed": strategy.stats.shared_buckets_freed}, handle)
