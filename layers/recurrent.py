"""Recurrent layers: ``SimpleRNN``, ``LSTM``, ``GRU`` with Keras's weights and gate order, and
the weights and step maths they share with their cells (``layers/rnn_cells.py``).

The time loop is *unrolled* into the graph (one copy of the step per time step). We chose
unrolling over a loop op because every graph pass, the memory planner and autodiff (grad of
grad included) then work on recurrent models unchanged; the cost is a graph that grows with
the sequence length, which is fine for the tens-to-hundreds of steps these layers are used
with here, and a model on ``Input(shape=(None, features))`` is traced again for each length of
data it is given. The input projection ``x @ kernel`` is computed for all steps in one matmul
before the loop.

Weights, as in Keras: ``kernel`` (input_dim, gates*units), ``recurrent_kernel``
(units, gates*units), ``bias``; gate order i, f, c, o for LSTM and z, r, h for GRU
(``reset_after=True``: bias of shape (2, 3*units), Keras 3's default).

``dropout`` drops input features and ``recurrent_dropout`` units of the state fed to the
recurrent matmul, with one mask per sequence for every step (Gal & Ghahramani 2016,
https://arxiv.org/abs/1512.05287), in training only. The sequence handling (masking,
``initial_state``, ``stateful``, ``go_backwards``) is ``RecurrentLoop``'s (``layers/rnn.py``).
"""
from __future__ import annotations

from typing import Any

from hiapi.hints import ActivationLike, ConstraintLike, InitializerLike, RegularizerLike
from hiapi import activations, constraints, initializers, regularizers
from hiapi.graph import ops
from hiapi.layers import rnn_loop
from hiapi.layers.input_spec import InputSpec
from hiapi.layers.layer import Layer
from hiapi.layers.rnn import RecurrentLoop
from hiapi.runtime import random_streams as _random


class RecurrentWeights(Layer):
    """Weights, projection and dropout of a recurrent layer or cell with ``gates`` blocks."""
    gates = 1
    state_count = 1

    def __init__(self, units: int, activation: ActivationLike = "tanh", use_bias: bool = True,
                 kernel_initializer: InitializerLike = "glorot_uniform",
                 recurrent_initializer: InitializerLike = "orthogonal",
                 bias_initializer: InitializerLike = "zeros",
                 kernel_regularizer: RegularizerLike = None,
                 recurrent_regularizer: RegularizerLike = None,
                 bias_regularizer: RegularizerLike = None, kernel_constraint: ConstraintLike = None,
                 recurrent_constraint: ConstraintLike = None,
                 bias_constraint: ConstraintLike = None, dropout: float = 0.0,
                 recurrent_dropout: float = 0.0, seed: int | None = None,
                 implementation: int = 2, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if implementation not in (1, 2):
            raise ValueError(f"{type(self).__name__} {self.name!r}: implementation must be 1 "
                             f"or 2, got {implementation!r}")
        if not isinstance(units, int) or units <= 0:
            raise ValueError(f"{type(self).__name__} {self.name!r}: units must be a positive "
                             f"integer, got {units!r}")
        for name, rate in (("dropout", dropout), ("recurrent_dropout", recurrent_dropout)):
            if not 0.0 <= rate < 1.0:
                raise ValueError(f"{type(self).__name__} {self.name!r}: {name} must be in "
                                 f"[0, 1), got {rate!r}")
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
        self.dropout, self.recurrent_dropout = float(dropout), float(recurrent_dropout)
        self.seed = seed
        self._seed = int(_random.generator().integers(2**62)) if seed is None else int(seed)
        self._masks = None

    @property
    def state_sizes(self):
        return [(self.units,)] * self.state_count

    @property
    def output_sizes(self):
        return [(self.units,)]

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
        if self.dropout or self.recurrent_dropout:
            self.counter = self.add_state((), "zeros", "seed_counter", "int64")
        self.built = True

    def _bias_shape(self):
        return (self.gates * self.units,)

    def _bias_initializer(self):
        return self.bias_initializer

    def _project(self, inputs):
        projected = ops.matmul(inputs, self.kernel.read)
        return projected + self.bias.read if self.bias is not None else projected

    def _gates(self, z):
        return [ops.slice_axis(z, -1, k * self.units, (k + 1) * self.units)
                for k in range(self.gates)]

    def _recurrent_input(self, h, recurrent_mask):
        return h if recurrent_mask is None else h * recurrent_mask

    def dropout_masks(self, x_t, h, training):
        """(input mask, recurrent mask), each None when unused: drawn once per sequence (the
        counter moves on once per training call) and kept until ``reset_dropout_mask``."""
        if self._masks is None:
            masks = [None, None]
            if training and (self.dropout or self.recurrent_dropout):
                self.add_update(self.counter, self.counter.read + 1)
                for k, (rate, like) in enumerate(((self.dropout, x_t),
                                                  (self.recurrent_dropout, h))):
                    if rate:
                        ones = ops.broadcast_like(ops.constant(1.0, like.dtype), like)
                        masks[k] = ops.dropout(ones, rate, self._seed + k, self.counter.read)
            self._masks = masks
        return self._masks

    def reset_dropout_mask(self):
        self._masks = None

    def weights_config(self):
        return {"units": self.units, "activation": activations.serialize(self.activation),
                "use_bias": self.use_bias,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "recurrent_initializer": initializers.serialize(self.recurrent_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer),
                "dropout": self.dropout, "recurrent_dropout": self.recurrent_dropout,
                "seed": self.seed}


class SimpleRNNStep(RecurrentWeights):
    """``h_t = activation(x_t @ kernel + h_{t-1} @ recurrent_kernel + bias)``."""

    def step(self, x_t, states, recurrent_mask=None):
        h_in = self._recurrent_input(states[0], recurrent_mask)
        h = self.activation(x_t + ops.matmul(h_in, self.recurrent_kernel.read))
        return h, [h]

    def step_config(self):
        return {}


class LSTMStep(RecurrentWeights):
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

    def step(self, x_t, states, recurrent_mask=None):
        h, c = states
        z = x_t + ops.matmul(self._recurrent_input(h, recurrent_mask),
                             self.recurrent_kernel.read)
        i, f, g, o = self._gates(z)
        sigma = self.recurrent_activation
        c = sigma(f) * c + sigma(i) * self.activation(g)
        h = sigma(o) * self.activation(c)
        return h, [h, c]

    def step_config(self):
        return {"recurrent_activation": activations.serialize(self.recurrent_activation),
                "unit_forget_bias": self.unit_forget_bias}


class GRUStep(RecurrentWeights):
    """Gated recurrent unit (Cho et al. 2014, https://arxiv.org/abs/1406.1078). Keras 3's
    default ``reset_after=True``: ``hh = tanh(x W_h + b_h + r * (h U_h + b'_h))`` with a bias
    of shape (2, 3*units); ``reset_after=False``: ``hh = tanh(x W_h + b_h + (r * h) U_h)``.
    Then ``h = z * h_prev + (1 - z) * hh``."""
    gates = 3

    def __init__(self, units: int, recurrent_activation: ActivationLike = "sigmoid",
                 reset_after: bool = True, **kwargs: Any) -> None:
        super().__init__(units, **kwargs)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.reset_after = bool(reset_after)

    def _bias_shape(self):
        return (2, 3 * self.units) if self.reset_after else (3 * self.units,)

    def _project(self, inputs):
        if not self.reset_after:
            return super()._project(inputs)
        projected = ops.matmul(inputs, self.kernel.read)
        if self.bias is not None:
            projected = projected + ops.squeeze(ops.slice_axis(self.bias.read, 0, 0, 1), 0)
        return projected

    def step(self, x_t, states, recurrent_mask=None):
        h = states[0]
        h_in = self._recurrent_input(h, recurrent_mask)
        x_z, x_r, x_h = self._gates(x_t)
        kernel, sigma = self.recurrent_kernel.read, self.recurrent_activation
        if self.reset_after:
            inner = ops.matmul(h_in, kernel)
            if self.bias is not None:
                inner = inner + ops.squeeze(ops.slice_axis(self.bias.read, 0, 1, 2), 0)
            r_z, r_r, r_h = self._gates(inner)
            z, r = sigma(x_z + r_z), sigma(x_r + r_r)
            candidate = self.activation(x_h + r * r_h)
        else:
            inner = ops.matmul(h_in, ops.slice_axis(kernel, -1, 0, 2 * self.units))
            z = sigma(x_z + ops.slice_axis(inner, -1, 0, self.units))
            r = sigma(x_r + ops.slice_axis(inner, -1, self.units, 2 * self.units))
            candidate = self.activation(x_h + ops.matmul(
                r * h_in, ops.slice_axis(kernel, -1, 2 * self.units, 3 * self.units)))
        h = z * h + (1.0 - z) * candidate
        return h, [h]

    def step_config(self):
        return {"recurrent_activation": activations.serialize(self.recurrent_activation),
                "reset_after": self.reset_after}


class _Recurrent(RecurrentLoop, RecurrentWeights):
    """A recurrent layer that owns its weights: the input projection of all steps is one
    matmul, then the step maths (a ``*Step`` mixin) runs per step."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.input_spec = InputSpec(ndim=3)

    def build(self, input_shape):
        if isinstance(input_shape, rnn_loop.WithInitialState) or \
                isinstance(input_shape, list) and isinstance(input_shape[0], (list, tuple)):
            input_shape = input_shape[0]
        super().build(input_shape)
        self.input_spec = InputSpec(ndim=3, axes={-1: input_shape[-1]})

    def _step_inputs(self, sequence, training):
        self.reset_dropout_mask()
        first = ops.squeeze(ops.slice_axis(sequence, 1, 0, 1), 1)
        like_h = rnn_loop.zero_states([self.units], first)[0]
        input_mask, _ = self.dropout_masks(first, like_h, training)
        if input_mask is not None:
            sequence = sequence * ops.expand_dims(input_mask, 1)
        projected = self._project(sequence)            # (batch, steps, gates*units)
        return rnn_loop.time_slices(projected, sequence.shape[1])

    def _step_function(self, training, states):
        _, recurrent_mask = self._masks
        return lambda x_t, states: self.step(x_t, states, recurrent_mask)

    def get_config(self):
        return {**Layer.get_config(self), **self.weights_config(), **self.step_config(),
                **self.loop_config()}


class SimpleRNN(SimpleRNNStep, _Recurrent):
    """Fully-connected RNN: the output is fed back as the next step's state."""


class _CudnnChoice(_Recurrent):
    """Keras's ``use_cudnn`` ("auto", True or False): hiapi has no cuDNN kernel, so every
    choice runs the same graph; the argument is checked and accepted for Keras's code."""

    def __init__(self, *args: Any, use_cudnn: bool | str = "auto", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if use_cudnn not in ("auto", True, False):
            raise ValueError(f"{type(self).__name__} {self.name!r}: use_cudnn must be 'auto', "
                             f"True or False, got {use_cudnn!r}")
        self.use_cudnn = use_cudnn


class LSTM(LSTMStep, _CudnnChoice):
    """Long short-term memory layer (Hochreiter & Schmidhuber 1997)."""


class GRU(GRUStep, _CudnnChoice):
    """Gated recurrent unit layer (Cho et al. 2014)."""


def _orthogonal_or(initializer):
    return initializers.orthogonal if initializer == "orthogonal" else initializer
