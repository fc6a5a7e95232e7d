"""The graph's operations, with numpy's names. Each lowercase function builds one op (or a small
composite of them) on Vars, arrays or Python numbers::

    from hiapi.graph import ops
    y = ops.relu(ops.matmul(x, w) + b)
"""
from hiapi.graph.ops.sources import constant, placeholder
from hiapi.graph.ops.elementwise import (
    abs, add, cast, divide, equal, exp, greater, greater_equal, less, less_equal, log, maximum,
    minimum, multiply, negative, not_equal, power, relu, sigmoid, sqrt, square, stop_gradient,
    subtract, tanh, where)
from hiapi.graph.ops.reduce import (argmax, broadcast_like, max, mean, size, sum, unbroadcast)
from hiapi.graph.ops.shape import (expand_dims, identity, reshape, reshape_like, squeeze, swapaxes,
                                   transpose)
from hiapi.graph.ops.linalg import gemm, matmul
from hiapi.graph.ops.nn import (class_indices, gather, log_softmax, one_hot, scatter_add_like,
                                softmax, softmax_cross_entropy, sparse_softmax_cross_entropy)
from hiapi.graph.ops.conv import conv2d, conv2d_filter_grad, conv2d_input_grad
from hiapi.graph.ops.pool import (avg_pool2d, avg_pool_grad, max_pool2d, max_pool_gather,
                                  max_pool_scatter)
from hiapi.graph.ops.array import concatenate, pad, slice_axis, split
from hiapi.graph.ops.trig import cos, sin
from hiapi.graph.ops.image import image_transform, image_transform_grad
from hiapi.graph.ops.random import dropout, random_normal, random_uniform
from hiapi.graph.ops.deferred import deferred
from hiapi.graph.ops.sort import argsort
from hiapi.graph.ops.composite import argmin, clip, min, prod, stack, std, var
from hiapi.graph.ops.indexing import getitem

from hiapi.graph import op_namespace  # noqa: E402

op_namespace.fill(globals())    # what Var's operators and the families' gradients build with
