"""What ``fit()`` costs on top of the training steps themselves (the trainer's overhead).

    python benchmarks/fit_overhead.py [--epochs 3] [--backend numpy]

The main job's model and data (MLP 512 on the bundled MNIST, batch 128, SGD with momentum,
469 steps per epoch): small steps, so per-batch Python work shows. One process, the variants
interleaved epoch by epoch on the same model:

    bare     the compiled train step called on pre-sliced contiguous batches: the executor alone
    loop     ``model.train_on_batch(xb, yb)`` over the same batches: a hand-written loop
    fit      ``model.fit(x, y, epochs=1, batch_size=128, verbose=0)``: shuffling, slicing,
             metrics, callbacks
    fit_bar  the same with ``verbose=1`` (the tqdm progress bar, output discarded)

One JSON line: median seconds per epoch of each, and each over ``bare`` (``fit_over_bare - 1``
is the overhead the target bounds at 5 %), plus ``fit_over_loop``.
"""
import argparse
import contextlib
import json
import os
import time

import numpy as np


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--backend", default=os.environ.get("HIAPI_BACKEND", "numpy"))
    args = parser.parse_args()
    os.environ["HIAPI_BACKEND"] = args.backend
    import hiapi
    from hiapi import layers
    hiapi.utils.set_random_seed(0)
    (x, y), _ = hiapi.datasets.mnist.load_data()
    x = x.reshape(len(x), 784).astype(np.float32) / 255.0
    model = hiapi.Sequential([hiapi.Input(shape=(784,)), layers.Dense(512, activation="relu"),
                              layers.Dense(10)])
    model.compile(optimizer=hiapi.optimizers.SGD(0.01, momentum=0.9),
                  loss=hiapi.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    batch = 128
    order = np.random.default_rng(0).permutation(len(x))
    batches = [(np.ascontiguousarray(x[order[i:i + batch]]), y[order[i:i + batch]])
               for i in range(0, len(x), batch)]
    model.train_on_batch(*batches[0])                     # compile every batch shape first
    model.train_on_batch(*batches[-1])
    xs, ys, _ = model._prepare(*batches[0])
    step = model._step("train", xs, ys, [])
    plan = model.distribution
    prepared = [(xb, model._compiled_targets.prepare_labels([yb])[0]) for xb, yb in batches]

    def bare():
        for xb, yb in prepared:
            step(xb, yb, *model.optimizer.step_values(),
                 *plan.step_values(len(xb), len(xb) * plan.size))

    def loop():
        for xb, yb in batches:
            model.train_on_batch(xb, yb)

    def fit(verbose):
        def run():
            with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink), \
                    contextlib.redirect_stderr(sink):
                model.fit(x, y, epochs=1, batch_size=batch, verbose=verbose)
        return run

    variants = {"bare": bare, "loop": loop, "fit": fit(0), "fit_bar": fit(1)}
    times = {name: [] for name in variants}
    for _ in range(args.epochs):
        for name, run in variants.items():
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    medians = {name: float(np.median(t)) for name, t in times.items()}
    line = {"benchmark": "fit_overhead", "backend": args.backend, "steps_per_epoch": len(batches),
            "epochs_each": args.epochs}
    line.update({f"{name}_s_per_epoch": round(m, 3) for name, m in medians.items()})
    line.update({f"{name}_over_bare": round(m / medians["bare"], 3) for name, m in
                 medians.items() if name != "bare"})
    line["fit_over_loop"] = round(medians["fit"] / medians["loop"], 3)
    print(json.dumps(line))


if __name__ == "__main__":
    main()
