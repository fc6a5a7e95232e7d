"""Plain-loop numpy references for sliding-window ops, shared by the op and layer tests:
deliberately the slowest, most literal reading of the definitions (Keras/TF padding rules)."""
import math

import numpy as np


def same_pads(size, kernel, stride, dilation=1):
    out = math.ceil(size / stride)
    total = max((out - 1) * stride + (kernel - 1) * dilation + 1 - size, 0)
    return total // 2, total - total // 2


def conv2d(x, w, strides, padding, dilation, groups=1):
    """y[n,i,j,f] = sum over the window and the group's input channels of x * w."""
    n, h, wd, c = x.shape
    kh, kw, cg, f = w.shape
    if padding == "same":
        (t, b), (l, r) = same_pads(h, kh, strides[0], dilation[0]), \
            same_pads(wd, kw, strides[1], dilation[1])
        x = np.pad(x, ((0, 0), (t, b), (l, r), (0, 0)))
    oh = (x.shape[1] - (kh - 1) * dilation[0] - 1) // strides[0] + 1
    ow = (x.shape[2] - (kw - 1) * dilation[1] - 1) // strides[1] + 1
    y = np.zeros((n, oh, ow, f))
    fg = f // groups
    for i in range(oh):
        for j in range(ow):
            for a in range(kh):
                for bb in range(kw):
                    patch = x[:, i * strides[0] + a * dilation[0],
                              j * strides[1] + bb * dilation[1]]
                    for g in range(groups):
                        y[:, i, j, g * fg:(g + 1) * fg] += \
                            patch[:, g * cg:(g + 1) * cg] @ w[a, bb, :, g * fg:(g + 1) * fg]
    return y


def pool2d(x, pool, strides, padding, kind):
    """Max or mean over each window; 'same' windows count only the real elements."""
    n, h, w, c = x.shape
    (t, _), (l, _) = (same_pads(h, pool[0], strides[0]), same_pads(w, pool[1], strides[1])) \
        if padding == "same" else ((0, 0), (0, 0))
    oh = math.ceil(h / strides[0]) if padding == "same" else (h - pool[0]) // strides[0] + 1
    ow = math.ceil(w / strides[1]) if padding == "same" else (w - pool[1]) // strides[1] + 1
    y = np.zeros((n, oh, ow, c))
    for i in range(oh):
        for j in range(ow):
            r, q = i * strides[0] - t, j * strides[1] - l
            window = x[:, max(r, 0):r + pool[0], max(q, 0):q + pool[1]]
            y[:, i, j] = window.max((1, 2)) if kind == "max" else window.mean((1, 2))
    return y
