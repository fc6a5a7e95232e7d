"""What a subclassed model is called on: the structure of its inputs (one tensor, a list or
tuple, or a dict) and each input's shape and dtype, learned from the first call, from
``model.build(input_shape)`` or from the data of the first ``fit``/``evaluate``/``predict``.

A functional model knows its inputs from its ``Input`` tensors; a subclassed one only learns
them when it first sees data, as in Keras. The signature then makes the placeholders its
compiled steps are traced on, in the structure ``call`` expects::

    signature = InputSignature.from_data({"image": images, "stats": stats})
    signature.names        # ["image", "stats"]: x given as a dict is read by these keys
    signature.structure([a, b])  # {"image": a, "stats": b}
"""
from __future__ import annotations

import numpy as np

from hiapi.runtime.settings import floatx


class InputSignature:
    def __init__(self, kind, keys, specs):
        """``kind``: "single", "list", "tuple" or "dict"; ``keys``: a dict's sorted keys;
        ``specs``: ``[(shape with None batch, dtype)]`` in flat order."""
        self.kind, self.keys, self.specs = kind, keys, list(specs)

    @classmethod
    def from_data(cls, x):
        """From the user's x (arrays, nested one level in a list, tuple or dict)."""
        return cls._of(x, lambda a: _data_spec(np.asarray(a)))

    @classmethod
    def from_tensors(cls, inputs):
        """From the symbolic inputs of a first call (the batch axis made free)."""
        return cls._of(inputs, lambda v: ((None,) + tuple(v.shape[1:]), np.dtype(v.dtype).name))

    @classmethod
    def from_shapes(cls, input_shape, dtypes=None):
        """From ``build(input_shape)``: a shape tuple, a list of them, or a dict of them
        (``dtypes``: one per input in flat order, floatx when not given)."""
        def spec(k, shape):
            shape = tuple(None if d is None else int(d) for d in shape)
            return (None,) + shape[1:], np.dtype(dtypes[k] if dtypes else floatx()).name
        if isinstance(input_shape, dict):
            keys = sorted(input_shape)
            return cls("dict", keys, [spec(k, input_shape[key]) for k, key in enumerate(keys)])
        if isinstance(input_shape, (list, tuple)) and input_shape and \
                all(isinstance(s, (list, tuple)) for s in input_shape):
            return cls("list", None, [spec(k, s) for k, s in enumerate(input_shape)])
        return cls("single", None, [spec(0, input_shape)])

    @classmethod
    def _of(cls, structure, spec):
        if isinstance(structure, dict):
            keys = sorted(structure)
            return cls("dict", keys, [spec(structure[k]) for k in keys])
        if isinstance(structure, (list, tuple)):
            kind = "tuple" if isinstance(structure, tuple) else "list"
            return cls(kind, None, [spec(item) for item in structure])
        return cls("single", None, [spec(structure)])

    @property
    def names(self):
        """A dict's keys (x may then be given as a dict), else None."""
        return self.keys

    def structure(self, flat):
        """``flat`` (one item per input) in the structure ``call`` takes."""
        if self.kind == "dict":
            return dict(zip(self.keys, flat))
        if self.kind == "single":
            return flat[0]
        return tuple(flat) if self.kind == "tuple" else list(flat)

    def input_shape(self):
        """Keras's ``build`` argument for this signature (saved as the build config)."""
        shapes = [list(shape) for shape, _ in self.specs]
        if self.kind == "dict":
            return dict(zip(self.keys, shapes))
        return shapes[0] if self.kind == "single" else shapes

    def __repr__(self):
        return f"InputSignature({self.kind}, {self.keys}, {self.specs})"


def _data_spec(array):
    """Float data is fed as floatx (as the functional model's Inputs take it); integer data
    (token ids, labels used as inputs) keeps its kind."""
    dtype = floatx() if array.dtype.kind in "fb" or array.dtype == object else array.dtype.name
    if array.dtype.kind in "iu":
        dtype = "int32" if array.dtype.itemsize <= 4 else "int64"
    return (None,) + tuple(array.shape[1:]), dtype


def check_input(model, index, expected, got):
    """A ValueError naming ``model`` and input ``index`` when shape ``got`` does not fit
    ``expected`` (None: any size)."""
    if len(expected) != len(got) or any(e is not None and g is not None and e != g
                                        for e, g in zip(expected, got)):
        fmt = lambda s: "(" + ", ".join("None" if d is None else str(d) for d in s) + ")"
        raise ValueError(f"Input {index} of model {model.name!r} is incompatible: expected "
                         f"shape {fmt(expected)}, got shape {fmt(got)}")
