"""``Deferred``: a value whose graph can only be written once a dimension is known.

A recurrent layer unrolls its time loop into the graph, so it needs the number of steps. When a
functional model is built on ``Input(shape=(None, features))`` that number is unknown, yet the
layer must hand back a symbolic output of the right shape (Keras's ``compute_output_spec``).
The output is then a ``Deferred`` Var: it depends on the layer's inputs, carries the shape and
dtype, and is never computed. The model replays its layers on inputs of concrete shape before
it runs (``fit``, ``predict``, ``model(x)``), which writes the real graph instead. Compiling a
graph that still holds one fails, naming the layer.
"""
from hiapi.graph.op import Op


class Deferred(Op):
    name = "deferred"

    def __init__(self, shape, dtype, owner):
        self.shape, self.dtype, self.owner = tuple(shape), dtype, owner

    def key(self):
        return (id(self),)     # two deferred values are never the same value

    def infer(self, *inputs):
        if inputs and all(d is not None for d in inputs[0].shape[1:]):
            raise ValueError(f"{self.owner}: this graph was built for an unknown number of "
                             f"time steps and cannot run; call the model on data (model(x), "
                             f"fit, predict) so that it is traced for the data's length")
        return self.shape, self.dtype

    def grad(self, inputs, output, gout):
        return [None] * len(inputs)


def deferred(inputs, shape, dtype, owner):
    """A Var of ``shape`` and ``dtype`` depending on ``inputs``, written later (see module)."""
    return Deferred(shape, dtype, owner)(*inputs)
