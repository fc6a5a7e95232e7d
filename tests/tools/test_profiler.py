"""The profiler: per-op time, FLOPs and bytes, on a roofline measured on this machine."""
import numpy as np

import hiapi
from hiapi import layers
from hiapi.profiler import machine_roofline


def test_profile_counts_flops_and_bytes_per_op():
    hiapi.utils.set_random_seed(0)
    model = hiapi.Sequential([hiapi.Input(shape=(64,)), layers.Dense(32, activation="relu"),
                              layers.Dense(10)])
    model.compile(optimizer="sgd",
                  loss=hiapi.losses.SparseCategoricalCrossentropy(from_logits=True))
    x = np.random.default_rng(0).normal(size=(16, 64)).astype(np.float32)
    y = np.arange(16) % 10
    printed = []
    rows = model.profile(x, y, repeats=2, print_fn=printed.append)
    by_op = {r["op"]: r for r in rows}
    # forward 64x32 and 32x10 and the input gradient of layer 2 (layer 1's is not needed) are
    # matmuls; the weight gradients are GEMMs with SGD's update folded in (gemm_accumulate),
    # each the product plus a scale and an add per weight
    forward = 2 * 16 * (64 * 32 + 32 * 10)
    input_gradient = 2 * 16 * 32 * 10
    weight_gradients = 2 * 16 * (64 * 32 + 32 * 10) + 3 * (64 * 32 + 32 * 10)
    assert by_op["matmul"]["calls"] == 3
    assert by_op["matmul"]["gflop"] * 1e9 == forward + input_gradient
    assert by_op["gemm"]["calls"] == 2
    assert by_op["gemm"]["gflop"] * 1e9 == weight_gradients
    assert all(r["seconds"] > 0 and r["mb_moved"] > 0 for r in rows)
    assert [r["seconds"] for r in rows] == sorted((r["seconds"] for r in rows), reverse=True)
    assert "GFLOP/s peak" in printed[0] and "matmul" in printed[0]
    roofline = machine_roofline()
    assert roofline.peak_gflops > 1 and roofline.bandwidth_gbs > 0.5
    assert roofline.bound(1e6) == roofline.peak_gflops


def test_convolution_and_both_gradients_count_the_forward_gemm():
    from hiapi.graph import ops, placeholder
    from hiapi.graph.memory.cost import flops
    from hiapi.graph.op import Spec
    x, w = placeholder((8, 12, 12, 6)), placeholder((3, 3, 3, 10))      # 2 groups of 3 channels
    y = ops.conv2d(x, w, padding="same", groups=2)
    dx = ops.conv2d_input_grad(y, w, (12, 12), padding="same", groups=2)
    dw = ops.conv2d_filter_grad(x, y, (3, 3), padding="same", groups=2)
    specs = {v: Spec(v.shape, v.dtype) for v in (x, w, y, dx, dw)}
    gemm = 2 * (8 * 12 * 12) * 10 * (3 * 3 * 3)     # positions x filters x taps per group
    assert flops(y, specs) == flops(dx, specs) == flops(dw, specs) == gemm
