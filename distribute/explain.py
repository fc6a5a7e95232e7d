"""``strategy.explain()``: where a data-parallel step's time goes, and what would make it shorter.

It measures, on the running job (every rank calls it, as for any collective):

- the alpha-beta model's constants on the strategy's communicator (``algorithms.cost_model``),
- the model's compute time per step, op by op: a few train steps of one batch are run with the
  executor's per-op timer (the profiler's path), then the weights and optimizer state are put
  back, so the time at which each gradient is ready in the backward pass is known;

then prices each choice with the model (Thakur, Rabenseifner & Gropp 2005; the seed notes):
buckets of ``bucket_cap_mb`` filled in the order the backward pass produces the gradients; a
bucket's allreduce starts when its last gradient is ready and after the previous bucket's has
finished (one communication stream, as the background thread and MPI's progress give), and
lasts what the algorithm's prediction says. The step takes ``max(backward end, last bucket
done) + the updates``, and the communication hidden behind compute is the part that finished
before the backward pass did. Compression (``topk``, ``dgc``) is priced from each compressor's
measured bytes ratio and encoding speed, its payload summed by the sparse allreduce. Other
worker counts reuse this machine's constants with the formulas' dependence on P.

    report = strategy.explain(model, x_train, y_train, batch_size=64)
    report["recommendation"]      # {'algorithm': ..., 'bucket_cap_mb': ..., 'step_seconds': ...}
"""
import time
from functools import partial

import numpy as np

from hiapi.backends import get_backend
from hiapi.distribute import compression as compression_module
from hiapi.distribute.algorithms import candidate_algorithms, measure
from hiapi.distribute.algorithms.base import steps

BUCKET_CAPS_MB = (1, 4, 25, 100)
COMPRESSIONS = ("none", "topk", "dgc")
_candidates: dict = {}         # communicator handle -> candidate algorithms


def _algorithms(comm):
    """The candidate algorithms on ``comm``, made once per process (they hold shared memory)."""
    key = comm.py2f()
    if key not in _candidates:
        _candidates[key] = candidate_algorithms(comm.Dup(), comm)
    return _candidates[key]


def _is_collective(var):
    return type(var.op).__module__.startswith("hiapi.distribute")


def step_timeline(model, x, y, batch_size, repeats=3):
    """(seconds of compute per step, [(ready seconds, gradient bytes)] in backward order,
    seconds until the last gradient is ready), from per-op times of one batch's train step.
    Weights, optimizer state (its step counter too) and the strategy's byte and step counts
    are restored afterwards."""
    xs, ys, weights = model._prepare(x[:batch_size], y[:batch_size])
    step = model._step("train", xs, ys, weights)
    variables = model.weights + model.state_variables + model.optimizer.variables
    saved = [(v, v.numpy()) for v in variables]
    n, plan = len(xs[0]), model.distribution
    counters = dict(vars(plan.stats)) if hasattr(plan, "stats") else None     # bytes, steps
    batch = getattr(plan, "_batch", None)
    feeds = [*xs, *ys, *weights, *model.optimizer.step_values(),
             *plan.step_values(n, plan.global_batch(n))]
    backend = get_backend()
    arrays = [step._coerce(var, value, backend) for var, value in zip(step.inputs, feeds)]
    executable = step.executable(tuple(tuple(a.shape) for a in arrays))
    times = [0.0] * len(executable.steps)
    try:
        executable.run(arrays)                                    # warm up
        for _ in range(repeats):
            executable.run(arrays, times)
    finally:
        for variable, value in saved:
            variable.assign(value)
        if counters is not None:                  # these steps are not training steps
            vars(plan.stats).update(counters)
            plan._batch = batch
    order, specs = executable.order, executable.specs
    produced_at, clock, elapsed = {}, [], 0.0
    for index, ((_, out, _, _, _), seconds) in enumerate(zip(executable.steps, times)):
        if not _is_collective(order[out]):
            elapsed += seconds / repeats
        produced_at[out] = index
        clock.append(elapsed)
    gradients = []
    for _, out, ins, _, _ in executable.steps:
        if _is_collective(order[out]) and order[out].op.name.endswith(("start", "allreduce")):
            for j in ins:
                var = order[j]
                if j in produced_at and not _is_collective(var) and len(specs[var].shape):
                    nbytes = int(np.prod(specs[var].shape)) * specs[var].dtype.itemsize
                    gradients.append((clock[produced_at[j]], nbytes))
    gradients.sort()
    backward_end = gradients[-1][0] if gradients else elapsed
    return elapsed, gradients, backward_end


def buckets(gradients, cap_bytes):
    """[(ready seconds, bytes)] of the buckets filled in backward order up to ``cap_bytes``."""
    out, ready, size = [], 0.0, 0
    for when, nbytes in gradients:
        if size and size + nbytes > cap_bytes:
            out.append((ready, size))
            size = 0
        ready, size = when, size + nbytes
    if size:
        out.append((ready, size))
    return out


def schedule(bucket_list, comm_seconds, compute, backward_end):
    """(step seconds, communication seconds, fraction of it hidden behind the backward pass)
    with one communication stream: a bucket starts when ready and the previous one is done."""
    done, total = 0.0, 0.0
    for (ready, nbytes) in bucket_list:
        seconds = comm_seconds(nbytes)
        done, total = max(done, ready) + seconds, total + seconds
    exposed = max(0.0, done - backward_end)
    hidden = min(1.0, max(0.0, 1.0 - exposed / total)) if total else 1.0
    return compute + exposed, total, hidden


def compressor_costs(name, sample=1 << 18):
    """(bytes ratio, encoding seconds per dense byte) of compressor ``name``, measured on a
    random gradient (DGC at its final sparsity, no warm-up)."""
    compressor = compression_module.get(name)
    if hasattr(compressor, "final_sparsity"):
        compressor.sparsity, compressor.momentum = compressor.final_sparsity, 0.0
    gradient = np.random.default_rng(0).standard_normal(sample).astype(np.float32)
    state = {slot: np.zeros(sample, np.float32) for slot in compressor.state_slots}
    start = time.perf_counter()
    payload = compressor.compress(gradient, state)
    seconds = time.perf_counter() - start
    return gradient.nbytes / sum(p.nbytes for p in payload), seconds / gradient.nbytes


def explain(strategy, model, x, y, batch_size=32, bucket_caps_mb=BUCKET_CAPS_MB,
            workers=None, print_fn=None):
    """Measure, predict and recommend (see the module docstring); returns the numbers. Rank 0
    prints the table (``print_fn``, default ``print``)."""
    if not strategy.is_chief:
        print_fn = _silent
    communicator = strategy.communicator
    comm, size = getattr(communicator, "comm", None), communicator.size
    compute, gradients, backward_end = step_timeline(model, x, y, batch_size)
    report = {"workers": size, "compute_seconds": compute, "backward_seconds": backward_end,
              "gradient_bytes": sum(b for _, b in gradients), "choices": []}
    if comm is None or size == 1:
        report["recommendation"] = {"algorithm": "native", "note": "one process: nothing to "
                                    "communicate; run under mpiexec to measure the network"}
        _print(report, print_fn)
        return report
    candidates = _algorithms(comm)
    costs = measure(comm, candidates)
    report["costs"] = costs.as_dict()
    report["allreduce_predictions"] = {
        a.name: {n: a.predict(n, costs) for n in (256 << 10, 4 << 20, 16 << 20)}
        for a in candidates}

    def choice(algorithm, cap_mb, compression, count, seconds_for, **extra):
        step_s, comm_s, hidden = schedule(buckets(gradients, cap_mb * 2**20), seconds_for,
                                          compute, backward_end)
        report["choices"].append({"algorithm": algorithm, "bucket_cap_mb": cap_mb,
                                  "compression": compression, "workers": count,
                                  "step_seconds": step_s, "comm_seconds": comm_s,
                                  "hidden_fraction": hidden, **extra})
        return report["choices"][-1]

    best = min((choice(a.name, cap, "none", size, partial(a.predict, costs=costs))
                for a in candidates for cap in bucket_caps_mb),
               key=lambda c: c["step_seconds"])
    cap = best["bucket_cap_mb"]
    lossy = min((choice("sparse_allreduce", cap, name, size,
                        partial(_sparse_seconds, costs=costs, size=size, ratio=ratio,
                                encode=encode), bytes_ratio=ratio)
                 for name in COMPRESSIONS[1:]
                 for ratio, encode in [compressor_costs(name)]),
                key=lambda c: c["step_seconds"])
    for count in workers or (2 * size, 4 * size, 8 * size):
        for a in candidates:
            if a.name in ("native", "ring", "halving_doubling"):      # formulas in P
                choice(a.name, cap, "none", count, partial(a.predict, costs=costs, size=count))
    report["recommendation"] = dict(best)
    if lossy["step_seconds"] < 0.9 * best["step_seconds"]:
        report["recommendation"]["note"] = (
            f"compression={lossy['compression']!r} would take {lossy['step_seconds']*1e3:.1f} "
            f"ms per step (lossy: check accuracy)")
    _print(report, print_fn)
    return report


def _sparse_seconds(nbytes, costs, size, ratio, encode):
    """A compressed bucket: encoding, then the sparse allreduce's log2(P) rounds, whose
    messages grow with the union of the ranks' coordinates (at most (P-1) payloads in all,
    none larger than the dense bucket)."""
    payload = nbytes / ratio
    moved = min((size - 1) * payload, steps(size) * nbytes)
    return nbytes * encode + steps(size) * costs.alpha + moved * costs.beta


def _silent(text):
    pass


def _print(report, print_fn):
    lines = [f"workers {report['workers']}: compute {report['compute_seconds'] * 1e3:.2f} ms per "
             f"step (gradients ready after {report['backward_seconds'] * 1e3:.2f} ms), "
             f"{report['gradient_bytes'] / 2**20:.2f} MB of gradients"]
    if "costs" in report:
        c = report["costs"]
        lines.append(f"measured: alpha {c['alpha'] * 1e6:.1f} us, beta {1e-9 / c['beta']:.2f} "
                     f"GB/s, sum {1e-9 / c['gamma']:.2f} GB/s, copy {1e-9 / c['copy']:.2f} GB/s; "
                     + ", ".join(f"{k} {v * 1e6:.0f} us" for k, v in c["latency"].items()))
        lines.append(f"{'algorithm':>17} {'bucket MB':>9} {'compress':>8} {'workers':>7} "
                     f"{'step ms':>8} {'comm ms':>8} {'hidden':>6}")
        for c in report["choices"]:
            lines.append(f"{c['algorithm']:>17} {c['bucket_cap_mb']:>9} {c['compression']:>8} "
                         f"{c['workers']:>7} {c['step_seconds'] * 1e3:>8.2f} "
                         f"{c['comm_seconds'] * 1e3:>8.2f} {c['hidden_fraction']:>6.0%}")
    r = report["recommendation"]
    lines.append("recommendation: " + ", ".join(
        f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in r.items()))
    (print_fn or print)("\n".join(lines))
