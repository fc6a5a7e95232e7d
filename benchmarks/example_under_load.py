"""The README's main job, ``examples/mnist_mlp.py`` (seeded), quiet and with busy processes.

    python benchmarks/example_under_load.py [--runs 4] [--busy 0,2] [--epochs 1]
        [--python .venv/bin/python] [--env HIAPI_NUM_THREADS=1]

What users hit first: their seeded script on a machine where something else runs. Each run is
the example as a user starts it, output redirected to a file (so the progress bar prints one
line per epoch), with 0 or N background ``while True: pass`` processes started before it and
stopped after it; runs alternate between the busy levels. The step time is read from the
example's own ``ms/step``. ``--python`` runs another checkout's interpreter (hiapi before a
change: its own ``examples/mnist_mlp.py`` is run); ``--env`` adds variables (e.g. one thread).
One JSON line per busy level: every run's ms/step, and their median.
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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--busy", default="0,2")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE")
    args = parser.parse_args()
    parts = Path(os.path.abspath(args.python)).parts       # the checkout of that .venv
    root = Path(*parts[:parts.index(".venv")]) if ".venv" in parts else \
        Path(__file__).resolve().parent.parent
    example = root / "examples" / "mnist_mlp.py"
    env = {k: v for k, v in os.environ.items()
           if k not in ("HIAPI_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_THREAD_TIMEOUT")}
    env.update(item.split("=", 1) for item in args.env)
    levels = [int(b) for b in args.busy.split(",")]
    results = {level: [] for level in levels}
    for _ in range(args.runs):
        for level in levels:
            results[level].append(one_run(args.python, example, args.epochs, env, level))
    for level in levels:
        per_run = [steps[-1] for steps in results[level]]        # the last epoch's figure
        print(json.dumps({"example": str(example.relative_to(root)), "python": args.python,
                          "env": args.env, "busy_processes": level, "ms_per_step": per_run,
                          "median": sorted(per_run)[len(per_run) // 2],
                          "load_average_1min": round(os.getloadavg()[0], 1)}), flush=True)


if __name__ == "__main__":
    main()
