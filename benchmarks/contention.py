"""How train steps degrade when other processes want the same cores: hiapi against PyTorch.

    python benchmarks/contention.py [--rounds 3] [--steps 15] [--workloads mlp,convnet]
        [--frameworks torch,numpy,numba] [--busy 0,1,2]

Needs a CPU build of torch (``pip install torch==2.13.0``; not a hiapi dependency). Workloads,
SGD with momentum 0.9: ``mlp`` the Keras MLP 784-512-512-10 at batch 128, ``convnet`` the Keras
MNIST convnet at batch 128 (and ``mlp1024``, 784-1024-1024-10 at batch 256).

Every framework runs with its defaults: no thread variables are set (hiapi's thread budget and
its fit-time thread tuner, torch's own choice decide). Each (workload, framework) is one
long-lived process that builds its model, warms up (numba compiles), then, each time it is
asked, runs ``--settle`` untimed steps (conditions just changed) and times ``--steps`` steps;
hiapi's steps run inside one long ``fit()``, where the thread tuner works. The
parent starts 0, 1 or 2 background busy loops (``while True: pass`` processes, stopped after
the measurement) and asks every framework in turn, rotating the order, for ``--rounds``
rounds: all frameworks see the same conditions, so compare the loaded/quiet ratios measured
in the same run, not absolute times between runs.

Variants for finding what helps: ``numba:1`` (HIAPI_NUM_THREADS=1), ``numba:spin``
(OPENBLAS_THREAD_TIMEOUT=28 and every CPU: hiapi before the thread budget),
``torch:1`` (torch.set_num_threads(1)), ``numba:fixed`` (HIAPI_NUM_THREADS=<CPUs>: the budget
without the tuner).

One JSON line per (workload, framework, busy processes): median and min-max step time, and the
ratio of the median to the same framework's quiet median.
"""
import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import train_step  # noqa: E402  (the model builders, shared with benchmarks/train_step.py)

train_step.BATCH.update({"mlp1024": 256, "mlp": 128})
BUILDERS = train_step.hiapi_model, train_step.torch_model     # before torch_worker swaps them
train_step.INPUT.update({"mlp1024": (784,)})
CPUS = str(len(os.sched_getaffinity(0)))
VARIANT_ENV = {"1": {"HIAPI_NUM_THREADS": "1"}, "fixed": {"HIAPI_NUM_THREADS": CPUS},
               "spin": {"HIAPI_NUM_THREADS": CPUS, "OPENBLAS_THREAD_TIMEOUT": "28"}}
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS", "MKL_NUM_THREADS",
               "OPENBLAS_THREAD_TIMEOUT", "HIAPI_NUM_THREADS", "OMP_WAIT_POLICY")


def hiapi_model(workload):
    import hiapi
    from hiapi import layers
    if workload == "mlp":
        return hiapi.Sequential([hiapi.Input(shape=(784,)), layers.Dense(512, activation="relu"),
                                 layers.Dense(512, activation="relu"), layers.Dense(10)])
    return BUILDERS[0]("mlp" if workload == "mlp1024" else workload)


def torch_model(workload):
    from torch import nn
    if workload == "mlp":
        return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                             nn.Linear(512, 10))
    return BUILDERS[1]("mlp" if workload == "mlp1024" else workload)


def torch_worker(workload, variant, commands):
    import torch
    default = torch.get_num_threads()               # torch's own choice, before train_step's 2
    os.environ["OMP_NUM_THREADS"] = str(default)    # train_step's builder reads it (set below)
    train_step.torch_model = torch_model            # this file's workloads
    step = train_step.torch_step(workload)
    torch.set_num_threads(1 if variant == "1" else default)
    for _ in range(3):
        step()
    print(json.dumps({"ready": True}), flush=True)
    for settle, timed in commands:
        for _ in range(settle):
            step()
        times = []
        for _ in range(timed):
            start = time.perf_counter()
            step()
            times.append(time.perf_counter() - start)
        print(json.dumps({"times": times}), flush=True)


def hiapi_worker(workload, backend, commands):
    """One long fit(); between requests it waits for the next one inside a batch-begin hook,
    before the thread tuner starts its clock, so waiting is never counted as a step."""
    os.environ["HIAPI_BACKEND"] = backend
    import hiapi
    model = hiapi_model(workload)
    model.compile(optimizer=hiapi.optimizers.SGD(0.01, momentum=0.9),
                  loss=hiapi.losses.SparseCategoricalCrossentropy(from_logits=True))
    batch = train_step.BATCH[workload]
    x = np.random.default_rng(0).random((batch * 20, *train_step.INPUT[workload]), np.float32)
    y = np.random.default_rng(1).integers(0, 10, len(x))

    class Requests(hiapi.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.left, self.settle, self.times, self.ready = 3, 0, [], False   # 3: warm-up

        def on_train_batch_begin(self, batch, logs=None):
            if self.left == 0 and self.settle == 0:
                print(json.dumps({"times": self.times} if self.ready else {"ready": True}),
                      flush=True)
                self.ready = True
                self.settle, self.left = next(commands, (None, None))
                if self.left is None:
                    sys.exit(0)
                self.times = []
            self.start = time.perf_counter()

        def on_train_batch_end(self, batch, logs=None):
            if self.settle:
                self.settle -= 1
            else:
                self.left -= 1
                self.times.append(time.perf_counter() - self.start)

    model.fit(x, y, batch_size=batch, epochs=10**6, verbose=0, shuffle=False,
              callbacks=[Requests()])


def worker(workload, framework):
    """Build, warm up, then for each "SETTLE TIMED" line on stdin run SETTLE untimed steps
    (the conditions just changed) and time TIMED steps."""
    commands = (tuple(map(int, line.split())) for line in sys.stdin)
    base, _, variant = framework.partition(":")
    if base == "torch":
        torch_worker(workload, variant, commands)
    else:
        hiapi_worker(workload, base, commands)


def start_worker(workload, framework):
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARS}
    env.update(VARIANT_ENV.get(framework.partition(":")[2], {}))
    process = subprocess.Popen([sys.executable, __file__, "--worker", workload, framework],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    assert json.loads(process.stdout.readline())["ready"], framework
    return process


def busy_processes(count):
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def stop(processes):
    for process in processes:
        process.kill()
        process.wait()


def measure(workload, frameworks, busy_levels, rounds, steps, settle):
    workers = {f: start_worker(workload, f) for f in frameworks}
    times = {(f, b): [] for f in frameworks for b in busy_levels}
    try:
        for round_index in range(rounds):
            for level in busy_levels:
                background = busy_processes(level)
                time.sleep(0.5)                         # let the busy loops take their share
                try:
                    order = frameworks[round_index % len(frameworks):] + \
                        frameworks[:round_index % len(frameworks)]
                    for framework in order:
                        workers[framework].stdin.write(f"{settle} {steps}\n")
                        workers[framework].stdin.flush()
                        reply = json.loads(workers[framework].stdout.readline())
                        times[framework, level] += reply["times"]
                finally:
                    stop(background)
    finally:
        for process in workers.values():
            process.stdin.close()
            process.wait()
    return times


def report(workload, times, frameworks, busy_levels):
    for framework in frameworks:
        quiet = float(np.median(times[framework, busy_levels[0]]))
        for level in busy_levels:
            t = times[framework, level]
            median = float(np.median(t))
            print(json.dumps({
                "workload": workload, "framework": framework, "busy_processes": level,
                "median_ms": round(1e3 * median, 2),
                "min_max_ms": [round(1e3 * min(t), 2), round(1e3 * max(t), 2)],
                "over_quiet": round(median / quiet, 2), "steps_timed": len(t),
                "load_average_1min": round(os.getloadavg()[0], 1)}), flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=15)
    parser.add_argument("--workloads", default="mlp,convnet")
    parser.add_argument("--frameworks", default="torch,numpy,numba")
    parser.add_argument("--busy", default="0,1,2")
    parser.add_argument("--settle", type=int, default=15)
    parser.add_argument("--worker", nargs=2, metavar=("WORKLOAD", "FRAMEWORK"))
    args = parser.parse_args()
    if args.worker:
        worker(*args.worker)
        return
    frameworks = args.frameworks.split(",")
    busy_levels = [int(b) for b in args.busy.split(",")]
    for workload in args.workloads.split(","):
        times = measure(workload, frameworks, busy_levels, args.rounds, args.steps, args.settle)
        report(workload, times, frameworks, busy_levels)


if __name__ == "__main__":
    main()
