"""Asynchronous and decentralised training against synchronous allreduce, with a straggler.

    .venv/bin/python benchmarks/async.py                 # MLP and convnet, every method
    .venv/bin/python benchmarks/async.py --model mlp --epochs 8 --sleep 0.03

For each method this starts ``mpiexec -n 4`` on MNIST with the same model, per-worker batch,
data and seed, and makes rank 1 (a worker in every method) sleep ``--sleep`` seconds after
each of its steps. An "epoch" is ``--steps`` steps per worker; after each, rank 0 records the
test accuracy (all 10,000 test images) and the training time so far, evaluation excluded.
Reported: training seconds until the test accuracy first reaches ``--target`` (and that time
against synchronous allreduce, measured in the same run), the final test accuracy, and each
method's communication figures. The learning rate is ``strategy.scale_lr(--lr, base_batch=
128)``: what one update averages decides it (the workers' global batch when synchronous, one
worker's batch when each push is its own update).

Methods (4 ranks each): ``sync`` (``Strategy``, 4 workers), ``ps0``/``ps4``/``async``
(``ParameterServerStrategy(staleness=0/4/None)``: 1 server, 3 workers), ``backup``
(``staleness=0, backup_workers=1``), ``easgd`` (``EASGDStrategy(tau=4)``, alpha 0.9/4;
accuracy during fit is the workers' own copies, the centre only at the end), ``local_sgd``
(``LocalSGDStrategy(period=4)``). Timings on a shared machine are noisy: read the ratios.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

METHODS = ["sync", "ps0", "ps4", "async", "backup", "easgd", "local_sgd"]


def make_strategy(method):
    import hiapi
    distribute = hiapi.distribute
    return {"sync": lambda: distribute.Strategy(),
            "ps0": lambda: distribute.ParameterServerStrategy(staleness=0),
            "ps4": lambda: distribute.ParameterServerStrategy(staleness=4),
            "async": lambda: distribute.ParameterServerStrategy(staleness=None),
            "backup": lambda: distribute.ParameterServerStrategy(staleness=0,
                                                                 backup_workers=1),
            "easgd": lambda: distribute.EASGDStrategy(tau=4, alpha=0.9 / 4),
            "local_sgd": lambda: distribute.LocalSGDStrategy(period=4)}[method]()


def make_model(kind):
    import hiapi
    from hiapi import layers
    if kind == "mlp":
        stack = [hiapi.Input(shape=(28, 28)), layers.Flatten(),
                 layers.Dense(128, activation="relu")]
    else:
        stack = [hiapi.Input(shape=(28, 28, 1)), layers.Conv2D(16, 3, activation="relu"),
                 layers.MaxPooling2D(2), layers.Conv2D(32, 3, activation="relu"),
                 layers.MaxPooling2D(2), layers.Flatten()]
    return hiapi.Sequential(stack + [layers.Dense(10, activation="softmax")])


def run_one(args):
    """One method under mpiexec: train, and rank 0 writes what it measured."""
    import numpy as np
    import hiapi

    strategy = make_strategy(args.method)
    (x, y), (x_test, y_test) = hiapi.datasets.mnist.load_data()
    x, x_test = x / np.float32(255), x_test / np.float32(255)
    if args.model == "conv":
        x, x_test = x[..., None], x_test[..., None]
    hiapi.utils.set_random_seed(0)
    with strategy.scope():
        model = make_model(args.model)
        lr = strategy.scale_lr(args.lr, base_batch=128, per_worker_batch=args.batch)
        model.compile(optimizer=hiapi.optimizers.SGD(lr, momentum=0.9),
                      loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    clock = Clock(args, strategy)
    model.fit(x, y, batch_size=args.batch, epochs=args.epochs, steps_per_epoch=args.steps,
              validation_data=(x_test, y_test), verbose=0, callbacks=[clock])
    final = model.evaluate(x_test, y_test, verbose=0, return_dict=True)["accuracy"]
    if strategy.is_chief:
        stats = strategy.stats
        record = {"curve": clock.curve, "final": final, "lr": lr, "workers": strategy.size,
                  "train_seconds": clock.train_seconds()}
        if hasattr(stats, "dropped"):
            record.update(dropped=stats.dropped, staleness=stats.mean_staleness,
                          max_staleness=stats.max_staleness,
                          sent=sum(v for k, v in stats.bytes_sent.items()
                                   if int(k) < strategy.size))
        else:
            record.update(sent=stats.sent * strategy.size)
        Path(args.out).write_text(json.dumps(record))


class Clock:
    """Rank 0's training time (validation excluded) and test accuracy after each epoch; the
    straggler's sleep."""

    def __new__(cls, args, strategy):
        import hiapi

        class _Clock(hiapi.callbacks.Callback):
            def on_train_begin(self, logs=None):
                self.start, self.evaluating, self.curve = time.perf_counter(), 0.0, []

            def on_train_batch_end(self, batch, logs=None):
                if strategy.rank == 1:
                    time.sleep(args.sleep)

            def on_test_begin(self, logs=None):
                self._test_start = time.perf_counter()

            def on_test_end(self, logs=None):
                self.evaluating += time.perf_counter() - self._test_start

            def on_epoch_end(self, epoch, logs=None):
                self.curve.append((self.train_seconds(), logs.get("val_accuracy")))

            def train_seconds(self):
                return time.perf_counter() - self.start - self.evaluating
        return _Clock()


def drive(args):
    python = sys.executable
    launcher = str(Path(python).parent / "mpiexec")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
           "HIAPI_NUM_THREADS": "1"}
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; "
          f"4 ranks, batch {args.batch} per worker, {args.steps} steps per epoch, "
          f"{args.epochs} epochs, rank 1 sleeps {args.sleep} s per step", flush=True)
    for model in args.model:
        results = {}
        for method in args.methods:
            with tempfile.TemporaryDirectory() as tmp:
                out = Path(tmp) / "result.json"
                command = [launcher, "-n", "4", python, __file__, "--run", method, "--model",
                           model, "--out", str(out)] + _passed(args)
                done = subprocess.run(command, env=env, capture_output=True, text=True,
                                      timeout=args.timeout)
                if done.returncode != 0 or not out.exists():
                    print(f"{model} {method}: failed ({done.returncode})\n"
                          f"{done.stderr[-2000:]}", flush=True)
                    continue
                results[method] = json.loads(out.read_text())
            _print_row(model, method, results[method], results.get("sync"), args.target)
        print(f"load average after {model}: {os.getloadavg()[0]:.1f}", flush=True)


def _reached(result, target):
    return next((seconds for seconds, accuracy in result["curve"] if accuracy >= target), None)


def _print_row(model, method, result, sync, target):
    reached = _reached(result, target)
    base = _reached(sync, target) if sync else None
    ratio = f"{reached / base:.2f}x" if reached and base else "-"
    when = f"{reached:6.1f} s" if reached else "  never"
    extra = f"dropped {result['dropped']}, staleness mean {result['staleness']:.2f} max " \
            f"{result['max_staleness']}" if "dropped" in result else ""
    best = max(accuracy for _, accuracy in result["curve"])
    print(f"{model:4s} {method:9s} workers {result['workers']} lr {result['lr']:.4f}  "
          f"to {target:.0%}: {when} ({ratio} of sync)  final {result['final']:.4f}  "
          f"best {best:.4f}  "
          f"train {result['train_seconds']:6.1f} s  sent {result['sent'] / 2**20:7.1f} MiB  "
          f"{extra}", flush=True)


def _passed(args):
    return ["--epochs", str(args.epochs), "--steps", str(args.steps), "--batch",
            str(args.batch), "--lr", str(args.lr), "--sleep", str(args.sleep)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", nargs="+", default=["mlp", "conv"])
    parser.add_argument("--methods", nargs="+", default=METHODS, choices=METHODS)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--steps", type=int, default=60, help="steps per worker per epoch")
    parser.add_argument("--batch", type=int, default=32, help="per worker")
    parser.add_argument("--lr", type=float, default=0.1, help="for a batch of 128")
    parser.add_argument("--sleep", type=float, default=0.03)
    parser.add_argument("--target", type=float, default=0.97)
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--run", choices=METHODS, help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:
        args.method, args.model = args.run, args.model[0]
        run_one(args)
    else:
        drive(args)


if __name__ == "__main__":
    main()
