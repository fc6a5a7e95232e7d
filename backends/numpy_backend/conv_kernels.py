"""The numpy backend's convolution kernels: GEMM on im2col columns built by strided copies,
and Winograd F(2x2, 3x3) in front of them for the 3x3 stride-1 shapes it applies to."""
from hiapi.backends.numpy_backend import backend, winograd_tiles
from hiapi.backends.numpy_backend.im2col import (numpy_col2im, numpy_im2col,
                                                 numpy_lowering_bytes, register_conv_kernels)
from hiapi.backends.winograd import Transforms, register_winograd

register_conv_kernels(backend, numpy_im2col, numpy_col2im, numpy_lowering_bytes)
register_winograd(backend, Transforms(winograd_tiles.input_tiles, winograd_tiles.output_tiles,
                                      winograd_tiles.gradient_tiles, winograd_tiles.spare_bytes))
