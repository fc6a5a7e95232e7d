"""``RNN``: Keras's recurrent layer over a cell, and the sequence handling that ``SimpleRNN``,
``LSTM`` and ``GRU`` share with it (``RecurrentLoop``).

A cell processes one time step: ``cell.call(inputs_t, states) -> (output, new_states)``, with
``state_size`` (an int, a shape, or a list of them) and optionally ``output_size``, as in Keras.
The layer walks the sequence (``layers/rnn_loop.py``) and adds what Keras's ``RNN`` does:
``initial_state`` at call time, ``return_sequences``/``return_state``, ``go_backwards``,
masking, and ``stateful`` (the last states kept in Variables and used as the next call's
initial states, ``reset_states()`` zeroes them)::

    rnn = layers.RNN(layers.LSTMCell(8), return_state=True)
    output, h, c = rnn(x)                        # same maths as layers.LSTM(8, return_state=True)

With an unknown number of steps (``Input(shape=(None, features))``) the symbolic output is
``Deferred``: the model writes the loop when it is traced for data of a known length.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from hiapi.graph import Var, ops
from hiapi.layers import rnn_loop
from hiapi.layers.call_signature import call_accepts
from hiapi.layers.layer import Layer
from hiapi.layers.rnn_loop import WithInitialState, flatten, size_shapes
from hiapi.layers.stacked_cells import StackedRNNCells
from hiapi.layers.wrappers import deserialize, serialize


class RecurrentLoop(Layer):
    """Base of the layers that run a step over the time axis; a subclass gives ``state_sizes``,
    ``output_sizes``, ``_step_inputs(sequence, training)`` (one input per step, in time order)
    and ``_step_function(training, states)`` (the ``step(x_t, states)`` to loop)."""

    def __init__(self, *args: Any, return_sequences: bool = False, return_state: bool = False,
                 go_backwards: bool = False, stateful: bool = False, unroll: bool = False,
                 zero_output_for_mask: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.return_sequences, self.return_state = bool(return_sequences), bool(return_state)
        self.go_backwards, self.stateful = bool(go_backwards), bool(stateful)
        # the loop is always unrolled into the graph; ``unroll`` is kept for the config
        self.unroll = bool(unroll)
        # Keras's RNN argument: masked steps output zeros instead of the previous output
        # (Bidirectional sets it when it returns sequences)
        self.zero_output_for_mask = zero_output_for_mask
        self._state_variables = None

    # ---- calling -----------------------------------------------------------------------------
    def __call__(self, *args: Any, training: bool | None = None, mask: Any = None,
                 initial_state: Any = None, **kwargs: Any) -> Any:
        if initial_state is not None or self.stateful:
            inputs = args[0] if args else kwargs.pop("inputs")
            if initial_state is not None:
                states = list(initial_state) if isinstance(initial_state, (list, tuple)) \
                    else [initial_state]
                symbolic = isinstance(flatten(inputs)[0], Var)
                states = [_as_input(s, symbolic) for s in states]
                inputs = WithInitialState((inputs, states))
            if self.stateful:
                self._make_state_variables(flatten(inputs)[0])
            args = (inputs,) + args[1:]
        return super().__call__(*args, training=training, mask=mask, **kwargs)

    def call(self, inputs, training=None, mask=None):
        sequence, initial, mask = rnn_loop.split_inputs(inputs, mask)
        steps = flatten(sequence)[0].shape[1]
        if steps is None:
            return self._deferred(sequence, initial)
        step_inputs = self._step_inputs(sequence, training)
        keep = [None] * steps if mask is None else \
            [ops.slice_axis(mask, 1, t, t + 1) for t in range(steps)]
        if self.go_backwards:
            step_inputs, keep = step_inputs[::-1], keep[::-1]
        states = self._initial_states(initial, flatten(step_inputs[0])[0])
        outputs, states = rnn_loop.run(self._step_function(training, states), step_inputs,
                                       states, keep, self.zero_output_for_mask)
        if self.stateful:
            for variable, state in zip(self._state_variables, states):
                self.add_update(variable, state)
        result = rnn_loop.stack_steps(outputs) if self.return_sequences else outputs[-1]
        return [result] + self._returned_states(states) if self.return_state else result

    def _returned_states(self, states):
        """The last states as ``return_state`` gives them (flat; nested per cell for stacked
        cells, as Keras)."""
        return list(states)

    def _initial_states(self, given, like):
        if given is not None:
            if len(given) != len(self.state_sizes):
                raise ValueError(f"{type(self).__name__} {self.name!r}: initial_state needs "
                                 f"{len(self.state_sizes)} tensors, got {len(given)}")
            return list(given)
        if self.stateful:
            return [v.read for v in self._state_variables]
        return rnn_loop.zero_states(self.state_sizes, like)

    def _deferred(self, sequence, initial):
        """Outputs of the right shapes for an unknown number of steps (see the module)."""
        flat = flatten(sequence)
        batch, dtype = flat[0].shape[0], np.dtype(self.compute_dtype)
        owner = f"{type(self).__name__} {self.name!r}"
        sources = flat + list(initial or [])
        time = (None,) if self.return_sequences else ()
        outputs = [ops.deferred(sources, (batch,) + time + shape, dtype, owner)
                   for shape in self.output_sizes]
        result = outputs[0] if len(outputs) == 1 else outputs
        if not self.return_state:
            return result
        return [result] + self._returned_states(
            [ops.deferred(sources, (batch,) + shape, dtype, owner) for shape in self.state_sizes])

    def compute_mask(self, inputs, previous_mask=None):
        if isinstance(previous_mask, (list, tuple)):
            previous_mask = flatten(previous_mask)[0]
        output_mask = previous_mask if self.return_sequences else None
        return [output_mask] + [None] * len(self.state_sizes) if self.return_state \
            else output_mask

    # ---- stateful ----------------------------------------------------------------------------
    def _make_state_variables(self, first_input):
        if self._state_variables is not None:
            return
        batch = first_input.shape[0]
        if batch is None:
            raise ValueError(f"{type(self).__name__} {self.name!r}: stateful=True needs a "
                             f"known batch size, got input shape {first_input.shape}; give "
                             f"the Input a batch_size or call the layer on arrays")
        self._state_variables = [
            self.add_state((int(batch),) + shape, "zeros", f"state_{k}", self.compute_dtype)
            for k, shape in enumerate(self.state_sizes)]

    @property
    def states(self):
        """The Variables holding a stateful layer's states (None until its first call)."""
        return self._state_variables

    def reset_state(self):
        """Zero the states of a stateful layer."""
        for variable in self._state_variables or ():
            variable.assign(np.zeros(variable.shape, variable.dtype))

    reset_states = reset_state      # Keras's compatibility alias

    def loop_config(self):
        return {"return_sequences": self.return_sequences, "return_state": self.return_state,
                "go_backwards": self.go_backwards, "stateful": self.stateful,
                "unroll": self.unroll}


def _as_input(state, symbolic):
    """An initial state as a call input: a Variable (another layer's ``states``) as its
    value, symbolic or an array to match the sequence."""
    if isinstance(state, Var) or not hasattr(state, "numpy"):
        return state
    return state.read if symbolic else state.numpy()


class RNN(RecurrentLoop):
    """Keras's ``RNN(cell)``: loops ``cell`` over the time axis of its input (a tensor, or a
    list/tuple of tensors for a cell with nested inputs)."""

    def __init__(self, cell: Any, return_sequences: bool = False, return_state: bool = False,
                 go_backwards: bool = False, stateful: bool = False, unroll: bool = False,
                 zero_output_for_mask: bool = False, **kwargs: Any) -> None:
        super().__init__(return_sequences=return_sequences, return_state=return_state,
                         go_backwards=go_backwards, stateful=stateful, unroll=unroll,
                         zero_output_for_mask=zero_output_for_mask, **kwargs)
        if isinstance(cell, (list, tuple)):     # Keras: a list of cells is stacked
            cell = StackedRNNCells(cell)
        if not hasattr(cell, "call") or not hasattr(cell, "state_size"):
            raise ValueError(f"RNN {self.name!r}: cell must be a layer with call(inputs, "
                             f"states) and a state_size, got {cell!r}")
        self.cell = cell
        self.supports_masking = True

    @property
    def state_sizes(self):
        return size_shapes(self.cell.state_size)

    @property
    def output_sizes(self):
        size = getattr(self.cell, "output_size", None)
        return size_shapes(size) if size is not None else self.state_sizes[:1]

    def build(self, input_shape):
        self.built = True         # the cell is built in call, from the sequence alone

    def _returned_states(self, states):
        if not isinstance(self.cell, StackedRNNCells):
            return list(states)
        grouped, states = [], list(states)
        for cell in self.cell.cells:
            count = len(size_shapes(cell.state_size))
            grouped.append(states[:count])
            states = states[count:]
        return grouped

    def call(self, inputs, training=None, mask=None):
        if not self.cell.built:       # from the sequence alone, without the initial states
            sequence = rnn_loop.split_inputs(inputs, None)[0]
            self.cell.build(_without_time(rnn_loop.rebuild(
                sequence, [v.shape for v in flatten(sequence)])))
            self.cell.built = True
        return super().call(inputs, training=training, mask=mask)

    def _step_inputs(self, sequence, training):
        return rnn_loop.time_slices(sequence, flatten(sequence)[0].shape[1])

    def _step_function(self, training, states):
        cell, kwargs = self.cell, {}
        if call_accepts(cell, "training"):
            kwargs["training"] = training
        if hasattr(cell, "reset_dropout_mask"):
            cell.reset_dropout_mask()

        def step(x_t, states):
            output, new_states = cell.call(x_t, states, **kwargs)
            if not isinstance(new_states, (list, tuple)):
                new_states = [new_states]
            return output, list(new_states)
        return step

    def get_config(self):
        return {**Layer.get_config(self), "cell": serialize(self.cell), **self.loop_config(),
                "zero_output_for_mask": self.zero_output_for_mask}

    @classmethod
    def from_config(cls, config):
        return cls(**{**config, "cell": deserialize(config["cell"])})


def _without_time(shape):
    """A (batch, steps, ...) shape, or a nested list of them, without the time axis."""
    if isinstance(shape, (list, tuple)) and shape and isinstance(shape[0], (list, tuple)):
        return [_without_time(s) for s in shape]
    return (shape[0],) + tuple(shape[2:])

