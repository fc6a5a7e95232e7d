"""``hiapi.ops``: Keras 3's ``keras.ops`` for custom layers, losses and metrics.

The same call works inside a layer's ``call`` (on symbolic tensors, building graph ops) and on
numpy arrays (computing now, returning arrays)::

    from hiapi import ops

    class RMSNorm(hiapi.layers.Layer):
        def call(self, x):
            return x / ops.sqrt(ops.mean(ops.square(x), axis=-1, keepdims=True) + 1e-6)

    ops.softmax(np.array([1.0, 2.0, 3.0]))    # array([0.09, 0.245, 0.665], dtype=float32)

``ops.nn`` holds the neural-network functions, also available here directly (as in Keras).
"""
from hiapi.ops import nn  # noqa: F401
from hiapi.ops.core import (  # noqa: F401
    cast, convert_to_numpy, convert_to_tensor, dtype, is_tensor, ndim, shape, stop_gradient)
from hiapi.ops.custom_gradient import check_gradient, custom_gradient  # noqa: F401
from hiapi.ops.einsum import einsum  # noqa: F401
from hiapi.ops.math_extra import (  # noqa: F401
    all, any, average, broadcast_to, cos, expm1, eye, gelu, hard_sigmoid, hard_silu,
    hard_swish, identity, linspace, log1p, log2, log10, log_sigmoid, logsumexp, moments, norm,
    normalize, outer, repeat, selu, sin, softsign, take, tile, tril, triu)
from hiapi.ops.nn_conv import average_pool, conv, max_pool  # noqa: F401
from hiapi.ops.nn import (  # noqa: F401
    binary_crossentropy, categorical_crossentropy, elu, leaky_relu, log_softmax, one_hot, relu,
    relu6, sigmoid, silu, softmax, softplus, sparse_categorical_crossentropy, swish)
from hiapi.ops.numpy import (  # noqa: F401
    abs, absolute, add, amax, amin, arange, argmax, argmin, clip, concatenate, divide, dot,
    equal, exp, expand_dims, full, full_like, greater, greater_equal, less, less_equal, log,
    logical_and, logical_not, logical_or, matmul, max, maximum, mean, min, minimum, multiply,
    negative, not_equal, ones, ones_like, power, prod, reciprocal, reshape, sign, size, split,
    sqrt, square, squeeze, stack, std, subtract, sum, swapaxes, tanh, transpose, true_divide,
    var, where, zeros, zeros_like)
