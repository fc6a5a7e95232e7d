"""``Sequential``: a plain stack of layers, each feeding the next."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from hiapi.hints import Shape, ShapeLike, Tensor
from hiapi.graph.var import Var
from hiapi.layers import layer_io
from hiapi.runtime.settings import floatx
from hiapi.layers.input_layer import InputLayer
from hiapi.layers.layer import Layer
from hiapi.models import model_config
from hiapi.models.functional import Model
from hiapi.models.input_signature import check_input
from hiapi.serialization.object_registration import register_builtin


class Sequential(Model):
    """``Sequential([hiapi.Input(shape=(784,)), Dense(64, activation="relu"), Dense(10)])``.

    The input shape comes from an ``Input`` first element, from ``input_shape=`` on the first
    layer, or from the data at the first ``fit``/call; weights exist once it is known.
    """

    def __init__(self, layers: Sequence[Layer | Tensor] | None = None, name: str | None = None,
                 trainable: bool = True, **kwargs: Any) -> None:
        super().__init__(name=name, trainable=trainable, **kwargs)
        self._stack: list[Layer] = []
        self._input_shape: Shape | None = None
        self._input_dtype = floatx()
        self._input_layer: InputLayer | None = None      # the InputLayer the stack is traced from
        self._graph_output: Any = None
        for layer in layers or []:
            self.add(layer)

    def add(self, layer: Layer | Tensor) -> None:
        if isinstance(layer, Var) and isinstance(getattr(layer, "_keras_history", (None,))[0],
                                                 InputLayer):
            layer = layer._keras_history[0]
        if isinstance(layer, InputLayer):
            if self._stack:
                raise ValueError(f"Sequential {self.name!r}: an Input must come first")
            self._input_shape, self._input_dtype = layer.batch_shape, layer.dtype
            self._input_layer = layer
            return
        if not isinstance(layer, Layer):
            raise TypeError(f"Sequential {self.name!r}: expected a Layer, got {layer!r}")
        if not self._stack and self._input_shape is None and layer._build_input_shape:
            self._input_shape = layer._build_input_shape
        self._stack.append(layer)
        self._sublayers.append(layer)
        self.built = False
        if self._input_shape is not None:
            self.build(self._input_shape)

    @property
    def layers(self) -> list[Layer]:
        return list(self._stack)

    def build(self, input_shape: ShapeLike | None = None) -> None:
        """Trace the stack once on a placeholder: creates every weight and checks shapes."""
        input_shape = tuple(input_shape or self._input_shape or ())
        if not input_shape:
            raise ValueError(f"Sequential {self.name!r}: the input shape is unknown; start "
                             f"with hiapi.Input(shape=...) or call build(input_shape)")
        self._input_shape = input_shape
        source = self._input_layer
        if source is None or source.batch_shape != input_shape or \
                source.dtype != np.dtype(self._input_dtype).name:
            source = self._input_layer = InputLayer(shape=input_shape[1:],
                                                    batch_size=input_shape[0],
                                                    dtype=self._input_dtype)
        x = source.output
        for layer in self._stack:
            inputs, x = x, layer(x)
            layer_io.record(layer, inputs, x, replace=True)   # layer.input / layer.output
        self._graph_output = x
        self.built = True

    @property
    def inputs(self):
        """``[Input tensor]`` of the traced stack (Keras's ``Sequential.inputs``), so
        ``hiapi.Model(seq.inputs, [l.output for l in seq.layers])`` extracts features."""
        self._require_graph("inputs")
        return [self._input_layer.output]

    @property
    def outputs(self):
        self._require_graph("outputs")
        return [self._graph_output]

    def _require_graph(self, what):
        if self._graph_output is None or not self.built:
            if self._input_shape is None or not self._stack:
                raise AttributeError(f"Sequential model {self.name!r} has no defined {what} "
                                     f"yet: give it an Input first, or call or fit it")
            self.build(self._input_shape)

    def pop(self, rebuild: bool = True) -> Layer:
        """Remove the last layer and return it (Keras's ``Sequential.pop``)."""
        if not self._stack:
            raise ValueError(f"Sequential {self.name!r} has no layers to pop")
        layer = self._stack.pop()
        self._sublayers.remove(layer)
        self._graph_output, self.built = None, False
        if rebuild and self._stack and self._input_shape is not None:
            self.build(self._input_shape)
        return layer

    def keras_config(self, strict: bool = False) -> dict[str, Any]:
        return model_config.sequential_config(self, strict)

    def get_config(self) -> dict[str, Any]:
        """Keras 3's Sequential config: name, trainable, dtype, the layers (an InputLayer
        first once the input shape is known) and ``build_input_shape``."""
        return self.keras_config()["config"]

    @classmethod
    def from_config(cls, config: dict[str, Any] | list[dict[str, Any]],
                    custom_objects: Mapping[str, Any] | None = None) -> Sequential:
        return model_config.sequential_from_config(cls, config, custom_objects)

    def input_specs(self):
        if self._input_shape is None:
            return None
        return [(self._input_shape, self._input_dtype)]

    def _call_symbolic(self, inputs, training, mask=None):
        if not self.built and self._input_shape is None and hasattr(inputs, "shape"):
            # built by its first call: any batch size (a custom step traced for a concrete
            # batch, or the whole data, must not fix it)
            self.build((None,) + tuple(inputs.shape[1:]))
        return super()._call_symbolic(inputs, training, mask)

    def call(self, inputs, training=None):
        if self._input_shape is not None:
            check_input(self, 0, self._input_shape, inputs.shape)
        elif hasattr(inputs, "shape"):     # built from the data: the shape is known now
            self._input_shape, self._input_dtype = (None,) + tuple(inputs.shape[1:]), \
                inputs.dtype.name
        for layer in self._stack:
            inputs = layer(inputs, training=training)
        return inputs


register_builtin("Sequential", Sequential)
