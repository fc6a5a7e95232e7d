"""Mixed precision on CPU, measured: the Keras MNIST convnet trained under ``float32``,
``mixed_float16`` and ``mixed_bfloat16`` from the same seed, each in its own process.

    python benchmarks/mixed_precision.py                      # 2 epochs on all 60,000 images
    python benchmarks/mixed_precision.py --epochs 1 --train-samples 6000 --batch-size 128

Per policy: the test accuracy (10,000 images) and its difference from float32 in points, the
median train-step time (``train_on_batch`` on one batch, after the compile), the
``memory_report()`` rows (the planned activations, and the activations the peak keeps), and the
resident-set growth of compiling and running one step, against float32's. One JSON line per
policy, then a table.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples"))
from memory import reset_peak, resident_bytes  # noqa: E402  (benchmarks/memory.py)
import mnist_convnet  # noqa: E402  (examples/mnist_convnet.py)

POLICIES = ("float32", "mixed_float16", "mixed_bfloat16")


def build_model():
    """The Keras MNIST convnet (examples/mnist_convnet.py) with the last softmax in float32
    (Keras's mixed precision guide: a float16 softmax's output is too coarse for the loss)."""
    return mnist_convnet.build_model(float32_softmax=True)


def train_and_test(policy, epochs, train_samples, batch_size, seed=1, verbose=0,
                   test_samples=None):
    """Test accuracy of the convnet trained under ``policy`` (what the tests call too)."""
    import hiapi
    hiapi.mixed_precision.set_global_policy(policy)
    try:
        hiapi.utils.set_random_seed(seed)
        (x_train, y_train), (x_test, y_test) = hiapi.datasets.mnist.load_data()
        x_train = (x_train[:train_samples, :, :, None] / 255.0).astype(np.float32)
        y_train = y_train[:train_samples]
        x_test = (x_test[:test_samples, :, :, None] / 255.0).astype(np.float32)
        y_test = y_test[:test_samples]
        model = build_model()
        model.compile(loss="sparse_categorical_crossentropy", optimizer="adam",
                      metrics=["accuracy"])
        start = time.perf_counter()
        model.fit(x_train, y_train, batch_size=batch_size, epochs=epochs, verbose=verbose)
        fit_seconds = time.perf_counter() - start
        _, accuracy = model.evaluate(x_test, y_test, verbose=0)
        return model, float(accuracy), fit_seconds
    finally:
        hiapi.mixed_precision.set_global_policy(None)


def step_memory(policy, batch_size, repeats):
    """Median step time, the report's rows and the resident-set growth of one fresh model's
    compile and step (after a warm-up model, so imports are not counted)."""
    import hiapi
    from hiapi.graph.memory.report import memory_rows
    hiapi.mixed_precision.set_global_policy(policy)
    rng = np.random.default_rng(0)
    x = rng.random((batch_size, 28, 28, 1), dtype=np.float32)
    y = rng.integers(0, 10, batch_size)
    warm = build_model()
    warm.compile(loss="sparse_categorical_crossentropy", optimizer="adam")
    warm.train_on_batch(x, y)
    del warm
    before = resident_bytes()
    reset_peak()
    model = build_model()
    model.compile(loss="sparse_categorical_crossentropy", optimizer="adam")
    model.train_on_batch(x, y)
    growth = resident_bytes() - before
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        model.train_on_batch(x, y)
        times.append(time.perf_counter() - start)
    step = [f for key, f in model._step_functions.items() if key[0] == "train"][-1]
    executable = list(step._executables.values())[-1]
    lines = []
    model.memory_report(print_fn=lines.append)
    return {"step_ms_median": 1000 * float(np.median(times)),
            "report_rows": memory_rows(executable, model), "rss_growth_bytes": growth,
            "report_text": lines[0]}


def one_policy(policy, args):
    row = {"policy": policy, "backend": os.environ.get("HIAPI_BACKEND", "numpy")}
    row.update(step_memory(policy, args.batch_size, args.repeats))
    _, row["test_accuracy"], row["fit_seconds"] = train_and_test(
        policy, args.epochs, args.train_samples, args.batch_size, args.seed)
    return row


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--train-samples", type=int, default=None)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=10, help="timed steps per policy")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--policies", nargs="+", default=list(POLICIES))
    parser.add_argument("--one", help=argparse.SUPPRESS)       # the child process's policy
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(one_policy(args.one, args)), flush=True)
        return
    rows = []
    for policy in args.policies:
        command = [sys.executable, __file__, "--one", policy] + [
            a for a in (argv if argv is not None else sys.argv[1:])]
        out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        rows.append(json.loads(out.strip().splitlines()[-1]))
        report = rows[-1].pop("report_text")
        print(json.dumps(rows[-1]), flush=True)
        print(report, flush=True)
    base = rows[0]
    print(f"{'policy':16s} {'test acc':>9s} {'vs f32':>7s} {'step ms':>8s} {'x f32':>6s} "
          f"{'activ MiB':>10s} {'x f32':>6s} {'RSS MiB':>8s} {'x f32':>6s}")
    for row in rows:
        act, base_act = row["report_rows"]["activations"], base["report_rows"]["activations"]
        print(f"{row['policy']:16s} {100 * row['test_accuracy']:9.2f} "
              f"{100 * (row['test_accuracy'] - base['test_accuracy']):+7.2f} "
              f"{row['step_ms_median']:8.1f} {row['step_ms_median'] / base['step_ms_median']:6.2f} "
              f"{act / 2**20:10.2f} {act / base_act:6.2f} {row['rss_growth_bytes'] / 2**20:8.2f} "
              f"{row['rss_growth_bytes'] / max(base['rss_growth_bytes'], 1):6.2f}")


if __name__ == "__main__":
    main()
