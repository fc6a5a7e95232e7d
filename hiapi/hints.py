"""Type aliases for the public signatures: what an argument may be, in Keras's terms.

One place names them so that ``Dense``, ``Conv2D`` and ``LSTM`` say the same thing about an
``activation`` or a ``kernel_initializer``, and a user's type checker reads them through the
``py.typed`` marker::

    from hiapi.hints import ActivationLike

    def block(units: int, activation: ActivationLike = "relu") -> hiapi.layers.Dense:
        return hiapi.layers.Dense(units, activation=activation)

They describe what the code accepts, no more: ``padding`` is a ``str`` because layers lower-case
it (``"SAME"`` works, as in Keras), while ``data_format`` is a ``Literal`` because only the two
exact spellings are accepted. Nothing here is checked at run time; the layers raise their own
named errors for bad values.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterator, Literal, Mapping, Sequence, TypeAlias, \
    Union

import numpy as np
from numpy.typing import ArrayLike, DTypeLike    # numpy's, re-exported for one import line
if TYPE_CHECKING:
    from hiapi.graph.var import Var
    from hiapi.optimizers.optimizer import Optimizer
    from hiapi.optimizers.schedules import LearningRateSchedule
    from hiapi.utils.py_dataset import PyDataset

__all__ = ["ActivationLike", "ArrayLike", "ConstraintLike", "DataFormat", "DTypeLike",
           "InitializerLike", "InputData", "IntOrSequence", "LearningRate", "LossLike",
           "MetricLike", "OptimizerLike", "Predictions", "RegularizerLike", "Shape", "ShapeLike",
           "Tensor", "TensorLike", "Verbose"]

#: a name (``"relu"``), any callable on tensors, or None for the identity
ActivationLike: TypeAlias = Union[str, Callable[..., Any], None]
#: a name (``"glorot_uniform"``), a config dict, or an initializer object / callable(shape, dtype)
InitializerLike: TypeAlias = Union[str, Mapping[str, Any], Callable[..., Any]]
#: a name (``"l2"``), a config dict, a regularizer object / callable(weight), or None
RegularizerLike: TypeAlias = Union[str, Mapping[str, Any], Callable[..., Any], None]
#: a name (``"non_neg"``), a config dict, a constraint object / callable(weight), or None
ConstraintLike: TypeAlias = Union[str, Mapping[str, Any], Callable[..., Any], None]
#: ``kernel_size``, ``strides``, ``pool_size``: one int for every spatial axis, or one per axis
IntOrSequence: TypeAlias = Union[int, Sequence[int]]
#: None means ``hiapi.config.image_data_format()``
DataFormat: TypeAlias = Literal["channels_last", "channels_first", None]
#: a shape without the batch axis, as ``Input(shape=...)`` takes it; None for a free size
ShapeLike: TypeAlias = Sequence[Union[int, None]]
#: a shape as layers report it, batch axis first (None: any batch size)
Shape: TypeAlias = tuple[Union[int, None], ...]
#: a symbolic tensor: the output of ``Input`` or of a layer called on one
Tensor: TypeAlias = "Var"
#: what a layer may be called on: symbolic tensors, or arrays (run eagerly)
TensorLike: TypeAlias = Union["Var", np.ndarray, Sequence["Var"], Mapping[str, "Var"]]
#: ``fit``/``evaluate``/``predict`` data: arrays (one, a list, or a dict keyed by input or
#: output name), a generator or iterator of batches, or a ``PyDataset``
InputData: TypeAlias = Union[ArrayLike, Mapping[str, ArrayLike], Iterator[Any], "PyDataset",
                             None]
#: ``"auto"`` (1, or 0 off the chief process), 0 silent, 1 progress bar, 2 one line per epoch
Verbose: TypeAlias = Union[Literal["auto"], int]
#: a float, or a ``LearningRateSchedule`` of the iteration count
LearningRate: TypeAlias = Union[float, "LearningRateSchedule"]
#: an ``Optimizer``, or its name (``"adam"``, default arguments)
OptimizerLike: TypeAlias = Union[str, "Optimizer"]
#: a loss name, ``Loss`` object or function(y_true, y_pred); or one per output
LossLike: TypeAlias = Union[str, Callable[..., Any], Sequence[Any], Mapping[str, Any], None]
#: ``predict``'s result: one array per output (a list for several, a dict for dict outputs)
Predictions: TypeAlias = Union[np.ndarray, list[np.ndarray], dict[str, np.ndarray]]
#: metric names, ``Metric`` objects or functions; or one list per output
MetricLike: TypeAlias = Union[Sequence[Any], Mapping[str, Any], None]

