"""A per-op profiler placed on this machine's roofline (Williams, Waterman & Patterson 2009).

For every kernel call of a compiled step: seconds, FLOPs, bytes moved (inputs read plus the
output written), arithmetic intensity (FLOPs per byte), and the fraction of the roofline bound
``min(peak GFLOP/s, bandwidth * intensity)`` it reached. Peak and bandwidth are measured here,
on this machine (a float32 GEMM and a large copy), so the figures say which ops are compute-bound
and which are memory-bound, and how far each is from what the hardware allows::

    model.profile(x_train[:128], y_train[:128])
"""
import time
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from hiapi.graph.memory.cost import flops


@dataclass
class Roofline:
    peak_gflops: float
    bandwidth_gbs: float

    def bound(self, intensity):
        """Attainable GFLOP/s at this arithmetic intensity."""
        return min(self.peak_gflops, self.bandwidth_gbs * intensity)


_measured = {}


def machine_roofline(backend=None):
    """GEMM peak (float32 matmul) and memory bandwidth (a large copy) of the device ``backend``
    runs on (the CPU for numpy and numba, the GPU for cupy), measured once per backend: the best
    of 20 GEMMs and 5 copies, since on a shared machine any one run may be slowed."""
    if backend is None:
        from hiapi.backends import get_backend
        backend = get_backend()
    if backend.name not in _measured:
        xp, size, sync = backend.xp, backend.roofline_gemm_size, backend.synchronize
        a = xp.asarray(np.random.default_rng(0).random((size, size), np.float32))
        out = xp.empty_like(a)
        xp.matmul(a, a, out=out)
        best = min(_timed(lambda: xp.matmul(a, a, out=out), sync) for _ in range(20))
        src = xp.ones(backend.roofline_copy_mb * 2**20 // 8)
        dst = xp.empty_like(src)
        xp.copyto(dst, src)
        copy = min(_timed(lambda: xp.copyto(dst, src), sync) for _ in range(5))
        _measured[backend.name] = Roofline(2 * size**3 / best / 1e9, 2 * src.nbytes / copy / 1e9)
    return _measured[backend.name]


def _timed(fn, synchronize=lambda: None):
    synchronize()
    start = time.perf_counter()
    fn()
    synchronize()
    return time.perf_counter() - start


def profile_executable(executable, arrays, repeats=3):
    """Rows (one per op type, sorted by time): calls, seconds per run, GFLOP, MB moved,
    intensity, achieved GFLOP/s and fraction of the roofline bound."""
    times = [0.0] * len(executable.steps)
    executable.run(arrays)                                   # warm up
    for _ in range(repeats):
        executable.run(arrays, times)
    roofline = machine_roofline(executable.backend)
    order, specs = executable.order, executable.specs
    totals = defaultdict(lambda: [0, 0.0, 0.0, 0.0])
    for (_, out, ins, _, _), seconds in zip(executable.steps, times):
        var = order[out]
        moved = sum(_nbytes(specs[order[j]]) for j in ins) + _nbytes(specs[var])
        row = totals[var.op.name]
        row[0] += 1
        row[1] += seconds / repeats
        row[2] += flops(var, specs)
        row[3] += moved
    rows = []
    for name, (calls, seconds, work, moved) in totals.items():
        intensity = work / moved if moved else 0.0
        achieved = work / seconds / 1e9 if seconds else 0.0
        bound = roofline.bound(intensity)
        rows.append({"op": name, "calls": calls, "seconds": seconds, "gflop": work / 1e9,
                     "mb_moved": moved / 1e6, "intensity": intensity,
                     "achieved_gflops": achieved,
                     "roofline_fraction": achieved / bound if bound else 0.0,
                     "bound": "compute" if bound >= roofline.peak_gflops else "memory"})
    return sorted(rows, key=lambda r: -r["seconds"]), roofline


def _nbytes(spec):
    return int(np.prod(spec.shape)) * spec.dtype.itemsize


def format_profile(rows, roofline, top=15):
    total = sum(r["seconds"] for r in rows) or 1.0
    lines = [f"Roofline of this machine: {roofline.peak_gflops:.1f} GFLOP/s peak (float32 GEMM), "
             f"{roofline.bandwidth_gbs:.1f} GB/s memory bandwidth",
             f"{'op':<24}{'calls':>6}{'ms':>9}{'%':>6}{'GFLOP':>9}{'MB':>9}{'FLOP/B':>8}"
             f"{'GFLOP/s':>9}{'roof%':>7}  bound"]
    for r in rows[:top]:
        lines.append(f"{r['op']:<24}{r['calls']:>6}{1000 * r['seconds']:>9.2f}"
                     f"{100 * r['seconds'] / total:>6.1f}{r['gflop']:>9.3f}{r['mb_moved']:>9.1f}"
                     f"{r['intensity']:>8.2f}{r['achieved_gflops']:>9.1f}"
                     f"{100 * r['roofline_fraction']:>7.1f}  {r['bound']}")
    lines.append(f"total {1000 * total:.1f} ms per step in kernels")
    return "\n".join(lines)
