"""Keras's recurrent cells: one time step of ``SimpleRNN``, ``LSTM`` and ``GRU`` as a layer,
for ``layers.RNN(cell)``. Same weights, names and maths as the layers (shared through
``layers/recurrent.py``), so ``RNN(LSTMCell(n))`` takes ``LSTM(n)``'s weights unchanged::

    rnn = layers.RNN(layers.GRUCell(8), return_sequences=True)

``call(inputs, states, training=False)`` returns ``(output, new_states)``; ``dropout`` and
``recurrent_dropout`` masks are drawn once per sequence (the ``RNN`` layer resets them).
"""
from __future__ import annotations

from hiapi.layers.recurrent import GRUStep, LSTMStep, RecurrentWeights, SimpleRNNStep


class _Cell(RecurrentWeights):
    @property
    def state_size(self):
        return self.units if self.state_count == 1 else [self.units] * self.state_count

    @property
    def output_size(self):
        return self.units

    def call(self, inputs, states, training=False):
        states = list(states) if isinstance(states, (list, tuple)) else [states]
        if self.dropout or self.recurrent_dropout:
            input_mask, recurrent_mask = self.dropout_masks(inputs, states[0], training)
        else:
            input_mask = recurrent_mask = None
        if input_mask is not None:
            inputs = inputs * input_mask
        return self.step(self._project(inputs), states, recurrent_mask)

    def get_config(self):
        return {**super().get_config(), **self.weights_config(), **self.step_config()}


class SimpleRNNCell(SimpleRNNStep, _Cell):
    """One step of ``SimpleRNN``."""


class LSTMCell(LSTMStep, _Cell):
    """One step of ``LSTM``; ``state_size`` is ``[units, units]`` (h, c)."""


class GRUCell(GRUStep, _Cell):
    """One step of ``GRU``."""
