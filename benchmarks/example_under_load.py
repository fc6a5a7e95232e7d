"""The README's main job, ``examples/mnist_mlp.py`` (seeded), quiet and with busy processes.

    python benchmarks/example_under_load.py [--runs 4] [--busy 0,2] [--epochs 1]
        [--variant default --variant HIAPI_NUM_THREADS=1
         --variant python=../before/.venv/bin/python ...]

What users hit first: their seeded script on a machine where something else runs. Each run is
the example as a user starts it, output redirected to a file (so the progress bar prints one
line per epoch), with 0 or N background ``while True: pass`` processes started before it and
stopped after it. The step time is read from the example's own ``ms/step``. A variant is
``default`` or comma-separated ``NAME=VALUE`` environment variables (e.g. one thread), where
``python=PATH`` runs another checkout's interpreter instead (hiapi before a change: that
checkout's own ``examples/mnist_mlp.py`` is run). Runs rotate through the busy levels and the
variants, so a noisy neighbour hits all alike. One JSON line per (variant, busy level): every
run's ms/step, and their median.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def busy_processes(count):
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def one_run(python, example, epochs, env, busy):
    background = busy_processes(busy)
    time.sleep(0.5)
    try:
        with tempfile.TemporaryFile("w+") as output:
            subprocess.run([python, str(example), "--epochs", str(epochs)], stdout=output,
                           stderr=subprocess.STDOUT, env=env, check=True)
            output.seek(0)
            text = output.read()
    finally:
        for process in background:
            process.kill()
            process.wait()
    steps = [int(ms) for ms in re.findall(r"(\d+)ms/step", text)]
    if not steps:
        raise RuntimeError(f"no ms/step in the example's output:\n{text[-2000:]}")
    return steps


def parse_variant(text):
    """(interpreter, extra environment) of a ``--variant``."""
    settings = dict(item.split("=", 1) for item in text.split(",") if item and item != "default")
    return settings.pop("python", sys.executable), settings


def checkout_of(python):
    """The example next to the interpreter's ``.venv`` (this checkout's otherwise)."""
    parts = Path(os.path.abspath(python)).parts
    return Path(*parts[:parts.index(".venv")]) if ".venv" in parts else \
        Path(__file__).resolve().parent.parent


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--busy", default="0,2")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--variant", action="append", metavar="default|NAME=VALUE,...")
    args = parser.parse_args()
    variants = args.variant or ["default"]
    base = {k: v for k, v in os.environ.items()
            if k not in ("HIAPI_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_THREAD_TIMEOUT")}
    levels = [int(b) for b in args.busy.split(",")]
    results = {(v, level): [] for v in variants for level in levels}
    for run in range(args.runs):
        for level in levels:
            for variant in variants[run % len(variants):] + variants[:run % len(variants)]:
                python, extra = parse_variant(variant)
                example = checkout_of(python) / "examples" / "mnist_mlp.py"
                results[variant, level].append(
                    one_run(python, example, args.epochs, {**base, **extra}, level))
    for (variant, level), runs in results.items():
        per_run = [steps[-1] for steps in runs]        # the last epoch's figure
        print(json.dumps({"variant": variant, "busy_processes": level, "ms_per_step": per_run,
                          "median": sorted(per_run)[len(per_run) // 2],
                          "load_average_1min": round(os.getloadavg()[0], 1)}), flush=True)


if __name__ == "__main__":
    main()
