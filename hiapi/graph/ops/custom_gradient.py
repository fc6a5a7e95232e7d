"""``CustomGradient``: a value whose gradient a user's function gives (``ops.custom_gradient``).

The op takes the forward result ``y`` and the inputs ``x1..xn`` it was computed from, and
passes ``y`` through unchanged. Its gradient rule ignores how ``y`` was computed (nothing flows
back into the forward ops) and asks the user's function for the gradients of ``x1..xn``
given the upstream gradient, built from ops like any rule. After autodiff it is dropped like
an identity (``passes/dead_code.py``); with the passes off, its kernel is the identity.
"""
from hiapi.graph.ops.shape import Identity


class CustomGradient(Identity):
    name = "custom_gradient"

    def __init__(self, grad_fn, label="custom_gradient"):
        self._grad_fn = grad_fn
        self._label = label

    def key(self):
        return (CustomGradient, id(self))      # two calls are never the same value

    def infer(self, y, *xs):
        return y.shape, y.dtype

    def grad(self, inputs, y, g):
        xs = inputs[1:]
        grads = self._grad_fn(g)
        if not isinstance(grads, (list, tuple)):
            grads = [grads]
        if len(grads) != len(xs):
            raise ValueError(f"custom_gradient {self._label!r}: the gradient function returned "
                             f"{len(grads)} gradients for {len(xs)} tensor inputs")
        for grad, x in zip(grads, xs):
            if grad is not None and tuple(getattr(grad, "shape", ())) != tuple(x.shape) and \
                    None not in x.shape:
                raise ValueError(f"custom_gradient {self._label!r}: a gradient has shape "
                                 f"{tuple(grad.shape)}, its input has shape {x.shape}")
        return [None] + list(grads)
