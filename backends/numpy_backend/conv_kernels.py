"""The numpy backend's convolution kernels: GEMM on im2col columns built by strided copies."""
from hiapi.backends.numpy_backend import backend
from hiapi.backends.numpy_backend.im2col import conv_kernels, numpy_col2im, numpy_im2col

_conv2d, _filter_grad, _input_grad = conv_kernels(numpy_im2col, numpy_col2im)
backend.register("conv2d")(_conv2d)
backend.register("conv2d_filter_grad")(_filter_grad)
backend.register("conv2d_input_grad")(_input_grad)
