"""``Bidirectional``: run a recurrent layer forwards and a copy backwards and merge the two.

As in Keras, the forward layer is a fresh copy of ``layer`` named ``forward_<name>`` and the
backward one a copy with ``go_backwards`` flipped named ``backward_<name>`` (or the
``backward_layer`` given), so the weights are the forward layer's then the backward layer's and
the parameter count is twice the wrapped layer's. The backward sequence is reversed back into
time order before merging, so step t of the output has seen the whole sequence::

    inputs = hiapi.Input((20, 8))
    x = layers.Bidirectional(layers.LSTM(16, return_sequences=True))(inputs)   # (None, 20, 32)
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from hiapi.graph import ops
from hiapi.layers.input_spec import InputSpec
from hiapi.layers.layer import Layer
from hiapi.layers.rnn_loop import WithInitialState, flatten, split_inputs
from hiapi.layers.wrappers import Wrapper, deserialize, serialize

if TYPE_CHECKING:
    from hiapi.layers.recurrent import GRU, LSTM, SimpleRNN

MERGE_MODES = ("sum", "mul", "ave", "concat", None)


def _copy(layer, name, **changes):
    config = serialize(layer)
    config["config"].update(name=name, **changes)
    return deserialize(config)


def _strip(name, prefix):
    return name[len(prefix):] if name.startswith(prefix) else name


def reverse_time(x):
    """``x[:, ::-1]``: the steps of a (batch, steps, ...) sequence in reverse order."""
    steps = x.shape[1]
    if steps == 1:
        return x
    return ops.concatenate([ops.slice_axis(x, 1, t, t + 1) for t in range(steps - 1, -1, -1)],
                           1)


class Bidirectional(Wrapper):
    def __init__(self, layer: SimpleRNN | LSTM | GRU,
                 merge_mode: Literal["concat", "sum", "mul", "ave"] | None = "concat",
                 weights: None = None, backward_layer: SimpleRNN | LSTM | GRU | None = None,
                 **kwargs: Any) -> None:
        super().__init__(layer, **kwargs)
        who = f"Bidirectional {self.name!r}"
        if not all(hasattr(layer, a) for a in ("go_backwards", "return_sequences",
                                               "return_state")):
            raise ValueError(f"{who}: layer must be a recurrent layer (SimpleRNN, LSTM, GRU), "
                             f"got {type(layer).__name__}")
        if merge_mode not in MERGE_MODES:
            raise ValueError(f"{who}: merge_mode must be one of {MERGE_MODES}, got "
                             f"{merge_mode!r}")
        if weights is not None:
            raise ValueError(f"{who}: weights= is not supported; call set_weights() once the "
                             f"layer is built")
        # as in Keras, ``layer`` itself is never called: only the two copies carry weights
        self.forward_layer = _copy(layer, "forward_" + _strip(layer.name, "forward_"))
        if backward_layer is None:
            backward_layer = _copy(layer, "backward_" + _strip(layer.name, "backward_"),
                                   go_backwards=not layer.go_backwards)
        elif backward_layer.go_backwards == layer.go_backwards:
            raise ValueError(f"{who}: the forward layer and backward_layer must have different "
                             f"go_backwards, both have {layer.go_backwards}")
        for flag in ("return_sequences", "return_state"):
            if getattr(backward_layer, flag) != getattr(layer, flag):
                raise ValueError(f"{who}: backward_layer must have the layer's {flag}="
                                 f"{getattr(layer, flag)}, got {getattr(backward_layer, flag)}")
        self.backward_layer = backward_layer
        for direction in (self.forward_layer, self.backward_layer):
            # as Keras: masked steps of returned sequences are zeros in both directions
            if hasattr(direction, "zero_output_for_mask"):
                direction.zero_output_for_mask = direction.return_sequences
        self.merge_mode = merge_mode
        self.return_sequences, self.return_state = layer.return_sequences, layer.return_state
        self.supports_masking = True
        self.input_spec = InputSpec(ndim=3)

    def __call__(self, *args: Any, initial_state: Any = None, **kwargs: Any) -> Any:
        """As Keras: ``initial_state`` lists the forward layer's states, then the backward's."""
        if initial_state is not None:
            inputs = args[0] if args else kwargs.pop("inputs")
            args = (WithInitialState((inputs, list(initial_state))),) + args[1:]
        return super().__call__(*args, **kwargs)

    def call(self, inputs, training=None, mask=None):
        inputs, states, mask = split_inputs(inputs, mask)
        half = None if states is None else len(states) // 2
        forward = self.forward_layer(inputs, training=training, mask=mask,
                                     initial_state=None if states is None else states[:half])
        backward = self.backward_layer(inputs, training=training, mask=mask,
                                       initial_state=None if states is None else states[half:])
        states = []
        if self.return_state:
            forward, states = forward[0], list(forward[1:]) + list(backward[1:])
            backward = backward[0]
        if self.return_sequences:
            backward = reverse_time(backward)
        if self.merge_mode == "concat":
            outputs = [ops.concatenate([forward, backward], -1)]
        elif self.merge_mode == "sum":
            outputs = [forward + backward]
        elif self.merge_mode == "ave":
            outputs = [(forward + backward) * 0.5]
        elif self.merge_mode == "mul":
            outputs = [forward * backward]
        else:
            outputs = [forward, backward]
        return outputs + states if self.return_state or self.merge_mode is None else outputs[0]

    @property
    def stateful(self):
        return self.forward_layer.stateful

    @property
    def states(self):
        """Both directions' state Variables (a stateful layer, once called), else None."""
        forward, backward = self.forward_layer.states, self.backward_layer.states
        return tuple(forward + backward) if forward and backward else None

    def reset_state(self):
        self.forward_layer.reset_state()
        self.backward_layer.reset_state()

    reset_states = reset_state      # Keras's compatibility alias

    def compute_mask(self, inputs, previous_mask=None):
        if isinstance(previous_mask, (list, tuple)):
            previous_mask = flatten(previous_mask)[0]
        sequence_mask = previous_mask if self.return_sequences else None
        masks = [sequence_mask] * (1 if self.merge_mode else 2)
        if self.return_state:
            masks += [None] * (len(self.forward_layer.state_sizes) +
                              len(self.backward_layer.state_sizes))
        return masks if len(masks) > 1 else masks[0]

    def get_config(self):
        return {**Layer.get_config(self), "merge_mode": self.merge_mode,
                "layer": serialize(self.forward_layer),
                "backward_layer": serialize(self.backward_layer)}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["layer"] = deserialize(config["layer"])
        if config.get("backward_layer") is not None:
            config["backward_layer"] = deserialize(config["backward_layer"])
        return cls(**config)
