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
from hiapi.graph.ops.linalg import matmul
from hiapi.graph.ops.nn import (gather, log_softmax, one_hot, scatter_add_like, softmax,
                                softmax_cross_entropy, sparse_softmax_cross_entropy)
