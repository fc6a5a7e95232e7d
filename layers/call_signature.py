"""What a layer's ``call`` accepts, read from its signature as Keras does, so that custom layers
may write ``call(self, inputs)``, ``call(self, inputs, mask=None)`` or ``call(self, a, b)``:
``training`` and ``mask`` are passed only to a ``call`` that names them (or takes
``**kwargs``), and several positional tensor parameters each get one of the inputs.
"""
from __future__ import annotations

import inspect

_POSITIONAL: dict[type, tuple[int, int]] = {}      # call's (required, accepted) positionals
_ACCEPTS: dict[tuple[type, str], bool] = {}
_KINDS = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


class PositionalInputs(tuple):
    """Inputs given to a layer as separate positional arguments, ``layer(a, b)``: spread over
    ``call``'s parameters again whenever the call is replayed (``_map`` keeps the type)."""


def required_inputs(layer):
    """How many positional parameters without defaults ``layer.call`` has after ``self``
    (``training`` and ``mask`` aside). A list given as one argument is spread only over that
    many; ``*args`` takes inputs only when they were given separately, ``layer(a, b)``."""
    return _positional(layer)[0]


def _positional(layer):
    """(required, accepted) positional tensor parameters of ``call``; ``*args`` accepts any."""
    key = type(layer)
    if key not in _POSITIONAL:
        parameters = [p for p in list(inspect.signature(type(layer).call).parameters.values())[1:]
                      if p.name not in ("training", "mask")]
        required = sum(1 for p in parameters if p.kind in _KINDS and p.default is p.empty)
        accepted = 1 << 30 if any(p.kind is inspect.Parameter.VAR_POSITIONAL
                                  for p in parameters) else \
            sum(1 for p in parameters if p.kind in _KINDS)
        _POSITIONAL[key] = (required, accepted)
    return _POSITIONAL[key]


def spreads_inputs(layer, inputs):
    """True when ``inputs`` go to several positional parameters of ``call``: they were given
    as ``layer(a, b)``, or ``call(self, a, b)`` requires as many as the list holds."""
    if isinstance(inputs, PositionalInputs):     # else one list: model(a, b) == model([a, b])
        return _positional(layer)[1] >= len(inputs)
    return isinstance(inputs, (list, tuple)) and len(inputs) > 1 and \
        required_inputs(layer) >= len(inputs)


def call_accepts(layer, argument):
    """Whether ``layer.call`` has a parameter named ``argument`` (or ``**kwargs``)."""
    key = (type(layer), argument)
    if key not in _ACCEPTS:
        parameters = inspect.signature(type(layer).call).parameters
        _ACCEPTS[key] = argument in parameters or any(
            p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    return _ACCEPTS[key]


def call_kwargs(layer, training, mask):
    """The keyword arguments this layer's ``call`` takes out of ``training`` and ``mask``."""
    kwargs = {}
    if call_accepts(layer, "training"):
        kwargs["training"] = training
    if call_accepts(layer, "mask"):
        kwargs["mask"] = mask
    return kwargs


def build_takes_several(layer):
    """Whether ``build`` takes one shape per positional input (``build(self, a_shape,
    b_shape)``) rather than one list of shapes."""
    parameters = list(inspect.signature(type(layer).build).parameters.values())[1:]
    return sum(1 for p in parameters if p.kind in _KINDS) > 1 or any(
        p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters)
