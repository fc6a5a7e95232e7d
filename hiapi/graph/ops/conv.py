"""2-D convolution (NHWC input, Keras's (kh, kw, in/groups, out) kernel) and its gradients.

The three ops are each other's transposes, so every derivative, of any order, is one of them:
with y = conv2d(x, w),

    dL/dx = conv2d_input_grad(g, w)     dL/dw = conv2d_filter_grad(x, g)

and the gradients of those two are again conv2d, conv2d_input_grad and conv2d_filter_grad.
1-D convolution is this op on a height-1 image (see ``hiapi.layers.Conv1D``).
"""
from hiapi.graph.op import Op, as_var, result_dtype
from hiapi.backends import conv_geometry as geo


class _ConvBase(Op):
    def __init__(self, strides, padding, dilation, groups):
        self.strides = tuple(strides)
        self.padding = padding
        self.dilation = tuple(dilation)
        self.groups = int(groups)

    def _out_hw(self, hw, kernel_hw):
        return tuple(geo.output_size(size, k, s, d, self.padding) for size, k, s, d in
                     zip(hw, kernel_hw, self.strides, self.dilation))

    def _same(self):
        return dict(strides=self.strides, padding=self.padding, dilation=self.dilation,
                    groups=self.groups)


class Conv2D(_ConvBase):
    name = "conv2d"

    def infer(self, x, w):
        if x.ndim != 4 or w.ndim != 4:
            raise ValueError(f"conv2d: expected a 4-D NHWC input and a 4-D (kh, kw, in, out) "
                             f"kernel, got shapes {x.shape} and {w.shape}")
        channels, (kh, kw, per_group, filters) = x.shape[3], w.shape
        if channels is not None and channels != per_group * self.groups:
            raise ValueError(f"conv2d: input has {channels} channels, the kernel {w.shape} with "
                             f"groups={self.groups} expects {per_group * self.groups}")
        if filters % self.groups:
            raise ValueError(f"conv2d: {filters} filters do not divide into {self.groups} groups")
        out_hw = self._out_hw(x.shape[1:3], (kh, kw))
        if any(d == 0 for d in out_hw):
            raise ValueError(f"conv2d: input of spatial size {x.shape[1:3]} is smaller than the "
                             f"kernel's extent with dilation {self.dilation} ('valid' padding)")
        return (x.shape[0],) + out_hw + (filters,), result_dtype(x, w)

    def grad(self, inputs, y, g):
        x, w = inputs
        return [conv2d_input_grad(g, w, x.shape[1:3], **self._same()),
                conv2d_filter_grad(x, g, w.shape[:2], **self._same())]


class Conv2DInputGrad(_ConvBase):
    """dL/dx of conv2d for output gradient g: the transposed convolution."""
    name = "conv2d_input_grad"

    def __init__(self, input_hw, **conv):
        super().__init__(**conv)
        self.input_hw = tuple(input_hw)

    def infer(self, g, w):
        return (g.shape[0],) + self.input_hw + (w.shape[2] * self.groups,), result_dtype(g, w)

    def grad(self, inputs, y, u):
        g, w = inputs
        return [conv2d(u, w, **self._same()),
                conv2d_filter_grad(u, g, w.shape[:2], **self._same())]


class Conv2DFilterGrad(_ConvBase):
    """dL/dw of conv2d for input x and output gradient g."""
    name = "conv2d_filter_grad"

    def __init__(self, kernel_hw, **conv):
        super().__init__(**conv)
        self.kernel_hw = tuple(kernel_hw)

    def infer(self, x, g):
        return self.kernel_hw + (x.shape[3] // self.groups, g.shape[3]), result_dtype(x, g)

    def grad(self, inputs, y, v):
        x, g = inputs
        return [conv2d_input_grad(g, v, x.shape[1:3], **self._same()),
                conv2d(x, v, **self._same())]


def _conv_args(strides, padding, dilation, groups):
    geo.check_padding("conv2d", padding)
    strides = geo.pair("conv2d", "strides", strides)
    dilation = geo.pair("conv2d", "dilation_rate", dilation)
    if max(strides) > 1 and max(dilation) > 1:
        raise ValueError("conv2d: strides > 1 together with dilation_rate > 1 is not supported "
                         "(Keras does not allow it either)")
    return dict(strides=strides, padding=padding, dilation=dilation, groups=groups)


def conv2d(x, w, strides=1, padding="valid", dilation=1, groups=1):
    return Conv2D(**_conv_args(strides, padding, dilation, groups))(as_var(x), as_var(w))


def conv2d_input_grad(g, w, input_hw, strides=1, padding="valid", dilation=1, groups=1):
    return Conv2DInputGrad(input_hw, **_conv_args(strides, padding, dilation, groups))(
        as_var(g), as_var(w))


def conv2d_filter_grad(x, g, kernel_hw, strides=1, padding="valid", dilation=1, groups=1):
    return Conv2DFilterGrad(kernel_hw, **_conv_args(strides, padding, dilation, groups))(
        as_var(x), as_var(g))
