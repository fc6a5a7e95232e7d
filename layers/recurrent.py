"""Recurrent layers: ``SimpleRNN``, ``LSTM``, ``GRU`` with Keras's weights and gate order.

The time loop is *unrolled* into the graph (one copy of the cell per step), which needs the
number of steps to be known when the model is built. We chose unrolling over a loop op because
every graph pass, the memory planner and autodiff (grad of grad included) then work on
recurrent models unchanged; the cost is a graph that grows with the sequence length, which is
fine for the tens-to-hundreds of steps these layers are used with here. The input projection
``x @ kernel`` is computed for all steps in one matmul before the loop.

Weights, as in Keras: ``kernel`` (input_dim, gates*units), ``recurrent_kernel``
(units, gates*units), ``bias``; gate order i, f, c, o for LSTM and z, r, h for GRU
(``reset_after=True``: bias of shape (2, 3*units), Keras 3's default).

With a mask (``Embedding(mask_zero=True)``, ``Masking``), a masked step leaves the states as
they were and repeats the previous step's output (zeros before the first real step; zeros
always with ``zero_output_for_mask=True``, which ``Bidirectional`` sets), as Keras 3 does: the last output is the output of the last real step, so a padded batch gives each
sequence's own result.
"""
from __future__ import annotations

from typing import Any


from hiapi.hints import ActivationLike, ConstraintLike, InitializerLike, RegularizerLike
from hiapi import activations, constraints, initializers, regularizers
from hiapi.graph import ops
from hiapi.layers.input_spec import InputSpec
from hiapi.layers.layer import Layer


class _RNN(Layer):
    gates = 1

    def __init__(self, units: int, activation: ActivationLike = "tanh", use_bias: bool = True,
                 kernel_initializer: InitializerLike = "glorot_uniform",
                 recurrent_initializer: InitializerLike = "orthogonal",
                 bias_initializer: InitializerLike = "zeros",
                 kernel_regularizer: RegularizerLike = None,
                 recurrent_regularizer: RegularizerLike = None,
                 bias_regularizer: RegularizerLike = None, kernel_constraint: ConstraintLike = None,
                 recurrent_constraint: ConstraintLike = None,
                 bias_constraint: ConstraintLike = None, return_sequences: bool = False,
                 return_state: bool = False, go_backwards: bool = False,
                 zero_output_for_mask: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not isinstance(units, int) or units <= 0:
            raise ValueError(f"{type(self).__name__} {self.name!r}: units must be a positive "
                             f"integer, got {units!r}")
        self.units = units
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer, self.bias_initializer = kernel_initializer, bias_initializer
        self.recurrent_initializer = recurrent_initializer
        self.regularizers = {k: regularizers.get(v) for k, v in (
            ("kernel", kernel_regularizer), ("recurrent_kernel", recurrent_regularizer),
            ("bias", bias_regularizer))}
        self.constraints = {k: constraints.get(v) for k, v in (
            ("kernel", kernel_constraint), ("recurrent_kernel", recurrent_constraint),
            ("bias", bias_constraint))}
        self.return_sequences, self.return_state = return_sequences, return_state
        self.go_backwards = go_backwards
        # Keras's RNN argument (not in the config): masked steps output zeros instead of the
        # previous output; Bidirectional sets it when it returns sequences
        self.zero_output_for_mask = zero_output_for_mask
        self.input_spec = InputSpec(ndim=3)

    def _weight(self, shape, initializer, name):
        return self.add_weight(shape, initializer, name, regularizer=self.regularizers[name],
                               constraint=self.constraints[name])

    def build(self, input_shape):
        if input_shape[-1] is None:
            raise ValueError(f"{type(self).__name__} {self.name!r}: the feature axis of input "
                             f"shape {input_shape} must be known")
        width = self.gates * self.units
        self.kernel = self._weight((input_shape[-1], width), self.kernel_initializer, "kernel")
        self.recurrent_kernel = self._weight((self.units, width),
                                             _orthogonal_or(self.recurrent_initializer),
                                             "recurrent_kernel")
        self.bias = self._weight(self._bias_shape(), self._bias_initializer(), "bias") \
            if self.use_bias else None
        self.input_spec = InputSpec(ndim=3, axes={-1: input_shape[-1]})
        self.built = True

    def _bias_shape(self):
        return (self.gates * self.units,)

    def _bias_initializer(self):
        return self.bias_initializer

    def _states(self, like):
        """Zero initial states of shape (batch, units)."""
        zeros = ops.broadcast_like(ops.constant(0.0, like.dtype), like)
        return [zeros] * self.state_count

    state_count = 1

    def call(self, inputs, training=None, mask=None):
        steps = inputs.shape[1]
        if steps is None:
            raise ValueError(f"{type(self).__name__} {self.name!r}: the number of time steps "
                             f"must be known (the loop is unrolled), got input shape "
                             f"{inputs.shape}")
        projected = self._project(inputs)          # (batch, steps, gates*units)
        order = range(steps - 1, -1, -1) if self.go_backwards else range(steps)
        per_step = [ops.squeeze(ops.slice_axis(projected, 1, t, t + 1), 1) for t in order]
        states = self._states(ops.slice_axis(per_step[0], -1, 0, self.units))
        keep = [None] * steps if mask is None else \
            [ops.slice_axis(mask, 1, t, t + 1) for t in order]     # (batch, 1) per step
        outputs, initial = [], states[0]        # the initial states are zeros
        for x_t, keep_t in zip(per_step, keep):
            output, new_states = self.step(x_t, states)
            if keep_t is not None:
                previous = initial if self.zero_output_for_mask or not outputs else outputs[-1]
                output = ops.where(keep_t, output, previous)
                new_states = [ops.where(keep_t, n, s) for n, s in zip(new_states, states)]
            states = new_states
            outputs.append(output)
        result = ops.concatenate([ops.expand_dims(o, 1) for o in outputs], 1) \
            if self.return_sequences and len(outputs) > 1 else \
            (ops.expand_dims(outputs[0], 1) if self.return_sequences else outputs[-1])
        return [result] + list(states) if self.return_state else result

    def compute_mask(self, inputs, previous_mask=None):
        output_mask = previous_mask if self.return_sequences else None
        return [output_mask] + [None] * self.state_count if self.return_state else output_mask

    def _project(self, inputs):
        projected = ops.matmul(inputs, self.kernel.read)
        return projected + self.bias.read if self.bias is not None else projected

    def _gates(self, z):
        return [ops.slice_axis(z, -1, k * self.units, (k + 1) * self.units)
                for k in range(self.gates)]

    def get_config(self):
        return {**super().get_config(), "units": self.units,
                "activation": activations.serialize(self.activation),
                "use_bias": self.use_bias,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "recurrent_initializer": initializers.serialize(self.recurrent_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer),
                "return_sequences": self.return_sequences, "return_state": self.return_state,
                "go_backwards": self.go_backwards}


class SimpleRNN(_RNN):
    """``h_t = activation(x_t @ kernel + h_{t-1} @ recurrent_kernel + bias)``."""

    def step(self, x_t, states):
        h = self.activation(x_t + ops.matmul(states[0], self.recurrent_kernel.read))
        return h, [h]


class LSTM(_RNN):
    """Long short-term memory (Hochreiter & Schmidhuber 1997), Keras's formulation."""
    gates = 4
    state_count = 2

    def __init__(self, units: int, recurrent_activation: ActivationLike = "sigmoid",
                 unit_forget_bias: bool = True, **kwargs: Any) -> None:
        super().__init__(units, **kwargs)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.unit_forget_bias = unit_forget_bias

    def _bias_initializer(self):
        if not self.unit_forget_bias:
            return self.bias_initializer
        base, units = initializers.get(self.bias_initializer), self.units

        def forget_ones(shape, dtype):
            value = base(shape, dtype)
            value[units:2 * units] = 1.0
            return value
        return forget_ones

    def step(self, x_t, states):
        h, c = states
        z = x_t + ops.matmul(h, self.recurrent_kernel.read)
        i, f, g, o = self._gates(z)
        sigma = self.recurrent_activation
        c = sigma(f) * c + sigma(i) * self.activation(g)
        h = sigma(o) * self.activation(c)
        return h, [h, c]

    def get_config(self):
        return {**super().get_config(),
                "recurrent_activation": activations.serialize(self.recurrent_activation),
                "unit_forget_bias": self.unit_forget_bias}


class GRU(_RNN):
    """Gated recurrent unit (Cho et al. 2014), Keras 3's default ``reset_after=True``:
    ``hh = tanh(x W_h + b_h + r * (h U_h + b'_h))``, ``h = z * h_prev + (1 - z) * hh``."""
    gates = 3

    def __init__(self, units: int, recurrent_activation: ActivationLike = "sigmoid",
                 reset_after: bool = True, **kwargs: Any) -> None:
        if not reset_after:
            raise NotImplementedError("GRU: only reset_after=True (Keras 3's default) is "
                                      "supported")
        super().__init__(units, **kwargs)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.reset_after = reset_after

    def _bias_shape(self):
        return (2, 3 * self.units)

    def _project(self, inputs):
        projected = ops.matmul(inputs, self.kernel.read)
        if self.bias is not None:
            projected = projected + ops.squeeze(ops.slice_axis(self.bias.read, 0, 0, 1), 0)
        return projected

    def step(self, x_t, states):
        h = states[0]
        inner = ops.matmul(h, self.recurrent_kernel.read)
        if self.bias is not None:
            inner = inner + ops.squeeze(ops.slice_axis(self.bias.read, 0, 1, 2), 0)
        x_z, x_r, x_h = self._gates(x_t)
        r_z, r_r, r_h = self._gates(inner)
        sigma = self.recurrent_activation
        z, r = sigma(x_z + r_z), sigma(x_r + r_r)
        candidate = self.activation(x_h + r * r_h)
        h = z * h + (1.0 - z) * candidate
        return h, [h]

    def get_config(self):
        return {**super().get_config(),
                "recurrent_activation": activations.serialize(self.recurrent_activation),
                "reset_after": self.reset_after}


def _orthogonal_or(initializer):
    return initializers.orthogonal if initializer == "orthogonal" else initializer
