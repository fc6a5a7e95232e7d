"""The numpy backend's convolution kernels: GEMM on im2col columns built by strided copies.

Winograd F(2x2, 3x3) (``backends/winograd.py``) is not registered here: with numpy's tile
transforms (``winograd_tiles.py``, a dozen whole-array passes over strided views per piece)
it measured 1.5-1.6x the time of this im2col forward per layer and 1.8-2.0x the CIFAR and MNIST
train steps (docs/performance.md), so the numpy backend keeps im2col for every shape.
"""
from hiapi.backends.numpy_backend.registry import backend
from hiapi.backends.numpy_backend.im2col import (numpy_col2im, numpy_im2col,
                                                 numpy_lowering_bytes, register_conv_kernels)

register_conv_kernels(backend, numpy_im2col, numpy_col2im, numpy_lowering_bytes)
