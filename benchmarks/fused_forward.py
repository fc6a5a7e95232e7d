"""How fast a small-batch forward can be on this CPU when it is one compiled call: evidence for
the route to issue #29's last target (``predict``/``evaluate`` at batch 32 within torch's
``no_grad`` forward), measured against what hiapi's ``predict`` does today.

    python benchmarks/fused_forward.py [--batch 32] [--rounds 7]

The model is the issue's 784-128-10 MLP (ReLU, logits). Variants, interleaved round by round in
one process on the same MNIST test rows, microseconds per batch (medians over the rounds):

    fused_1, fused_2  the whole forward as one numba function, on 1 and 2 threads: the first
                      product as dot products over ``k`` in 4x4 register blocks on the
                      *transposed* weight (``k`` contiguous, so LLVM vectorises the sums under
                      ``fastmath``), bias and ReLU applied as each block is stored, the second
                      layer in the same call; 4-row blocks split between threads with
                      ``prange``. Every output is summed by one thread in one order, so its bits
                      do not depend on the thread count.
    numpy             ``x @ W1 + b1``, ReLU, ``@ W2 + b2`` with numpy and its OpenBLAS, nothing
                      else: the floor of a forward that calls BLAS once per layer
    predict           ``model.predict(x, batch_size=...)`` of the same model (hiapi's numba
                      backend, its thread tuner on)
    torch             torch's ``no_grad`` forward of the same weights, its own thread count

What it showed (2026-11-28, the 2-core VM; docs/performance.md, issue #29): with threads
that spin between calls (``omp``, numba's choice here; the script lets numba choose its
layer unless ``NUMBA_THREADING_LAYER`` is set), the fused call took 40 us on two threads
where torch took 61 and ``predict`` 113; with ``OMP_WAIT_POLICY=passive`` (idle threads sleep,
numba's and torch's alike) 121 against torch's 122; under ``NUMBA_THREADING_LAYER=workqueue``
(hiapi's numba backend) ``prange`` alone cost 150 us a call. Spinning threads also slow the
variants measured after them. The hand-written kernel is not a library kernel: it is here so
that the figures can be taken again by whoever builds the real one (an inference-graph rewrite
into generated kernels, weights kept transposed).
"""
import argparse
import json
import os
import time

os.environ.setdefault("NUMBA_THREADING_LAYER", "default")    # tbb, omp or workqueue
os.environ.setdefault("HIAPI_BACKEND", "numba")

import numba  # noqa: E402
import numpy as np  # noqa: E402


@numba.njit(fastmath=True, nogil=True, boundscheck=False, parallel=True, cache=True)
def fused_forward(x, w1t, b1, w2t, b2, hidden, out):
    """``out = relu(x @ w1t.T + b1) @ w2t.T + b2`` for ``x`` of a multiple of 4 rows and a
    hidden width that is a multiple of 4."""
    rows, depth = x.shape
    width = w1t.shape[0]
    for block in numba.prange(rows // 4):
        i = block * 4
        for j in range(0, width, 4):
            s00 = s01 = s02 = s03 = s10 = s11 = s12 = s13 = np.float32(0)
            s20 = s21 = s22 = s23 = s30 = s31 = s32 = s33 = np.float32(0)
            for k in range(depth):
                x0, x1, x2, x3 = x[i, k], x[i + 1, k], x[i + 2, k], x[i + 3, k]
                y0, y1, y2, y3 = w1t[j, k], w1t[j + 1, k], w1t[j + 2, k], w1t[j + 3, k]
                s00 += x0 * y0; s01 += x0 * y1; s02 += x0 * y2; s03 += x0 * y3  # noqa: E702
                s10 += x1 * y0; s11 += x1 * y1; s12 += x1 * y2; s13 += x1 * y3  # noqa: E702
                s20 += x2 * y0; s21 += x2 * y1; s22 += x2 * y2; s23 += x2 * y3  # noqa: E702
                s30 += x3 * y0; s31 += x3 * y1; s32 += x3 * y2; s33 += x3 * y3  # noqa: E702
            sums = ((s00, s01, s02, s03), (s10, s11, s12, s13), (s20, s21, s22, s23),
                    (s30, s31, s32, s33))
            for r in range(4):
                for q in range(4):
                    hidden[i + r, j + q] = max(sums[r][q] + b1[j + q], np.float32(0))
        for r in range(i, i + 4):
            for o in range(w2t.shape[0]):
                total = np.float32(0)
                for k in range(width):
                    total += hidden[r, k] * w2t[o, k]
                out[r, o] = total + b2[o]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=32, help="rows per batch (multiple of 4)")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    if args.batch % 4:
        parser.error(f"--batch must be a multiple of 4, got {args.batch}")
    import hiapi
    from hiapi import layers
    hiapi.utils.set_random_seed(0)
    _, (x, _) = hiapi.datasets.mnist.load_data()
    x = x.reshape(len(x), 784).astype(np.float32) / 255.0
    x = x[:len(x) // args.batch * args.batch]
    model = hiapi.Sequential([hiapi.Input(shape=(784,)), layers.Dense(128, activation="relu"),
                              layers.Dense(10)])
    w1, b1, w2, b2 = model.get_weights()
    w1t, w2t = np.ascontiguousarray(w1.T), np.ascontiguousarray(w2.T)
    batches = [x[i:i + args.batch] for i in range(0, len(x), args.batch)]
    hidden = np.empty((args.batch, 128), np.float32)
    out = np.empty((args.batch, 10), np.float32)

    def fused(threads):
        def run():
            numba.set_num_threads(threads)
            for b in batches:
                fused_forward(b, w1t, b1, w2t, b2, hidden, out)
        return run

    def plain():
        for b in batches:
            h = b @ w1
            h += b1
            np.maximum(h, 0, out=h)
            o = h @ w2
            o += b2

    variants = {"fused_1": fused(1), "fused_2": fused(min(2, numba.config.NUMBA_NUM_THREADS)),
                "numpy": plain,
                "predict": lambda: model.predict(x, batch_size=args.batch, verbose=0)}
    try:
        import torch
        net = torch.nn.Sequential(torch.nn.Linear(784, 128), torch.nn.ReLU(),
                                  torch.nn.Linear(128, 10))
        with torch.no_grad():
            for param, value in zip(net.parameters(), (w1t, b1, w2t, b2)):
                param.copy_(torch.from_numpy(value))

        def torch_forward():
            with torch.no_grad():
                for b in batches:
                    net(torch.from_numpy(b)).numpy()
        variants["torch"] = torch_forward
    except ImportError:
        pass
    fused_forward(batches[0], w1t, b1, w2t, b2, hidden, out)         # compile
    expected = model.predict(batches[0], verbose=0)
    error = float(np.abs(out - expected).max())
    times = {name: [] for name in variants}
    for _ in range(args.rounds):
        for name, run in variants.items():
            start = time.perf_counter()
            run()
            times[name].append((time.perf_counter() - start) / len(batches) * 1e6)
    line = {"benchmark": "fused_forward", "batch": args.batch, "rounds": args.rounds,
            "threading_layer": numba.threading_layer(), "max_abs_difference": error,
            **{f"{name}_us": round(float(np.median(t)), 1) for name, t in times.items()}}
    if "torch" in times:
        line["fused_2_over_torch"] = round(line["fused_2_us"] / line["torch_us"], 3)
        line["predict_over_torch"] = round(line["predict_us"] / line["torch_us"], 3)
    line["load_average"] = round(os.getloadavg()[0], 2)
    print(json.dumps(line))


if __name__ == "__main__":
    main()
