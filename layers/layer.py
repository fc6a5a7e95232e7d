"""``Layer``: the unit models are made of, with Keras's contract.

``__init__`` stores and validates configuration; ``build(input_shape)`` creates weights with
``add_weight`` the first time the layer is called (so shapes come from the data, not the user);
``call(inputs, training)`` computes the output with graph ops only. Calling a layer on a
symbolic Var traces it into the graph; calling it on a numpy array runs it eagerly through a
cached compiled Function and returns a numpy array::

    dense = hiapi.layers.Dense(4)
    y = dense(np.ones((2, 3)))     # builds (3 -> 4), runs, returns a (2, 4) array
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence, TypeVar

import numpy as np

from hiapi import constraints, dtype_policy, initializers, regularizers
from hiapi.runtime.dtypes import as_dtype, is_float, is_low_precision
from hiapi.graph import Function, Variable, ops, placeholder
from hiapi.graph.variable import autocast
from hiapi.graph import eager_tape
from hiapi.graph.var import Var, concrete
from hiapi.hints import (ArrayLike, ConstraintLike, DTypeLike, InitializerLike, RegularizerLike,
                         Shape, ShapeLike)
from hiapi.graph import tracing
from hiapi.layers import call_signature, eager_mask, layer_io, masks, tracking
from hiapi.layers.layer_io import LayerIO
from hiapi.layers.layer_losses import LayerLosses
from hiapi.layers.layer_saving import LayerSaving
from hiapi.ops.core import layer_call
from hiapi.layers.layer_errors import naming_layer
from hiapi.utils.naming import snake_case, unique_name

if TYPE_CHECKING:
    from hiapi.layers.input_spec import InputSpec

_L = TypeVar("_L", bound="Layer")


class Layer(LayerIO, LayerLosses, LayerSaving):
    def __init__(self, trainable: bool = True, name: str | None = None,
                 dtype: DTypeLike | None = None, input_shape: ShapeLike | None = None,
                 input_dim: int | None = None,
                 activity_regularizer: RegularizerLike = None, **kwargs: Any) -> None:
        if kwargs:
            raise TypeError(f"{type(self).__name__}: unexpected keyword argument(s) "
                            f"{', '.join(sorted(kwargs))}")
        self.name = name or unique_name(snake_case(type(self).__name__))
        self.trainable = trainable
        self.dtype_policy = dtype      # a policy, its name or a dtype; None: the global one
        self.built = False
        self.input_spec: InputSpec | None = None
        self._weights: list[Variable] = []
        self._state: list[Variable] = []
        self._regularized: list[tuple[Variable, Any]] = []
        self.activity_regularizer = regularizers.get(activity_regularizer)
        self._sublayers: list[Layer] = []
        self._losses: list[Any] = []
        self._eager_functions: dict[Any, Any] = {}
        if input_dim is not None and input_shape is None:
            input_shape = (input_dim,)
        self._build_input_shape = None if input_shape is None else (None,) + tuple(input_shape)

    def __setattr__(self, name, value):
        # track layers held as attributes, also in lists and dicts, so their weights belong to
        # this layer (as Keras does); a public list or dict also adopts layers added later
        if "_sublayers" in self.__dict__ and not isinstance(value, (str, int, float)):
            found = tracking.layers_in(value, _is_layer)
            if not name.startswith("_") and (found or (isinstance(value, (list, dict)) and
                                                       not value)):
                value = tracking.tracked(value, self._adopt)
            self._adopt(found)
        # a Variable held as an attribute is one of the layer's weights (Keras's tracking)
        if isinstance(value, Variable) and "_weights" in self.__dict__ and \
                not any(value is mine for mine in self._weights + self._state):
            self._weights.append(value)
        # and random-number generators (hiapi.random.SeedGenerator): their state is saved
        if isinstance(getattr(type(value), "state_variables", None), property) and \
                not isinstance(value, Layer) and "_state" in self.__dict__:
            self._state += [v for v in value.state_variables
                            if not any(v is mine for mine in self._state)]
        super().__setattr__(name, value)

    def _adopt(self, value):
        for layer in tracking.layers_in(value, _is_layer):
            if layer is not self and layer not in self._sublayers:
                self._sublayers.append(layer)

    # ---- dtype policy (hiapi.dtype_policy) --------------------------------------------------
    @property
    def dtype_policy(self) -> dtype_policy.DTypePolicy:
        return self._dtype_policy

    @dtype_policy.setter
    def dtype_policy(self, value):
        self._dtype_policy = dtype_policy.get(value)

    @property
    def dtype(self) -> str:
        """The dtype of the layer's variables (float32 under a mixed policy)."""
        return self._dtype_policy.variable_dtype

    @property
    def variable_dtype(self) -> str:
        return self._dtype_policy.variable_dtype

    @property
    def compute_dtype(self) -> str:
        """The dtype the layer computes in: its float inputs and weights are cast to it."""
        return self._dtype_policy.compute_dtype

    # ---- weights -----------------------------------------------------------------------------
    def add_weight(self, shape: Sequence[int] = (), initializer: InitializerLike = "glorot_uniform",
                   name: str | None = None, trainable: bool = True, dtype: DTypeLike | None = None,
                   regularizer: RegularizerLike = None,
                   constraint: ConstraintLike = None, autocast: bool = True) -> Variable:
        """Create a Variable owned by this layer, initialised now, named ``layer/name``.
        A ``regularizer`` adds its penalty to the training loss; a ``constraint`` is applied
        to the weight after every optimizer update. With ``autocast`` (Keras's default) a
        float weight is read in the layer's compute dtype inside ``call``."""
        dtype = as_dtype(dtype or self.dtype)
        value = initializers.get(initializer)(tuple(int(d) for d in shape), dtype)
        variable = Variable(value, name=f"{self.name}/{name or 'weight'}", trainable=trainable,
                            dtype=dtype, autocast=autocast)
        variable.constraint = constraints.get(constraint)
        regularizer = regularizers.get(regularizer)
        if regularizer is not None:
            self._regularized.append((variable, regularizer))
        self._weights.append(variable)
        return variable

    def add_state(self, shape: Sequence[int], initializer: InitializerLike, name: str,
                  dtype: DTypeLike | None) -> Variable:
        """A Variable that is state but not a weight (e.g. a random-number counter): not in
        ``weights`` or the parameter count, as in Keras, but saved with the model."""
        dtype = as_dtype(dtype)
        variable = Variable(initializers.get(initializer)(tuple(shape), dtype),
                            name=f"{self.name}/{name}", trainable=False, dtype=dtype,
                            autocast=False)
        self._state.append(variable)
        return variable

    @property
    def state_variables(self) -> list[Variable]:
        return _unique(self._state + [v for layer in self._sublayers
                                      for v in layer.state_variables])

    @property
    def variables(self) -> list[Variable]:
        """Keras 3's ``layer.variables``: every variable of the layer's state, its weights and
        then the rest (random-number seeds' states), what a worker broadcasts to start from
        another's state."""
        return _unique(self.weights + self.state_variables)

    def add_update(self, variable: Variable, value: Var) -> None:
        """Assign ``value`` to ``variable`` after each step of the graph being traced (used in
        training for batch-norm statistics and random-number counters)."""
        tracing.add_update(variable, value)

    @property
    def weights(self) -> list[Variable]:
        return _unique(self._weights + [w for layer in self._sublayers for w in layer.weights])

    @property
    def trainable_weights(self) -> list[Variable]:
        if not self.trainable:
            return []
        own = [v for v in self._weights if v.trainable]
        return _unique(own + [w for layer in self._sublayers for w in layer.trainable_weights])

    @property
    def trainable_variables(self) -> list[Variable]:
        """Keras 3's name for ``trainable_weights``."""
        return self.trainable_weights

    @property
    def non_trainable_variables(self) -> list[Variable]:
        return self.non_trainable_weights

    @property
    def non_trainable_weights(self) -> list[Variable]:
        trainable = {id(v) for v in self.trainable_weights}
        return [v for v in self.weights if id(v) not in trainable]

    def get_weights(self) -> list[np.ndarray]:
        return [v.numpy() for v in self.weights]

    def set_weights(self, weights: Sequence[ArrayLike]) -> None:
        self._require_built("set_weights")
        mine = self.weights
        if len(weights) != len(mine):
            raise ValueError(f"Layer {self.name!r}: set_weights got {len(weights)} arrays, the "
                             f"layer has {len(mine)} weights "
                             f"({', '.join(str(v.shape) for v in mine)})")
        for variable, value in zip(mine, weights):
            if np.shape(value) != variable.shape:
                raise ValueError(f"Layer {self.name!r}: weight {variable.name!r} has shape "
                                 f"{variable.shape}, set_weights got shape {np.shape(value)}")
        for variable, value in zip(mine, weights):
            variable.assign(value)

    def count_params(self) -> int:
        self._require_built("count_params")
        return int(sum(np.prod(v.shape) for v in self.weights))

    def _require_built(self, what):
        if not self.built:
            raise ValueError(f"Layer {self.name!r} has not been built yet, so {what}() has no "
                             f"weights to use: call it on an input first, or call "
                             f"build(input_shape)")

    # ---- building and calling ----------------------------------------------------------------
    def build(self, input_shape: Shape) -> None:
        self.built = True

    def call(self, inputs: Any, training: bool | None = None) -> Any:
        raise NotImplementedError(f"{type(self).__name__}.call")

    # ---- masking (layers/masks.py) -----------------------------------------------------------
    @property
    def supports_masking(self):
        """Whether this layer passes masks on (Keras's rule: set explicitly, or true when the
        class defines its own ``compute_mask``)."""
        explicit = self.__dict__.get("_supports_masking")
        if explicit is not None:
            return explicit
        return type(self).compute_mask is not Layer.compute_mask

    @supports_masking.setter
    def supports_masking(self, value):
        self.__dict__["_supports_masking"] = bool(value)

    def compute_mask(self, inputs: Any, previous_mask: Any = None) -> Any:
        """The mask of the output; by default the input's (used when ``supports_masking``)."""
        return previous_mask

    def __call__(self, *args: Any, training: bool | None = None, mask: Any = None,
                 **kwargs: Any) -> Any:
        if "inputs" in kwargs:
            args = (kwargs.pop("inputs"),) + args
        if kwargs:
            raise TypeError(f"Layer {self.name!r}: call arguments other than the inputs, "
                            f"training and mask are not supported, got {sorted(kwargs)}; "
                            f"pass tensors positionally (layer(x, y) for call(self, x, y))")
        inputs = _call_inputs(self, args)
        if len(args) == 2 and inputs is args[0]:
            training = args[1]        # layer(x, True): training given positionally
        outermost = not tracing.in_layer_call()
        if outermost:
            self._clear_losses()      # the outermost call starts layer.losses afresh (Keras)
        session = eager_tape.recording()
        if session is not None and outermost:     # in an eager GradientTape's block
            inputs = _map(lambda leaf: self._eager_tape_input(session, leaf), inputs)
        elif not tracing.in_trace():  # Vars an eager tape gave values are data here
            inputs = _map(concrete, inputs)
        flat = _flatten(inputs)
        if all(isinstance(v, Var) for v in flat):
            with naming_layer(self):
                outputs = self._call_symbolic(inputs, training, mask)
            if session is not None and outermost:
                session.keep(_flatten(outputs))
            return outputs
        if any(isinstance(v, Var) for v in flat):
            raise TypeError(f"Layer {self.name!r}: inputs mix symbolic Vars and arrays")
        with naming_layer(self):
            return self._call_eager(inputs, training, mask)

    def _eager_tape_input(self, session, leaf):
        """An array given to a layer in an eager tape's block: the placeholder holding it,
        float arrays in the layer's dtype (as ``_call_eager`` feeds them)."""
        if leaf is None or isinstance(leaf, Var):
            return leaf
        if isinstance(leaf, Variable):
            return tracing.current_value(leaf)     # differentiable, not a copy
        array = np.asarray(leaf)
        return session.input(leaf, self.dtype if array.dtype.kind == "f" else None)

    def _call_symbolic(self, inputs, training, mask=None):
        # for an eager call: which outputs ``call`` returned as a Variable (see _call_eager)
        returned = self.__dict__.pop("_eager_returned", None)
        flat = _flatten(inputs)
        spread = call_signature.spreads_inputs(self, inputs)
        if not self.built:
            shapes = [v.shape for v in flat]
            if spread and call_signature.build_takes_several(self):
                self.build(*shapes)
            else:
                self.build(shapes[0] if len(shapes) == 1 else shapes)
            self.built = True
        if self.input_spec is not None:
            specs = self.input_spec if isinstance(self.input_spec, list) else [self.input_spec]
            for index, (spec, var) in enumerate(zip(specs, flat)):
                spec.check(self, index, var.shape)
        previous_mask = _map(masks.get_mask, inputs) if mask is None else mask
        kwargs = call_signature.call_kwargs(self, training, previous_mask)
        cast_inputs = self._autocast_inputs(inputs)
        policy = self._dtype_policy
        with layer_call(), tracing.batch_reference(flat), \
                autocast(policy.compute_dtype if policy.is_mixed else None):
            outputs = self.call(*cast_inputs, **kwargs) if spread else \
                self.call(cast_inputs, **kwargs)
        if returned is not None:
            returned.extend(v if isinstance(v, Variable) else None for v in _flatten(outputs))
        outputs = _map(_graph_value, outputs)
        outputs = _map(lambda v: ops.identity(v) if any(v is i for i in flat) else v, outputs)
        masks.set_output_masks(self, inputs, outputs, previous_mask, _flatten)
        trainable = {id(v) for v in self.trainable_weights}
        for variable, regularizer in self._regularized:
            if id(variable) in trainable:     # a frozen weight's penalty is not a loss (Keras)
                tracing.add_regularization(
                    variable, lambda: regularizer(tracing.current_value(variable)))
        if self.activity_regularizer is not None:
            for output in _flatten(outputs):
                self._record_loss(self.activity_regularizer(output))
        for var in _flatten(outputs):
            var._keras_history = (self, inputs, outputs)
        self._output_shape = _map(lambda v: v.shape, outputs)
        layer_io.record(self, inputs, outputs)
        return outputs

    def _autocast_inputs(self, inputs):
        """Float inputs cast to the compute dtype (Keras's autocasting of call arguments)
        where 16 bits are involved: under a mixed policy, or a 16-bit input to a wider layer
        (a float32 softmax after float16 layers). Unlike Keras, a float64 input to a float32
        layer is left to numpy's promotion, as before policies existed (float64 gradient
        checks of float32 layers rely on it). A cast input keeps its mask."""
        compute = as_dtype(self.compute_dtype)
        if not is_float(compute):
            return inputs
        mixed = self._dtype_policy.is_mixed

        def cast(var):
            if not is_float(var.dtype) or var.dtype == compute or not (
                    mixed or is_low_precision(var.dtype)):
                return var
            out = ops.cast(var, compute)
            if masks.get_mask(var) is not None:
                out._keras_mask = masks.get_mask(var)
            return out
        return _map(cast, inputs) if any(cast(v) is not v for v in _flatten(inputs)) \
            else inputs

    def _call_eager(self, inputs, training, mask=None):
        if mask is None and not isinstance(inputs, (list, tuple, dict)):
            mask = eager_mask.mask_of(inputs)     # an eager output's mask goes on, as in Keras
        arrays = [np.asarray(a) for a in _flatten(inputs)]
        if mask is not None:          # the mask is fed as one more boolean input
            mask = np.asarray(mask, bool)
        # traced for the arrays' whole shapes, batch included, as Keras runs an eager call
        # on concrete tensors (a ``call`` may read ``inputs.shape[0]``); one trace per shape
        key = (bool(training), None if mask is None else mask.shape) + tuple(
            (a.shape, a.dtype.kind) for a in arrays)
        cached = self._eager_functions.get(key)
        if cached is None:
            holders = [placeholder(a.shape, self.dtype if a.dtype.kind == "f" else a.dtype)
                       for a in arrays]
            mask_holder = None if mask is None else placeholder(mask.shape, "bool")
            structured = _same_sequence(inputs, holders)
            # filled by Layer._call_symbolic with, for each output, the Variable call
            # returned as it (``return self.total``) or None; a Model's trace leaves it empty
            self.__dict__["_eager_returned"] = returned = []
            try:
                with tracing.collect_state() as state, layer_io.not_a_node():
                    outputs = self._call_symbolic(structured, training, mask_holder)
            finally:
                self.__dict__.pop("_eager_returned", None)
            feeds = holders + ([] if mask is None else [mask_holder])
            flat = _flatten(outputs)
            output_masks = [masks.get_mask(v) for v in flat]
            computed = [m for m in output_masks if m is not None and m is not mask_holder]
            owners = self._losses_by_layer()     # each layer's add_loss terms, as values
            cached = self._eager_functions[key] = (
                Function(feeds, flat + computed + [t for _, terms in owners for t in terms],
                         state.updates, name=f"{self.name}_eager"),
                outputs, [None if m is None else "fed" if m is mask_holder else "computed"
                          for m in output_masks], [(layer, len(terms)) for layer, terms in owners],
                returned if any(v is not None for v in returned) else None)
        function, outputs, mask_sources, owners, returned = cached
        results = function(*arrays, *([] if mask is None else [mask]))
        results = iter(results if isinstance(results, (list, tuple)) else [results])
        values = [next(results) for _ in mask_sources]
        found = iter([None if source is None else mask if source == "fed" else next(results)
                      for source in mask_sources])
        for layer, count in owners:
            layer._own_losses()[:] = [next(results)[()] for _ in range(count)]
        if returned:        # a Variable returned by call comes back as itself, as in Keras
            values = [v if variable is None else variable for v, variable in zip(values, returned)]
        values = iter(values)
        return _map(lambda _: eager_mask.with_mask(next(values), next(found)), outputs)

    def compute_output_shape(self, input_shape: Shape) -> Any:
        """Output shape for ``input_shape``, found by tracing the layer on a placeholder."""
        with layer_io.not_a_node():
            out = self._call_symbolic(placeholder(tuple(input_shape), self.dtype), False)
        return _map(lambda v: v.shape, out)

    def get_config(self) -> dict[str, Any]:
        config = {"name": self.name, "trainable": self.trainable,
                  "dtype": self._dtype_policy.name}
        if self.activity_regularizer is not None:
            config["activity_regularizer"] = regularizers.serialize(self.activity_regularizer)
        return config

    @classmethod
    def from_config(cls: type[_L], config: dict[str, Any]) -> _L:
        return cls(**config)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}, built={self.built}>"     # Keras's


def _graph_value(value):
    """A Variable returned from ``call`` (Keras's ``return self.total``) is its value at the
    end of the step: the update assigned in the call, if any."""
    return tracing.current_value(value) if isinstance(value, Variable) else value


def _call_inputs(layer, args):
    """The inputs of ``layer(*args)``: one argument as it is; several as separate positional
    inputs for a ``call(self, a, b)``, or ``(inputs, training)`` given positionally."""
    if not args:
        raise TypeError(f"Layer {layer.name!r} was called without inputs")
    if len(args) == 1:
        return args[0]
    if len(args) == 2 and (args[1] is None or isinstance(args[1], bool)):
        return args[0]
    return call_signature.PositionalInputs(args)


def _same_sequence(template, items):
    """The flat ``items`` in ``template``'s nesting and sequence types (keeps positional-input
    marking, a recurrent layer's ``initial_state`` and a cell's nested inputs)."""
    items = iter(items)
    return _map(lambda _: next(items), template)


def _flatten(structure):
    """The leaves of nested lists, tuples and dicts; a dict's in sorted key order (as Keras's
    ``tree.flatten``), so a model built with dict inputs or outputs has a fixed order."""
    if isinstance(structure, (list, tuple)):
        return [v for item in structure for v in _flatten(item)]
    if isinstance(structure, dict):
        return [v for key in sorted(structure) for v in _flatten(structure[key])]
    return [structure]


def _map(fn, structure):
    if isinstance(structure, (list, tuple)):
        return type(structure)(_map(fn, item) for item in structure)
    if isinstance(structure, dict):       # visited in _flatten's order
        return {key: _map(fn, structure[key]) for key in sorted(structure)}
    return fn(structure)


def _is_layer(value):
    return isinstance(value, Layer)


def _unique(variables):
    seen, out = set(), []
    for v in variables:
        if id(v) not in seen:
            seen.add(id(v))
            out.append(v)
    return out
