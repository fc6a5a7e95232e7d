"""``layer.input``, ``layer.output``, ``layer.input_shape``, ``layer.output_shape``: the symbolic
tensors of a layer's first call in a model graph (Keras's first inbound node).

This is what feature extraction reads::

    extractor = hiapi.Model(inputs=model.inputs, outputs=[l.output for l in model.layers])

Calls made to run a layer eagerly on arrays, or to trace training and inference steps, are not
model building and are not recorded.
"""
from contextlib import contextmanager

_not_recording = [0]


@contextmanager
def not_a_node():
    """Layer calls inside this block (eager runs, step tracing) leave ``input``/``output``
    alone."""
    _not_recording[0] += 1
    try:
        yield
    finally:
        _not_recording[0] -= 1


def record(layer, inputs, outputs, replace=False):
    """Remember ``(inputs, outputs)`` as the layer's node unless it has one (or ``replace``)."""
    if replace or (not _not_recording[0] and layer.__dict__.get("_first_node") is None):
        layer.__dict__["_first_node"] = (inputs, outputs)


class LayerIO:
    """The node properties, mixed into ``Layer``."""

    def _node(self, what):
        node = self.__dict__.get("_first_node")
        if node is None:
            raise AttributeError(f"Layer {self.name!r} has never been called on a symbolic "
                                 f"tensor, so it has no {what} yet (call it on hiapi.Input(...) "
                                 f"or build the model first)")
        return node

    @property
    def input(self):
        return self._node("input")[0]

    @property
    def output(self):
        return self._node("output")[1]

    @property
    def input_shape(self):
        return _shapes(self._node("input_shape")[0])

    @property
    def output_shape(self):
        return _shapes(self._node("output_shape")[1])


def _shapes(structure):
    if isinstance(structure, (list, tuple)):
        return [_shapes(item) for item in structure]
    return tuple(structure.shape)
