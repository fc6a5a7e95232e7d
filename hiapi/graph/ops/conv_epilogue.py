"""``conv2d_epilogue``: a convolution with its bias and activation applied in the GEMM's output
pass, ``activation(conv2d(x, w) + b)``.

Written as three ops, the bias add and the relu are one fused elementwise loop after the
convolution, which reads the whole convolution output back from memory and writes it again
(8 MB each way for a 32x32x32 layer at batch 64). The backends compute the convolution a few
images at a time, so the epilogue can run on each piece while it is still in cache. The
``conv_epilogue`` pass (``hiapi.graph.passes.conv_epilogue``) forms this op from the three after
autodiff; the op also has its own gradient, so it is a complete op (and checked like one):

    d = g * (y > 0)   (relu; d = g without activation)
    dL/dx = conv2d_input_grad(d, w)   dL/dw = conv2d_filter_grad(x, d)   dL/db = sum(d, (0, 1, 2))
"""
from hiapi.graph.op import as_var
from hiapi.graph.ops.conv import Conv2D, _conv_args, conv2d_filter_grad, conv2d_input_grad
from hiapi.graph.ops.elementwise import where
from hiapi.graph.ops.reduce import sum as reduce_sum

#: activations the epilogue can apply (None: the bias only)
ACTIVATIONS = (None, "relu")


class Conv2DEpilogue(Conv2D):
    name = "conv2d_epilogue"

    def __init__(self, activation, **conv):
        super().__init__(**conv)
        if activation not in ACTIVATIONS:
            raise ValueError(f"conv2d_epilogue: activation must be one of {ACTIVATIONS}, got "
                             f"{activation!r}")
        self.activation = activation

    def infer(self, x, w, b):
        shape, dtype = super().infer(x, w)
        if b.ndim != 1 or b.shape[0] not in (None, shape[3]) or b.dtype != dtype:
            raise ValueError(f"conv2d_epilogue: the bias must be a {dtype} vector of the "
                             f"{shape[3]} filters, got shape {b.shape} and dtype {b.dtype}")
        return shape, dtype

    def grad(self, inputs, y, g):
        x, w, _ = inputs
        d = g if self.activation is None else where(y > 0, g, 0)
        return [conv2d_input_grad(d, w, x.shape[1:3], **self._same()),
                conv2d_filter_grad(x, d, w.shape[:2], **self._same()),
                reduce_sum(d, axis=(0, 1, 2))]


def conv2d_epilogue(x, w, b, activation=None, strides=1, padding="valid", dilation=1,
                    groups=1):
    """``activation(conv2d(x, w, ...) + b)`` as one op; ``activation`` is None or "relu"."""
    return Conv2DEpilogue(activation, **_conv_args(strides, padding, dilation, groups))(
        as_var(x), as_var(w), as_var(b))
