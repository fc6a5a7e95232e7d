"""The numpy backend's convolution kernels: GEMM on im2col columns built by strided copies."""
from hiapi.backends.numpy_backend import backend
from hiapi.backends.numpy_backend.im2col import (numpy_col2im, numpy_im2col,
                                                 numpy_lowering_bytes, register_conv_kernels)

register_conv_kernels(backend, numpy_im2col, numpy_col2im, numpy_lowering_bytes)
