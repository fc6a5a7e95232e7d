"""Property-based fuzzing of every layer (issue #16): for any configuration and input shape a
layer either runs, giving the output shape its symbolic shape inference promised (and
``compute_output_shape`` agrees) with finite values and finite gradients for finite input, or it
raises ValueError / TypeError whose message names the layer. Any other exception, a shape
mismatch or a NaN fails. At inference, ``from_config(get_config())`` with the same weights must
also compute the same output.

The cases are a table (tests/fuzz/layer_cases.py); every layer in ``hiapi.layers`` must have one.
Runs are derandomized, so CI sees the same examples every time.
"""
import inspect

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings

from hiapi import layers
from hiapi.graph import Function, grad, placeholder
from hiapi.layers.layer import Layer
from layer_cases import CASES

NOT_FUZZED = {"Layer": "the abstract base", "Wrapper": "the abstract base of wrappers",
              "InputLayer": "no computation; Input() makes it",
              "SimpleRNNCell": "one step: fuzzed as the RNN case's cell",
              "LSTMCell": "one step: fuzzed as the RNN case's cell",
              "GRUCell": "one step: fuzzed as the RNN case's cell",
              "StackedRNNCells": "one step: fuzzed as the RNN case's cell"}


def check_layer(case, kwargs, inputs, training):
    name = f"fuzz_{case.name.lower()}"
    kwargs = {k: v for k, v in kwargs.items() if not k.startswith("_")}
    try:
        layer = case.layer(name=name, **kwargs)
    except (ValueError, TypeError) as error:        # construction: the class name suffices
        assert name in str(error) or case.name in str(error), \
            f"{case.name}({kwargs}) raised without naming the layer: {error!r}"
        return
    multi = isinstance(inputs, list)
    arrays = inputs if multi else [inputs]
    holders = [placeholder((None,) + a.shape[1:], "float32" if a.dtype.kind == "f" else a.dtype)
               for a in arrays]
    try:
        if case.spread:
            symbolic = _flat(layer(*holders, training=training))
            eager = _flat(layer(*arrays, training=training))
        else:
            symbolic = _flat(layer(holders if multi else holders[0], training=training))
            eager = _flat(layer(inputs, training=training))
    except (ValueError, TypeError) as error:
        # a wrapper may leave the error to the wrapped layer that cannot take the input
        names = [name] + [v.name for v in kwargs.values() if isinstance(v, Layer)]
        assert any(n in str(error) for n in names), (
            f"{case.name}({kwargs}) on shapes {[a.shape for a in arrays]} raised without "
            f"naming the layer {name!r}: {error!r}")
        return
    promised = [v.shape for v in symbolic]       # None (the batch axis, mostly): any size
    got = [np.shape(a) for a in eager]
    assert len(got) == len(promised) and all(
        len(g) == len(p) and all(q is None or q == d for d, q in zip(g, p))
        for g, p in zip(got, promised)), \
        f"{case.name}({kwargs}): eager shapes {got}, symbolic {promised}"
    if not multi or type(layer).compute_output_shape is not Layer.compute_output_shape:
        shapes = [h.shape for h in holders]
        computed = layer.compute_output_shape(*shapes) if case.spread else \
            layer.compute_output_shape(shapes if multi else shapes[0])
        computed = [tuple(s) for s in _flat_shapes(computed)]
        assert computed == [v.shape for v in symbolic], \
            f"{case.name}({kwargs}): compute_output_shape {computed}, symbolic " \
            f"{[v.shape for v in symbolic]}"
    for out in eager:
        assert np.all(np.isfinite(out)), \
            f"{case.name}({kwargs}, training={training}) gave non-finite values from finite input"
    check_gradients(case, kwargs, layer, holders, symbolic, arrays, training)
    if not training:
        check_config_round_trip(case, kwargs, layer, inputs, eager)


def check_config_round_trip(case, kwargs, layer, inputs, eager):
    """``from_config(get_config())`` with the same weights computes the same outputs."""
    clone = type(layer).from_config(layer.get_config())
    args = inputs if case.spread else [inputs]
    _flat(clone(*args, training=False))                 # builds it
    clone.set_weights(layer.get_weights())
    for a, b in zip(_flat(clone(*args, training=False)), eager):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6,
                                   err_msg=f"{case.name}({kwargs}) after a config round trip")


def check_gradients(case, kwargs, layer, holders, symbolic, arrays, training):
    """The gradient of the summed outputs with respect to the float inputs and the weights
    compiles and is finite (a sqrt or a division at 0 would give inf/NaN in training)."""
    floats = [v for v in symbolic if v.dtype.kind == "f"]
    if not floats:
        return
    total = floats[0].sum()
    for v in floats[1:]:
        total = total + v.sum()
    wrt = [h for h in holders if h.dtype.kind == "f"] + [w.read for w in layer.trainable_weights]
    grads = [g for g in grad(total, wrt) if g is not None]
    if grads:
        for g in Function(holders, grads)(*arrays):
            assert np.all(np.isfinite(g)), (f"{case.name}({kwargs}, training={training}): "
                                            f"non-finite gradient from finite input")


def _flat(value):
    return [v for item in value for v in _flat(item)] if isinstance(value, (list, tuple)) \
        else [value]


def _flat_shapes(shape):
    """One shape, or a list/tuple of shapes (several outputs), nested (the states of stacked
    recurrent cells, grouped per cell)."""
    if isinstance(shape, (list, tuple)) and shape and isinstance(shape[0], (list, tuple)):
        return [s for item in shape for s in _flat_shapes(item)]
    return [shape]


def fuzz_test(case):
    @settings(max_examples=case.max_examples, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                     HealthCheck.data_too_large])
    @given(drawn=case.strategy())
    def test(drawn):
        check_layer(case, *drawn)
    for kwargs, inputs, training in case.examples:
        test = example(drawn=(kwargs, inputs, training))(test)
    test.__name__ = f"test_fuzz_{case.name}"
    return test


for _case in CASES:
    globals()[f"test_fuzz_{_case.name}"] = fuzz_test(_case)


def test_every_layer_has_a_fuzz_case():
    public = {name for name, obj in vars(layers).items()
              if inspect.isclass(obj) and issubclass(obj, Layer)}
    missing = public - {case.name for case in CASES} - set(NOT_FUZZED)
    assert not missing, (f"layers without a fuzz case: {sorted(missing)}; add one entry each "
                         f"to CASES in tests/fuzz/layer_cases.py")
