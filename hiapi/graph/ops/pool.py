"""2-D max and average pooling on NHWC inputs, with Keras's padding rules.

Max pooling routes each window's gradient to its first maximum (row-major), as TensorFlow and
PyTorch do. Its gradient ops form a transposed pair (``max_pool_scatter`` spreads window values
to the argmax positions; ``max_pool_gather`` reads them back), so derivatives of any order are
graph too. Average pooling with "same" padding divides by the number of real (unpadded)
elements in each window, like Keras.
"""
from hiapi.graph.op import Op, as_var
from hiapi.backends import conv_geometry as geo


class _Pool(Op):
    def __init__(self, pool_size, strides, padding):
        self.pool_size = tuple(pool_size)
        self.strides = tuple(strides)
        self.padding = padding

    def _out_shape(self, x):
        if x.ndim != 4:
            raise ValueError(f"{self.name}: expected a 4-D NHWC input, got shape {x.shape}")
        out_hw = tuple(geo.output_size(size, k, s, 1, self.padding) for size, k, s in
                       zip(x.shape[1:3], self.pool_size, self.strides))
        if any(d == 0 for d in out_hw):
            raise ValueError(f"{self.name}: input of spatial size {x.shape[1:3]} is smaller "
                             f"than the pool size {self.pool_size} ('valid' padding)")
        return (x.shape[0],) + out_hw + (x.shape[3],)

    def _same(self):
        return dict(pool_size=self.pool_size, strides=self.strides, padding=self.padding)


class MaxPool2D(_Pool):
    name = "max_pool2d"

    def infer(self, x):
        return self._out_shape(x), x.dtype

    def grad(self, inputs, y, g):
        return [max_pool_scatter(inputs[0], g, **self._same())]


class MaxPoolScatter(_Pool):
    """Window values ``g`` (pooled shape) added at each window's argmax in ``x``'s shape."""
    name = "max_pool_scatter"

    def infer(self, x, g):
        return x.shape, g.dtype

    def grad(self, inputs, y, u):
        x, g = inputs
        return [None, max_pool_gather(x, u, **self._same())]


class MaxPoolGather(_Pool):
    """``u`` (shaped like x) read at each window's argmax of ``x``: pooled shape."""
    name = "max_pool_gather"

    def infer(self, x, u):
        return self._out_shape(x), u.dtype

    def grad(self, inputs, y, v):
        x, u = inputs
        return [None, max_pool_scatter(x, v, **self._same())]


class AvgPool2D(_Pool):
    name = "avg_pool2d"

    def infer(self, x):
        return self._out_shape(x), x.dtype

    def grad(self, inputs, y, g):
        return [avg_pool_grad(g, inputs[0].shape[1:3], **self._same())]


class AvgPoolGrad(_Pool):
    """The transpose of average pooling: each window's gradient shared over its elements."""
    name = "avg_pool2d_grad"

    def __init__(self, input_hw, **pool):
        super().__init__(**pool)
        self.input_hw = tuple(input_hw)

    def infer(self, g):
        return (g.shape[0],) + self.input_hw + (g.shape[3],), g.dtype

    def grad(self, inputs, y, u):
        return [avg_pool2d(u, **self._same())]


def _pool_args(name, pool_size, strides, padding):
    geo.check_padding(name, padding)
    pool_size = geo.pair(name, "pool_size", pool_size)
    strides = pool_size if strides is None else geo.pair(name, "strides", strides)
    return dict(pool_size=pool_size, strides=strides, padding=padding)


def max_pool2d(x, pool_size=2, strides=None, padding="valid"):
    return MaxPool2D(**_pool_args("max_pool2d", pool_size, strides, padding))(as_var(x))


def max_pool_scatter(x, g, pool_size, strides, padding):
    return MaxPoolScatter(pool_size, strides, padding)(as_var(x), as_var(g))


def max_pool_gather(x, u, pool_size, strides, padding):
    return MaxPoolGather(pool_size, strides, padding)(as_var(x), as_var(u))


def avg_pool2d(x, pool_size=2, strides=None, padding="valid"):
    return AvgPool2D(**_pool_args("avg_pool2d", pool_size, strides, padding))(as_var(x))


def avg_pool_grad(g, input_hw, pool_size, strides, padding):
    return AvgPoolGrad(input_hw, pool_size=pool_size, strides=strides, padding=padding)(
        as_var(g))
