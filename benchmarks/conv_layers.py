"""Each convolution of the benchmark CNNs, op by op, against PyTorch: where the CPU gap is.

    python benchmarks/conv_layers.py [--backend numba] [--repeats 15] [--threads 2]
                                     [--networks cifar,convnet]

For every Conv2D layer of ``train_step.py``'s CIFAR-style CNN and Keras MNIST convnet (same
shapes and batch sizes), times hiapi's three convolution kernels (``conv2d``,
``conv2d_filter_grad``, ``conv2d_input_grad``, called as the executor calls them, with their
planned workspace) and torch's forward convolution and its two gradients
(``torch.nn.grad.conv2d_weight`` / ``conv2d_input``, which call the same oneDNN/ATen kernels as
autograd), interleaved call by call. One JSON line per (layer, op): median milliseconds, GFLOP/s
and hiapi / torch. The first layer's input gradient is timed too although a train step never
needs it (the input is data).

``--clock cpu`` times process CPU time instead of wall time: with ``--threads 1`` on a busy
machine that is the work done, where wall time mostly measures waiting for a core.

The 3x3 stride-1 layers of 16 channels or more run as Winograd F(2x2, 3x3)
(``backends/winograd.py``); ``--im2col`` times the im2col + GEMM kernels instead.

Threads as in ``train_step.py``: ``--threads`` for BLAS, numba and torch, set before either
library loads.
"""
import argparse
import json
import os
import sys
import time

LAYERS = {    # (batch, height, width, in channels, filters, padding)
    "cifar": [(64, 32, 32, 3, 32, "same"), (64, 32, 32, 32, 32, "valid"),
              (64, 15, 15, 32, 64, "same"), (64, 15, 15, 64, 64, "valid")],
    "convnet": [(128, 28, 28, 1, 32, "valid"), (128, 13, 13, 32, 64, "valid")],
}


def _median_ms(fn, repeats, clock=time.perf_counter):
    fn()
    times = []
    for _ in range(repeats):
        start = clock()
        fn()
        times.append(clock() - start)
    times.sort()
    return 1000 * times[len(times) // 2]


def hiapi_calls(layer, backend):
    """(op name, zero-argument call) for the three kernels of one layer, on planned-size
    workspaces."""
    import numpy as np

    from hiapi.backends import conv_geometry as geo
    n, h, w, c, f, padding = layer
    oh, ow = (geo.output_size(s, 3, 1, 1, padding) for s in (h, w))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, h, w, c), np.float32)
    kernel = rng.standard_normal((3, 3, c, f), np.float32)
    g = rng.standard_normal((n, oh, ow, f), np.float32)
    y = np.empty((n, oh, ow, f), np.float32)
    dw = np.empty_like(kernel)
    dx = np.empty_like(x)
    attrs = {"strides": (1, 1), "padding": padding, "dilation": (1, 1), "groups": 1}
    f32 = np.dtype(np.float32)

    def workspace(op, shapes):
        size = backend.scratch[op](shapes, [f32] * len(shapes), {**attrs, "kernel_hw": (3, 3)})
        return np.empty(size, np.uint8)

    forward = backend.kernels["conv2d"]
    filter_grad = backend.kernels["conv2d_filter_grad"]
    input_grad = backend.kernels["conv2d_input_grad"]
    ws = [workspace("conv2d", [y.shape, x.shape, kernel.shape]),
          workspace("conv2d_filter_grad", [dw.shape, x.shape, g.shape]),
          workspace("conv2d_input_grad", [dx.shape, g.shape, kernel.shape])]
    return [("conv2d", lambda: forward(y, x, kernel, workspace=ws[0], **attrs)),
            ("conv2d_filter_grad", lambda: filter_grad(dw, x, g, (3, 3), workspace=ws[1],
                                                       **attrs)),
            ("conv2d_input_grad", lambda: input_grad(dx, g, kernel, (h, w), workspace=ws[2],
                                                     **attrs))]


def torch_calls(layer):
    import torch
    n, h, w, c, f, padding = layer
    x = torch.randn(n, c, h, w)
    kernel = torch.randn(f, c, 3, 3)
    pad = 1 if padding == "same" else 0
    y = torch.nn.functional.conv2d(x, kernel, padding=pad)
    g = torch.randn_like(y)
    grad = torch.nn.grad
    return [lambda: torch.nn.functional.conv2d(x, kernel, padding=pad),
            lambda: grad.conv2d_weight(x, kernel.shape, g, padding=pad),
            lambda: grad.conv2d_input(x.shape, kernel, g, padding=pad)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="numba")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--networks", default="cifar,convnet")
    parser.add_argument("--no-torch", action="store_true")
    parser.add_argument("--im2col", action="store_true",
                        help="Winograd off (HIAPI_WINOGRAD=0): every op as im2col + GEMM")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="cpu: process CPU time, the work done when --threads is 1 and "
                             "the machine is busy")
    args = parser.parse_args()
    for name in ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS", "HIAPI_NUM_THREADS"):
        os.environ[name] = str(args.threads)
    os.environ["HIAPI_BACKEND"] = args.backend
    if args.im2col:
        os.environ["HIAPI_WINOGRAD"] = "0"
    from hiapi.backends import get_backend
    backend = get_backend()
    torch = None
    if not args.no_torch:
        import torch
        torch.set_num_threads(args.threads)
    for network in args.networks.split(","):
        for index, layer in enumerate(LAYERS[network]):
            n, h, w, c, f, padding = layer
            oh, ow = (s if padding == "same" else s - 2 for s in (h, w))
            gflop = 2 * n * oh * ow * 9 * c * f / 1e9
            ours = hiapi_calls(layer, backend)
            theirs = torch_calls(layer) if torch is not None else [None] * 3
            clock = time.process_time if args.clock == "cpu" else time.perf_counter
            for (op, call), reference in zip(ours, theirs):
                mine = _median_ms(call, args.repeats, clock)
                line = {"network": network, "layer": index, "shape": list(layer), "op": op,
                        "hiapi_ms": round(mine, 3), "hiapi_gflops": round(gflop / mine * 1e3, 1)}
                if reference is not None:
                    ref = _median_ms(reference, args.repeats, clock)
                    line.update(torch_ms=round(ref, 3), torch_gflops=round(gflop / ref * 1e3, 1),
                                over_torch=round(mine / ref, 2))
                print(json.dumps(line), flush=True)
    print(json.dumps({"load_average": os.getloadavg()[0]}), file=sys.stderr)


if __name__ == "__main__":
    main()
