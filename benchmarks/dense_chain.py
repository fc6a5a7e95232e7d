"""The dense chain (a chain of ``Dense`` layers in one numba call, issue #29's small-batch
``predict``/``evaluate``) against numpy + its BLAS and torch, in one process.

    python benchmarks/dense_chain.py [--rounds 7] [--layers] [--predict]

``--layers`` (default on): ``relu(x @ W + b)`` for one layer at several (rows, k, n), the
``dense_chain`` kernel on 1 and 2 threads against ``np.matmul`` + ``np.maximum`` (OpenBLAS, its
own threads) and torch's ``addmm`` + ``relu`` under ``no_grad`` (its own threads); microseconds
per call, medians over the rounds. ``--predict``: the 784-128-10 MLP (ReLU, logits) on MNIST's
test rows at batch 32: ``model.predict`` per batch with the rewrite (hiapi's defaults, numba
backend) and without it (``HIAPI_PASSES=-dense_chain`` in a second model), against torch's
``no_grad`` forward of the same weights with ``.numpy()`` and one ``np.concatenate``, as
``benchmarks/fit_patterns.py`` writes it. One JSON line per measurement, with the ratios to
torch. Variants alternate round by round, so drift hits them alike.

Torch's OpenMP threads spin for a while after each call and slow whatever runs next on the
other core: every hiapi variant runs first in its round, after a 20 ms pause.
"""
import argparse
import json
import os
import sys
import time

import numpy as np

# (rows, k, n) within the kernel's 4-64 rows (beyond, BLAS's packed GEMM won: 256x784 @
# 784x128 took the loops 270 us against OpenBLAS's 243, so larger batches go layer by layer)
SHAPES = ((8, 784, 128), (32, 784, 128), (64, 784, 128), (32, 1024, 1024), (64, 1024, 1024))


def _us_per_call(fn, calls):
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls * 1e6


def layers_benchmark(rounds):
    import torch
    import hiapi
    from hiapi.backends.numba_backend import backend
    kernel = backend.kernels["dense_chain"]
    rng = np.random.default_rng(0)
    for rows, k, n in SHAPES:
        x = rng.random((rows, k), dtype=np.float32)
        w = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32)
        b = np.zeros(n, np.float32)
        out = np.empty((rows, n), np.float32)
        tx, tw, tb = (torch.from_numpy(a) for a in (x, w, b))
        calls = max(20, int(2e5 / (rows * k * n / 1e4)))

        def chain():
            kernel(out, x, w, b, activations=("relu",), weights_are_state=True)

        def blas():
            np.matmul(x, w, out=out)
            np.maximum(out, 0, out=out)

        def torch_layer():
            with torch.no_grad():
                torch.relu(torch.addmm(tb, tx, tw))
        times = {}
        for _ in range(rounds):
            for name, threads, fn in (("chain_1", 1, chain), ("chain_2", 2, chain),
                                      ("numpy", None, blas), ("torch", None, torch_layer)):
                hiapi.config.set_num_threads(threads)
                time.sleep(0.02)
                fn()
                times.setdefault(name, []).append(_us_per_call(fn, calls))
        hiapi.config.set_num_threads(None)
        medians = {name: round(float(np.median(v)), 1) for name, v in times.items()}
        print(json.dumps({"benchmark": "dense_chain", "shape": [rows, k, n], "us": medians,
                          "chain_2_over_torch": round(medians["chain_2"] / medians["torch"], 3),
                          "chain_2_over_numpy": round(medians["chain_2"] / medians["numpy"], 3),
                          "load_average": round(os.getloadavg()[0], 2)}), flush=True)


def predict_benchmark(rounds, batch=32):
    import torch
    import hiapi
    from hiapi import layers
    (_, _), (x, _) = hiapi.datasets.mnist.load_data()
    x = (x.reshape(len(x), 784).astype(np.float32) / 255.0)[:len(x) // batch * batch]

    def model():
        hiapi.utils.set_random_seed(0)
        m = hiapi.Sequential([hiapi.Input(shape=(784,)), layers.Dense(128, activation="relu"),
                              layers.Dense(10)])
        m.compile(optimizer="adam", loss="mse")
        return m
    fused = model()
    os.environ["HIAPI_PASSES"] = "-dense_chain"
    plain = model()
    plain.predict(x[:batch], verbose=0)           # compiled now, without the rewrite
    del os.environ["HIAPI_PASSES"]
    fused.predict(x[:batch], verbose=0)
    torch_model = torch.nn.Sequential(torch.nn.Linear(784, 128), torch.nn.ReLU(),
                                      torch.nn.Linear(128, 10))
    weights = fused.get_weights()
    with torch.no_grad():
        torch_model[0].weight.copy_(torch.from_numpy(weights[0].T))
        torch_model[0].bias.copy_(torch.from_numpy(weights[1]))
        torch_model[2].weight.copy_(torch.from_numpy(weights[2].T))
        torch_model[2].bias.copy_(torch.from_numpy(weights[3]))
    tx = torch.from_numpy(x)

    def torch_predict():
        with torch.no_grad():
            return np.concatenate([torch_model(tx[i:i + batch]).numpy()
                                   for i in range(0, len(tx), batch)])
    np.testing.assert_allclose(fused.predict(x, batch_size=batch, verbose=0), torch_predict(),
                               rtol=1e-4, atol=1e-4)
    variants = (("predict", lambda: fused.predict(x, batch_size=batch, verbose=0)),
                ("predict_unfused", lambda: plain.predict(x, batch_size=batch, verbose=0)),
                ("torch", torch_predict))
    times = {}
    for _ in range(rounds):
        for name, fn in variants:
            time.sleep(0.02)
            times.setdefault(name, []).append(_us_per_call(fn, 1) / (len(x) // batch))
    medians = {name: round(float(np.median(v)), 1) for name, v in times.items()}
    print(json.dumps({"benchmark": "dense_chain_predict", "batch": batch, "us_per_batch": medians,
                      "predict_over_torch": round(medians["predict"] / medians["torch"], 3),
                      "unfused_over_torch": round(medians["predict_unfused"] / medians["torch"],
                                                  3),
                      "load_average": round(os.getloadavg()[0], 2)}), flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--layers", action="store_true")
    parser.add_argument("--predict", action="store_true")
    args = parser.parse_args(argv)
    os.environ["HIAPI_BACKEND"] = "numba"
    both = not (args.layers or args.predict)
    if args.layers or both:
        layers_benchmark(args.rounds)
    if args.predict or both:
        predict_benchmark(args.rounds)


if __name__ == "__main__":
    sys.exit(main())
