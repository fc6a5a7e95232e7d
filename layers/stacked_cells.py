"""``StackedRNNCells``: several recurrent cells run one after the other within each time step,
as one cell (Keras's; ``layers.RNN([cell_a, cell_b])`` builds one). Each cell's output is the
next one's input; the states are every cell's states, in order::

    rnn = layers.RNN(layers.StackedRNNCells([layers.LSTMCell(8), layers.GRUCell(4)]))
"""
from __future__ import annotations

from typing import Any, Sequence

from hiapi.layers.call_signature import call_accepts
from hiapi.layers.layer import Layer
from hiapi.layers.rnn_loop import size_shapes
from hiapi.layers.wrappers import deserialize, serialize


class StackedRNNCells(Layer):
    def __init__(self, cells: Sequence[Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        for cell in cells:
            if not hasattr(cell, "call") or not hasattr(cell, "state_size"):
                raise ValueError(f"StackedRNNCells {self.name!r}: every cell needs call(inputs, "
                                 f"states) and a state_size, got {cell!r}")
        self.cells = list(cells)

    @property
    def state_size(self):
        return [cell.state_size for cell in self.cells]

    @property
    def output_size(self):
        last = self.cells[-1]
        size = getattr(last, "output_size", None)
        return size if size is not None else size_shapes(last.state_size)[0]

    def build(self, input_shape):
        shape = input_shape
        for cell in self.cells:
            if not cell.built:
                cell.build(shape)
                cell.built = True
            out = getattr(cell, "output_size", None)
            shape = (shape[0],) + size_shapes(out if out is not None else cell.state_size)[0]
        self.built = True

    def call(self, inputs, states, training=False):
        states, new_states = list(states), []
        for cell in self.cells:
            count = len(size_shapes(cell.state_size))
            own, states = states[:count], states[count:]
            kwargs = {"training": training} if call_accepts(cell, "training") else {}
            inputs, own = cell.call(inputs, own, **kwargs)
            new_states += list(own) if isinstance(own, (list, tuple)) else [own]
        return inputs, new_states

    def reset_dropout_mask(self):
        for cell in self.cells:
            if hasattr(cell, "reset_dropout_mask"):
                cell.reset_dropout_mask()

    def get_config(self):
        return {**super().get_config(), "cells": [serialize(cell) for cell in self.cells]}

    @classmethod
    def from_config(cls, config):
        return cls(**{**config, "cells": [deserialize(c) for c in config["cells"]]})
