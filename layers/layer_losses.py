"""``add_loss`` and ``layer.losses``, with Keras 3's contract.

A layer's ``call`` may add scalar loss terms (``self.add_loss(x)``): an activity penalty, a
VAE's KL divergence, a logistic endpoint's own loss. They go into the loss of the step being
traced (and into the training loss of ``fit``), and ``layer.losses`` lists those of the
layer's last call, its sublayers' included, followed by the penalties of its trainable weights'
regularizers. The outermost layer call starts the list afresh, as in Keras, so a layer called
twice lists the second call's losses only.

Inside a trace (a step being built, a layer's ``call``) the entries are symbolic tensors, which
a custom training step adds to its loss (``loss + ops.sum(model.losses)``); after a call on
arrays (``layer(np.ones((2, 3)))``) they are the values of that call, as numpy scalars.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from hiapi.graph import ops, tracing
from hiapi.graph.var import Var
from hiapi.utils.eager import run_eagerly


class LayerLosses:
    name: str
    _losses: list[Any]
    _sublayers: list[Any]
    _regularized: list[tuple[Any, Any]]

    def add_loss(self, loss: Any) -> None:
        """Add a scalar (or a list of scalars) to the loss of the step being traced; call it
        from ``call``. Non-scalar terms are summed, as Keras does."""
        terms = list(loss) if isinstance(loss, (list, tuple)) else [loss]
        for term in terms:
            if not isinstance(term, Var) or not tracing.in_trace():
                raise ValueError(
                    f"Layer {self.name!r}: add_loss() can only be called from inside call(), "
                    f"on a tensor computed there; got {term!r}")
        for term in terms:
            self._record_loss(term)

    def _record_loss(self, term):
        """Add one loss term of this layer's call (also the activity regularizer's)."""
        term = term if term.shape == () else ops.sum(term)
        if tracing.collecting():         # building a functional model records nothing (Keras)
            self._own_losses().append(term)
        tracing.add_loss(term)

    def _own_losses(self) -> list[Any]:
        if "_losses" not in self.__dict__:
            self.__dict__["_losses"] = []
        return self._losses

    @property
    def losses(self) -> list[Any]:
        """The losses added by the last call (this layer's and its sublayers'), then the
        regularization penalties of the trainable weights."""
        found = list(self._own_losses())
        for layer in _sublayers(self):
            found += layer._own_losses()
        return found + self._regularization_losses()

    def _regularization_losses(self):
        trainable = {id(v) for v in self.trainable_weights}
        terms = []
        for layer in [self] + _sublayers(self):
            for variable, regularizer in layer._regularized:
                if id(variable) not in trainable:
                    continue
                if tracing.in_trace():
                    terms.append(regularizer(tracing.current_value(variable)))
                else:
                    terms.append(np.float32(run_eagerly(
                        regularizer, [variable.numpy()], key=("regularizer", id(regularizer)))))
        return terms

    def _clear_losses(self) -> None:
        for layer in [self] + _sublayers(self):
            layer._own_losses().clear()

    def _losses_by_layer(self):
        """[(layer, its own loss Vars)] over this layer and its sublayers, for a call on arrays
        to turn into values."""
        return [(layer, list(layer._own_losses())) for layer in [self] + _sublayers(self)
                if layer._own_losses()]


def _sublayers(layer):
    """Every layer below ``layer`` once (nested models and layers held in attributes)."""
    seen, order, stack = {id(layer)}, [], list(layer._sublayers)
    while stack:
        sub = stack.pop(0)
        if id(sub) not in seen:
            seen.add(id(sub))
            order.append(sub)
            stack.extend(sub._sublayers)
    return order
