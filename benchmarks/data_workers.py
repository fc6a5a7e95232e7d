"""What parallel PyDataset workers buy when every batch costs decoding time.

    [HIAPI_BACKEND=numba] flock /tmp/hiapi-bench.lock python benchmarks/data_workers.py [--decode-ms 8]
        [--samples 20000] [--epochs 2] [--rounds 2] [--variants step,w1,t2,t4,p2,p4]

The README's MLP (Dense 512 on MNIST, batch 128, SGD with momentum) fed by a PyDataset whose
``__getitem__`` slices the batch and then does ``--decode-ms`` of numpy work (sorting a
buffer, which releases the GIL, as image decoders do), calibrated on this machine before the
runs. Variants, each ``fit(epochs=E)`` on a fresh dataset, interleaved round by round:

    step   the same batches already decoded (a PyDataset that only slices): the step alone
    w1     workers=1: each batch decoded in the training thread, then stepped
    t2/t4  workers=2/4 threads          p2/p4  workers=2/4 spawned processes

The time per epoch is the last epoch's (the first includes starting the processes, reported
apart as ``*_first_epoch_s``). One JSON line: seconds per epoch per variant (median over
rounds), each as a ratio to ``w1``, the measured decode and step times per batch, and the
expected epoch time on a machine with enough cores for the workers and the step's threads:
``batches * max(step, decode / workers)`` (the decode overlaps the step and is split over the
workers; below that the step is the limit).
"""
import argparse
import json
import os
import statistics
import time

import numpy as np

import hiapi
from hiapi import layers


def calibrate(decode_ms):
    """Elements to sort so one decode takes about ``decode_ms`` on one thread: the size is
    scaled until the measured time is within 5 % (sorting is n log n; and a first guess
    measured cold is off)."""
    size = 1 << 16
    for _ in range(20):
        took = timed(lambda: decode(np.random.default_rng(1).random(size)), 10) * 1000
        if abs(took - decode_ms) < 0.05 * decode_ms:
            break
        size = max(1024, int(size * decode_ms / took))
    return size


def decode(noise):
    np.sort(noise, kind="stable")     # radix/merge sort in C, GIL released: a stand-in decoder


class Decoded(hiapi.utils.PyDataset):
    """At module level: spawned workers unpickle it."""

    def __init__(self, x, y, sort_size, batch=128, **kwargs):
        super().__init__(**kwargs)
        self.x, self.y, self.batch = x, y, batch
        self.noise = np.random.default_rng(1).random(sort_size) if sort_size else None

    def __len__(self):
        return len(self.x) // self.batch

    def __getitem__(self, index):
        if self.noise is not None:
            decode(self.noise)
        part = slice(index * self.batch, (index + 1) * self.batch)
        return self.x[part], self.y[part]


class EpochTimes:
    def __init__(self):
        class Timer(hiapi.callbacks.Callback):
            def on_epoch_begin(self, epoch, logs=None):
                self.start = time.perf_counter()

            def on_epoch_end(self, epoch, logs=None):
                times.append(time.perf_counter() - self.start)
        times = self.times = []
        self.callback = Timer()


VARIANTS = {"step": (None, 1, False), "w1": (True, 1, False), "t2": (True, 2, False),
            "t4": (True, 4, False), "p2": (True, 2, True), "p4": (True, 4, True)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--decode-ms", type=float, default=8.0)
    parser.add_argument("--samples", type=int, default=20000)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    args = parser.parse_args()
    (x, y), _ = hiapi.datasets.mnist.load_data()
    x = (x[:args.samples] / 255.0).astype(np.float32)
    y = y[:args.samples]
    sort_size = calibrate(args.decode_ms)
    decode_s = timed(lambda: Decoded(x, y, sort_size)[0], 20)      # slicing included
    hiapi.utils.set_random_seed(0)
    model = hiapi.Sequential([hiapi.Input(shape=(28, 28)), layers.Flatten(),
                              layers.Dense(512, activation="relu"),
                              layers.Dense(10, activation="softmax")])
    model.compile(optimizer=hiapi.optimizers.SGD(learning_rate=0.1, momentum=0.9),
                  loss="sparse_categorical_crossentropy")
    names = args.variants.split(",")
    epochs, firsts = {n: [] for n in names}, {n: [] for n in names}
    for _ in range(args.rounds):
        for name in names:
            decoded, workers, processes = VARIANTS[name]
            timer = EpochTimes()
            data = Decoded(x, y, sort_size if decoded else 0, workers=workers,
                           use_multiprocessing=processes)
            model.fit(data, epochs=args.epochs, verbose=0, callbacks=[timer.callback])
            epochs[name].append(timer.times[-1])
            firsts[name].append(timer.times[0])
    batches = len(x) // 128
    per_epoch = {n: statistics.median(t) for n, t in epochs.items()}
    step_s = per_epoch.get("step", float("nan")) / batches
    line = {"benchmark": "data_workers", "backend": hiapi.backend.backend(), "cpus": os.cpu_count(),
            "batches": batches, "decode_ms_per_batch": round(decode_s * 1000, 2),
            "step_ms_per_batch": round(step_s * 1000, 2)}
    for name in names:
        line[f"{name}_s_per_epoch"] = round(per_epoch[name], 3)
        line[f"{name}_first_epoch_s"] = round(statistics.median(firsts[name]), 3)
        if "w1" in per_epoch:
            line[f"{name}_vs_w1"] = round(per_epoch[name] / per_epoch["w1"], 3)
    for workers in (1, 2, 4, 8):
        line[f"many_core_expected_w{workers}_s"] = round(
            batches * max(step_s, decode_s / workers) if workers > 1 else
            batches * (step_s + decode_s), 3)
    print(json.dumps(line))


def timed(function, repeats):
    function()
    start = time.perf_counter()
    for _ in range(repeats):
        function()
    return (time.perf_counter() - start) / repeats


if __name__ == "__main__":
    main()
