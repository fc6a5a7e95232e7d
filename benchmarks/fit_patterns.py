"""``fit``, ``evaluate``, ``predict`` and ``train_on_batch`` called the ways people call them:
hiapi with its thread tuner, hiapi with the count fixed, and torch's equivalent loop.

    python benchmarks/fit_patterns.py [--model mlp|small] [--rounds 3] [--backend numba]
                                      [--patterns long,repeated,validation,evaluate,predict,batches]

Why: the compiled step alone can beat torch while what users call does not, when every call
pays again for work that only had to be done once (the thread tuner's probing, issue #29).
Models: ``mlp`` the issue's MLP 784-1024-1024-10 at batch 256 with SGD momentum 0.9; ``small``
Keras's default ``batch_size=32`` with a 784-128-10 MLP and Adam (per-step Python costs show).
Epochs are 20 batches (``small``: 100). Patterns, each timed after three ``train_on_batch``
calls and one ``evaluate`` and ``predict`` of two batches (numba compiles and loads its kernels
and starts its helper threads; torch warms up alike):

    long        one ``fit(epochs=6)``
    repeated    ``fit(epochs=1)`` six times in a row (custom schedules, notebooks)
    validation  one ``fit(epochs=6, validation_data=...)``, 5 validation batches per epoch
    evaluate    ``evaluate`` ten times over the 20 batches (time per batch)
    predict     ``predict`` ten times over the 20 batches (time per batch)
    batches     ``train_on_batch`` 120 times over pre-sliced batches

Variants, each (pattern, variant) in its own fresh process, interleaved round by round:
``tuned`` (hiapi's defaults), ``fixed`` (``HIAPI_NUM_THREADS`` = the CPUs: no tuner) and
``torch`` (2.13, CPU, its own thread count; the same loop written by hand: ``randperm`` and
indexing per epoch, ``loss.item()`` and the accuracy per step as ``fit`` logs them, ``no_grad``
for evaluation). One JSON line per pattern: median milliseconds per step (per batch for
evaluate and predict) of each variant over the rounds, the ratios ``tuned/fixed`` and
``tuned/torch`` of those medians and the median of the rounds' own ratios (``_paired``: the
variants of a round run back to back, so a host that drifts between rounds moves both), the
share of the tuned run its thread tuner's probes cost (``tuned_probing_percent``, median), and
the load average after the last round. Run it under ``flock /tmp/hiapi-bench.lock`` on a
shared machine.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

EPOCHS = 6
VALIDATION_BATCHES = 5
LOOPS = 10                  # evaluate / predict calls
MODELS = {"mlp": {"units": (1024, 1024), "batch": 256, "optimizer": "sgd", "steps": 20},
          "small": {"units": (128,), "batch": 32, "optimizer": "adam", "steps": 100}}
WARMUP = 3                  # train steps before timing (and one evaluate and predict batch)
PATTERNS = ("long", "repeated", "validation", "evaluate", "predict", "batches")


def make_data(spec):
    rng = np.random.default_rng(0)
    n = spec["batch"] * spec["steps"]
    x = rng.random((n, 784), dtype=np.float32)
    y = rng.integers(0, 10, n)
    nv = spec["batch"] * VALIDATION_BATCHES
    return x, y, x[:nv].copy(), y[:nv].copy()


def hiapi_runner(spec, backend):
    os.environ["HIAPI_BACKEND"] = backend
    import hiapi
    from hiapi import layers
    hiapi.utils.set_random_seed(0)
    model = hiapi.Sequential([hiapi.Input(shape=(784,))] +
                             [layers.Dense(u, activation="relu") for u in spec["units"]] +
                             [layers.Dense(10)])
    optimizer = hiapi.optimizers.SGD(0.01, momentum=0.9) if spec["optimizer"] == "sgd" else \
        hiapi.optimizers.Adam()
    model.compile(optimizer=optimizer, metrics=["accuracy"],
                  loss=hiapi.losses.SparseCategoricalCrossentropy(from_logits=True))
    x, y, xv, yv = make_data(spec)
    b = spec["batch"]
    batches = [(x[i:i + b], y[i:i + b]) for i in range(0, len(x), b)]
    for _ in range(WARMUP):
        model.train_on_batch(*batches[0])
    # two batches each: numba's dense chain loads its kernels and starts its helper threads
    # at its first call, so that the timed calls all find them warm (docs/performance.md)
    model.evaluate(x[:2 * b], y[:2 * b], batch_size=b, verbose=0)
    model.predict(x[:2 * b], batch_size=b, verbose=0)
    fit = dict(batch_size=b, verbose=0)
    return {
        "long": lambda: model.fit(x, y, epochs=EPOCHS, **fit),
        "repeated": lambda: [model.fit(x, y, epochs=1, **fit) for _ in range(EPOCHS)],
        "validation": lambda: model.fit(x, y, epochs=EPOCHS, validation_data=(xv, yv), **fit),
        "evaluate": lambda: [model.evaluate(x, y, batch_size=b, verbose=0)
                             for _ in range(LOOPS)],
        "predict": lambda: [model.predict(x, batch_size=b, verbose=0) for _ in range(LOOPS)],
        "batches": lambda: [model.train_on_batch(xb, yb) for _ in range(EPOCHS)
                            for xb, yb in batches],
    }


def torch_runner(spec):
    import torch
    from torch import nn
    torch.manual_seed(0)
    sizes = (784,) + spec["units"]
    model = nn.Sequential(*[m for i, o in zip(sizes, sizes[1:]) for m in (nn.Linear(i, o),
                                                                           nn.ReLU())],
                          nn.Linear(sizes[-1], 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9) \
        if spec["optimizer"] == "sgd" else torch.optim.Adam(model.parameters())
    loss_fn = nn.CrossEntropyLoss()
    x, y, xv, yv = (torch.from_numpy(a) for a in make_data(spec))
    b = spec["batch"]

    def step(xb, yb):
        optimizer.zero_grad()
        out = model(xb)
        loss = loss_fn(out, yb)
        loss.backward()
        optimizer.step()
        return loss.item(), (out.argmax(1) == yb).sum().item()

    def epoch():
        order = torch.randperm(len(x))
        for i in range(0, len(x), b):
            index = order[i:i + b]
            step(x[index], y[index])

    def evaluate(xs, ys):
        with torch.no_grad():
            for i in range(0, len(xs), b):
                out = model(xs[i:i + b])
                loss_fn(out, ys[i:i + b]).item()
                (out.argmax(1) == ys[i:i + b]).sum().item()

    def predict():
        with torch.no_grad():
            return np.concatenate([model(x[i:i + b]).numpy() for i in range(0, len(x), b)])

    batches = [(x[i:i + b], y[i:i + b]) for i in range(0, len(x), b)]
    for _ in range(WARMUP):
        step(*batches[0])
    evaluate(*batches[0])
    model(batches[0][0])
    return {
        "long": lambda: [epoch() for _ in range(EPOCHS)],
        "repeated": lambda: [epoch() for _ in range(EPOCHS)],
        "validation": lambda: [(epoch(), evaluate(xv, yv)) for _ in range(EPOCHS)],
        "evaluate": lambda: [evaluate(x, y) for _ in range(LOOPS)],
        "predict": lambda: [predict() for _ in range(LOOPS)],
        "batches": lambda: [step(xb, yb) for _ in range(EPOCHS) for xb, yb in batches],
    }


def steps_of(pattern, spec):
    """Steps (batches) a pattern runs, to report time per step."""
    return (LOOPS if pattern in ("evaluate", "predict") else EPOCHS) * spec["steps"]


def one(model, pattern, variant, backend):
    """Seconds per step of one pattern, and the share of the run the thread tuner's probes
    cost (``thread_tuner.probing_seconds``, counted from the warm-up on; 0 for torch and
    for the fixed count)."""
    spec = MODELS[model]
    runs = torch_runner(spec) if variant == "torch" else hiapi_runner(spec, backend)
    probing = _probing_seconds(variant)
    start = time.perf_counter()
    runs[pattern]()
    elapsed = time.perf_counter() - start
    return elapsed / steps_of(pattern, spec), (_probing_seconds(variant) - probing) / elapsed


def _probing_seconds(variant):
    if variant == "torch":
        return 0.0
    from hiapi.runtime import thread_tuner
    return thread_tuner.probing_seconds()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", choices=sorted(MODELS), default="mlp")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--backend", default="numba")
    parser.add_argument("--patterns", default=",".join(PATTERNS))
    parser.add_argument("--variants", default="tuned,fixed,torch")
    parser.add_argument("--one", nargs=3, metavar=("MODEL", "PATTERN", "VARIANT"))
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(*args.one, args.backend)))
        return
    patterns, variants = args.patterns.split(","), args.variants.split(",")
    cpus = str(len(os.sched_getaffinity(0)))
    times = {(p, v): [] for p in patterns for v in variants}
    probing = {p: [] for p in patterns}
    for round_ in range(args.rounds):
        for pattern in patterns:
            order = variants[round_ % len(variants):] + variants[:round_ % len(variants)]
            for variant in order:
                env = {k: v for k, v in os.environ.items() if k != "HIAPI_NUM_THREADS"}
                if variant == "fixed":
                    env["HIAPI_NUM_THREADS"] = cpus
                out = subprocess.run([sys.executable, __file__, "--backend", args.backend,
                                      "--one", args.model, pattern, variant],
                                     capture_output=True, text=True, env=env, check=True)
                step, share = json.loads(out.stdout.strip().splitlines()[-1])
                times[pattern, variant].append(step)
                if variant == "tuned":
                    probing[pattern].append(share)
    load = round(os.getloadavg()[0], 2)
    for pattern in patterns:
        medians = {v: float(np.median(times[pattern, v])) for v in variants}
        line = {"benchmark": "fit_patterns", "model": args.model, "backend": args.backend,
                "pattern": pattern, "rounds": args.rounds, "load_average": load}
        line.update({f"{v}_ms": round(1000 * m, 3) for v, m in medians.items()})
        line.update({f"{v}_all_ms": [round(1000 * t, 3) for t in times[pattern, v]]
                     for v in variants})
        if probing[pattern]:      # the tuner's probes over the run's time, in per cent
            line["tuned_probing_percent"] = round(100 * float(np.median(probing[pattern])), 2)
        for other in ("fixed", "torch"):
            if "tuned" in medians and other in medians:
                line[f"tuned_over_{other}"] = round(medians["tuned"] / medians[other], 3)
                # the variants of a round run one after the other: their ratio, round by
                # round, is freer of a shared host's drift than the ratio of the medians
                ratios = np.array(times[pattern, "tuned"]) / np.array(times[pattern, other])
                line[f"tuned_over_{other}_paired"] = round(float(np.median(ratios)), 3)
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
