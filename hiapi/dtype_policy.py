"""Dtype policies (Keras 3's ``DTypePolicy``): the type a layer keeps its variables in and the
type it computes in.

A plain dtype name gives both the same type. ``"mixed_float16"`` and ``"mixed_bfloat16"`` keep
variables in float32 (the master weights the optimizer updates, so small updates are not lost
to 16-bit rounding) and compute in the 16-bit type: a layer casts its floating inputs and reads
its weights through a cast, and the gradient flows back through the casts to the float32
variables (Micikevicius et al. 2018, https://arxiv.org/abs/1710.03740)::

    hiapi.config.set_dtype_policy("mixed_float16")     # every layer made afterwards
    layers.Dense(10, dtype="float32")                  # one layer back in float32
    layers.Dense(10).dtype_policy                      # <DTypePolicy "mixed_float16">

A layer made with ``dtype=None`` takes the global policy current when it is made.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from hiapi.runtime import dtypes
from hiapi.runtime.settings import floatx

_MIXED = {"mixed_float16": "float16", "mixed_bfloat16": "bfloat16"}


class DTypePolicy:
    """A named pair (variable dtype, compute dtype); see the module docstring."""

    def __init__(self, name: str | None = None) -> None:
        name = floatx() if name is None else name
        if not isinstance(name, str):
            raise TypeError(f"DTypePolicy: name must be a string such as 'mixed_float16' or "
                            f"'float32', got {name!r} ({type(name).__name__})")
        if name in _MIXED:
            compute, variable = _MIXED[name], "float32"
        else:
            try:
                compute = variable = dtypes.as_dtype(name).name
            except TypeError:
                raise ValueError(f"DTypePolicy: unknown policy {name!r}; expected "
                                 f"'mixed_float16', 'mixed_bfloat16' or a dtype name such "
                                 f"as 'float32'") from None
        dtypes.as_dtype(compute)          # bfloat16 without ml_dtypes fails here, by name
        self._name, self._compute, self._variable = name, compute, variable

    @property
    def name(self) -> str:
        return self._name

    @property
    def compute_dtype(self) -> str:
        return self._compute

    @property
    def variable_dtype(self) -> str:
        return self._variable

    @property
    def is_mixed(self) -> bool:
        return self._compute != self._variable

    def get_config(self) -> dict[str, Any]:
        return {"name": self._name}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> "DTypePolicy":
        return cls(**config)

    def __eq__(self, other):
        return isinstance(other, DTypePolicy) and other._name == self._name

    def __hash__(self):
        return hash(self._name)

    def __repr__(self):
        return f'<DTypePolicy "{self._name}">'


_global: list[DTypePolicy | None] = [None]     # None: floatx's plain policy


def set_dtype_policy(policy: str | DTypePolicy | None) -> None:
    """Set the policy of layers made from now on (``None`` goes back to floatx's)."""
    _global[0] = None if policy is None else get(policy)


def dtype_policy() -> DTypePolicy:
    """The global policy: the one set, else the plain policy of ``floatx()``."""
    return _global[0] if _global[0] is not None else DTypePolicy(floatx())


def get(identifier: Any) -> DTypePolicy:
    """A policy from None (the global one), a name, a numpy dtype, a policy, or a config dict
    (``{"class_name": "DTypePolicy", "config": {"name": ...}}``, as Keras files hold)."""
    if identifier is None:
        return dtype_policy()
    if isinstance(identifier, DTypePolicy):
        return identifier
    if isinstance(identifier, dict):
        return DTypePolicy.from_config(identifier.get("config", identifier))
    if isinstance(identifier, str):
        return DTypePolicy(identifier)
    try:
        return DTypePolicy(dtypes.as_dtype(identifier).name)
    except TypeError:
        raise TypeError(f"dtype: expected a dtype name, a numpy dtype or a DTypePolicy, got "
                        f"{identifier!r}") from None
