"""What ``fit()`` costs on top of the training steps themselves (the trainer's overhead).

    python benchmarks/fit_overhead.py [--epochs 5] [--rounds 2] [--backend numpy]
                                      [--model mlp|convnet] [--samples 60000]
                                      [--variants gather,loop,fit,fit_inline,fit_bar,fit_chunks]

By default the main job's model and data (MLP 512 on the bundled MNIST, batch 128, SGD with
momentum, 469 steps per epoch): small steps, so per-batch Python work shows most; ``--model
convnet`` takes the Keras MNIST convnet instead. Variants, each run for ``--epochs`` epochs in a
row, interleaved round by round on the same model:

    gather      the compiled step alone on batches gathered as ``fit`` gathers them without
                prefetching (``np.take`` of a shuffled epoch's rows into reused buffers),
                nothing else: the floor of a trainer that shuffles rows on the training thread
    loop        ``model.train_on_batch(xb, yb)`` over pre-sliced batches: a hand-written loop
    fit         ``model.fit(x, y, epochs=E, batch_size=128, verbose=0)``, called once for the
                E epochs, as a user calls it: shuffling, the coming batches gathered ahead on
                a helper thread at idle priority while the steps run (``models/prefetch.py``,
                on by default on Linux), metrics, callbacks, and the NaN check of the data
                (once per array: the first round's call reads it)
    fit_inline  the same with ``HIAPI_PREFETCH=0`` (``prefetch.ENABLED``): every batch
                gathered on the training thread between steps (compare ``*_s_per_epoch``:
                whole epochs, not only the overhead figure)
    fit_bar     ``fit`` with ``verbose=1`` (the tqdm progress bar, output discarded)
    fit_chunks  ``fit`` with Keras's ``shuffle="batch"``: batch-sized chunks in a random order,
                each batch a slice of the arrays, so nothing is gathered: what ``fit`` costs
                beyond the row-by-row copy that ``shuffle=True`` needs

The compiled train step is wrapped in a timer, so each run splits into time inside the step
(the executor and kernels, the same work in every variant) and time outside it (the trainer's
Python work per batch, and per call). On a shared machine the step time varies by tens of
percent from epoch to epoch, far more than the overhead being measured, so the overhead is the
ratio of the two parts of the *same* run (``overhead = outside / inside``), not a difference
between runs. A batch gathered on the prefetch thread while a step runs costs nothing outside
the step; if it slowed the step down instead, the step's own time shows it: ``*_step_s_per_epoch``
is the time inside the steps per epoch, to compare between ``fit`` and ``fit_inline``.
One JSON line with, per variant, seconds per epoch and the overhead (medians over rounds).

A busy machine stretches the wall-clock parts unevenly (a preempted step is "inside", a
preempted gather "outside"), so the same split is also reported in process CPU time
(``cpu_overhead``: CPU outside the steps over CPU inside them, all threads; the prefetch
thread's CPU counts where it falls, mostly inside) together with the CPU seconds per epoch,
which compare the variants' total work directly. ``*_threads_after`` is the thread count the
pools ran with at the end of a variant (``fit``'s thread tuner may choose fewer than the
budget under load, and the prefetch only runs with two or more).
"""
import argparse
import contextlib
import json
import os
import time

import numpy as np


class TimedStep:
    """A compiled step function that adds up the wall and CPU seconds spent in its calls."""

    def __init__(self, function):
        self.function, self.seconds, self.cpu_seconds = function, 0.0, 0.0

    def __call__(self, *args):
        start, cpu_start = time.perf_counter(), time.process_time()
        try:
            return self.function(*args)
        finally:
            self.seconds += time.perf_counter() - start
            self.cpu_seconds += time.process_time() - cpu_start

    def __getattr__(self, name):
        return getattr(self.function, name)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=5, help="epochs per variant and round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--backend", default=os.environ.get("HIAPI_BACKEND", "numpy"))
    parser.add_argument("--model", choices=("mlp", "convnet"), default="mlp")
    parser.add_argument("--samples", type=int, default=60000)
    parser.add_argument("--variants", default="gather,loop,fit,fit_inline,fit_bar,fit_chunks",
                        help="comma-separated subset to run")
    args = parser.parse_args()
    os.environ["HIAPI_BACKEND"] = args.backend
    import hiapi
    from hiapi import layers
    hiapi.utils.set_random_seed(0)
    (x, y), _ = hiapi.datasets.mnist.load_data()
    x, y = x[:args.samples].astype(np.float32) / 255.0, y[:args.samples]
    if args.model == "mlp":
        x = x.reshape(len(x), 784)
        model = hiapi.Sequential([hiapi.Input(shape=(784,)),
                                  layers.Dense(512, activation="relu"), layers.Dense(10)])
    else:
        x = x[..., None]
        model = hiapi.Sequential([
            hiapi.Input(shape=(28, 28, 1)), layers.Conv2D(32, 3, activation="relu"),
            layers.MaxPooling2D(), layers.Conv2D(64, 3, activation="relu"),
            layers.MaxPooling2D(), layers.Flatten(), layers.Dropout(0.5), layers.Dense(10)])
    model.compile(optimizer=hiapi.optimizers.SGD(0.01, momentum=0.9),
                  loss=hiapi.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    batch = 128
    order = np.random.default_rng(0).permutation(len(x))
    batches = [(np.ascontiguousarray(x[order[i:i + batch]]), y[order[i:i + batch]])
               for i in range(0, len(x), batch)]
    model.train_on_batch(*batches[0])                     # compile every batch shape first
    model.train_on_batch(*batches[-1])
    steps = {key: TimedStep(f) for key, f in model._step_functions.items() if key[0] == "train"}
    model._step_functions.update(steps)

    from hiapi.models import data, prefetch
    labels = model._compiled_targets.prepare_labels([y])[0]
    gatherer, shuffles = data.BatchGatherer([x, labels]), np.random.default_rng(1)

    def gather():
        step = model._step("train", [x], [labels])          # one function for every batch size
        for _ in range(args.epochs):
            order = shuffles.permutation(len(x))
            for i in range(0, len(x), batch):
                xb, yb = gatherer.take(order[i:i + batch])
                step(xb, yb, *model.optimizer.step_values())

    def loop():
        for _ in range(args.epochs):
            for xb, yb in batches:
                model.train_on_batch(xb, yb)

    def fit(verbose, prefetching=None, shuffle=True):      # None: hiapi's default
        def run():
            default = prefetch.ENABLED
            prefetch.ENABLED = default if prefetching is None else prefetching
            try:
                with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink), \
                        contextlib.redirect_stderr(sink):
                    model.fit(x, y, epochs=args.epochs, batch_size=batch, verbose=verbose,
                              shuffle=shuffle)
            finally:
                prefetch.ENABLED = default
        return run

    variants = {"gather": gather, "loop": loop, "fit": fit(0), "fit_inline": fit(0, False),
                "fit_bar": fit(1), "fit_chunks": fit(0, shuffle="batch")}
    variants = {name: variants[name] for name in args.variants.split(",")}
    measures = ("s_per_epoch", "step_s_per_epoch", "overhead", "cpu_s_per_epoch",
                "cpu_overhead", "threads_after")
    results = {name: {measure: [] for measure in measures} for name in variants}
    for _ in range(args.rounds):
        for name, run in variants.items():
            for step in steps.values():
                step.seconds = step.cpu_seconds = 0.0
            start, cpu_start = time.perf_counter(), time.process_time()
            run()
            total, cpu = time.perf_counter() - start, time.process_time() - cpu_start
            inside = sum(step.seconds for step in steps.values())
            cpu_inside = sum(step.cpu_seconds for step in steps.values())
            for measure, value in zip(measures, (
                    total / args.epochs, inside / args.epochs, (total - inside) / inside,
                    cpu / args.epochs, (cpu - cpu_inside) / cpu_inside,
                    hiapi.threads.active_threads())):
                results[name][measure].append(value)
    line = {"benchmark": "fit_overhead", "model": args.model, "backend": args.backend,
            "steps_per_epoch": len(batches), "epochs_each": args.epochs, "rounds": args.rounds}
    for name in variants:
        for measure in measures:
            line[f"{name}_{measure}"] = round(float(np.median(results[name][measure])),
                                              4 if "overhead" in measure else 3)
    line["load_average"] = round(os.getloadavg()[0], 2)
    print(json.dumps(line))


if __name__ == "__main__":
    main()
