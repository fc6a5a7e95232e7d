"""``MultiHeadAttention`` (Vaswani et al. 2017, https://arxiv.org/abs/1706.03762), Keras 3's
layer: same arguments, defaults and weights, so Keras weights load unchanged.

Weights, in Keras's order and EinsumDense layout: ``query/kernel`` (query_dim, heads, key_dim),
``query/bias`` (heads, key_dim), the same for ``key`` and for ``value`` (value_dim), then
``attention_output/kernel`` (heads, value_dim, output_dim) and ``attention_output/bias``
(output_dim,). Each projection is one GEMM on the kernel viewed as a matrix::

    mha = layers.MultiHeadAttention(num_heads=4, key_dim=16)
    out, scores = mha(query, value, return_attention_scores=True, use_causal_mask=True)

``softmax(q k^T / sqrt(key_dim))`` with the scores at masked positions replaced by -1e9 (as
Keras adds -1e9: a fully masked row becomes uniform, never NaN); the mask is the ``attention_mask``
(batch, T, S), the causal mask, and the masks the query/value/key carry
(``Embedding(mask_zero=True)``), all combined. The output carries the query's mask.

A functional model records a call as the list ``[query, value, key]`` (+ ``attention_mask``)
and the layer keeps the call's ``return_attention_scores``/``use_causal_mask`` (saved in its
config under ``_call_options`` when not the defaults), so replaying, saving and loading the
model repeat the call exactly. One layer called with different such options in one model is
refused with an error.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from hiapi.hints import ConstraintLike, InitializerLike, RegularizerLike, ShapeLike
from hiapi import constraints, initializers, regularizers
from hiapi.graph import ops
from hiapi.graph.var import Var
from hiapi.layers.dropout import Dropout
from hiapi.layers.layer import Layer

DEFAULT_OPTIONS = {"return_attention_scores": False, "use_causal_mask": False}


class MultiHeadAttention(Layer):
    def __init__(self, num_heads: int, key_dim: int, value_dim: int | None = None,
                 dropout: float = 0.0, use_bias: bool = True,
                 output_shape: int | ShapeLike | None = None,
                 attention_axes: int | Sequence[int] | None = None,
                 flash_attention: bool | None = None,
                 kernel_initializer: InitializerLike = "glorot_uniform",
                 bias_initializer: InitializerLike = "zeros",
                 kernel_regularizer: RegularizerLike = None,
                 bias_regularizer: RegularizerLike = None, kernel_constraint: ConstraintLike = None,
                 bias_constraint: ConstraintLike = None, seed: int | None = None,
                 _call_options: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        who = f"MultiHeadAttention {self.name!r}"
        for arg, value in (("num_heads", num_heads), ("key_dim", key_dim),
                           ("value_dim", key_dim if value_dim is None else value_dim)):
            if not isinstance(value, (int, np.integer)) or value <= 0:
                raise ValueError(f"{who}: {arg} must be a positive integer, got {value!r}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"{who}: dropout must be in [0, 1), got {dropout!r}")
        if flash_attention:
            raise ValueError(f"{who}: flash_attention=True is not available in hiapi; leave it "
                             f"None or False")
        self.num_heads, self.key_dim = int(num_heads), int(key_dim)
        self.value_dim = self.key_dim if value_dim is None else int(value_dim)
        self.dropout, self.use_bias, self.seed = float(dropout), use_bias, seed
        self.output_shape_arg = output_shape
        self.attention_axes = (attention_axes,) if isinstance(attention_axes, int) else \
            (None if attention_axes is None else tuple(attention_axes))
        self.flash_attention = flash_attention
        self.kernel_initializer, self.bias_initializer = kernel_initializer, bias_initializer
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self.supports_masking = True
        self._call_options = dict(_call_options) if _call_options else None
        self._eager_by_options: dict[Any, Any] = {}
        if self.dropout:
            self._dropout_layer = Dropout(self.dropout, seed=seed, name=f"{self.name}_dropout")

    # ---- calling: Keras's signature on top of Layer's single structured input ----------------
    def __call__(self, query, value=None, key=None, attention_mask=None,
                 return_attention_scores=False, training=None, use_causal_mask=False,
                 query_mask=None, value_mask=None, key_mask=None, mask=None):
        if value is None:
            return self._replay(query, training)
        if any(m is not None for m in (query_mask, value_mask, key_mask, mask)):
            raise ValueError(f"MultiHeadAttention {self.name!r}: pass masks as attention_mask, "
                             f"or let query/value carry them (Embedding(mask_zero=True))")
        options = {"return_attention_scores": bool(return_attention_scores),
                   "use_causal_mask": bool(use_causal_mask)}
        packed = [query, value, value if key is None else key] + \
            ([] if attention_mask is None else [attention_mask])
        symbolic = isinstance(query, Var)
        if symbolic and self._call_options not in (None, options):
            raise ValueError(f"MultiHeadAttention {self.name!r} was called with {options}, "
                             f"and before with {self._call_options}; a model replays one call "
                             f"pattern per layer, so use a second layer")
        return self._call_with(packed, options, training, record=symbolic)

    def _replay(self, packed, training):
        if not isinstance(packed, (list, tuple)) or len(packed) not in (3, 4):
            raise ValueError(f"MultiHeadAttention {self.name!r}: call it as mha(query, value, "
                             f"key=None, attention_mask=None), got {packed!r}")
        return self._call_with(list(packed), self._call_options or DEFAULT_OPTIONS, training,
                               record=False)

    def _call_with(self, packed, options, training, record):
        # eager calls are cached per input shapes; keep one cache per option set
        key = tuple(sorted(options.items()))
        self._eager_functions = self._eager_by_options.setdefault(key, {})
        self._options = options
        if record:
            self._call_options = options
        return Layer.__call__(self, packed, training=training)

    # ---- weights -------------------------------------------------------------------------------
    def build(self, input_shape):
        query_shape, value_shape, key_shape = input_shape[:3]
        who = f"MultiHeadAttention {self.name!r}"
        for name, shape in (("query", query_shape), ("value", value_shape), ("key", key_shape)):
            if len(shape) < 3 or shape[-1] is None:
                raise ValueError(f"{who}: {name} must have shape (batch, ..., features) with "
                                 f"known features, got {shape}")
        if len(value_shape) != len(query_shape) or len(key_shape) != len(value_shape):
            raise ValueError(f"{who}: query, value and key must have the same rank, got "
                             f"{query_shape}, {value_shape}, {key_shape}")
        heads = self.num_heads
        self._out_shape = self._output_dims(query_shape[-1])
        self.query_kernel, self.query_bias = self._dense(
            "query", (query_shape[-1], heads, self.key_dim), (heads, self.key_dim))
        self.key_kernel, self.key_bias = self._dense(
            "key", (key_shape[-1], heads, self.key_dim), (heads, self.key_dim))
        self.value_kernel, self.value_bias = self._dense(
            "value", (value_shape[-1], heads, self.value_dim), (heads, self.value_dim))
        self.output_kernel, self.output_bias = self._dense(
            "attention_output", (heads, self.value_dim) + self._out_shape, self._out_shape)
        self._axes = self._attention_axes(len(query_shape))
        self.built = True

    def _dense(self, name, kernel_shape, bias_shape):
        kernel = self.add_weight(kernel_shape, self.kernel_initializer, f"{name}/kernel",
                                 regularizer=self.kernel_regularizer,
                                 constraint=self.kernel_constraint)
        bias = self.add_weight(bias_shape, self.bias_initializer, f"{name}/bias",
                               regularizer=self.bias_regularizer,
                               constraint=self.bias_constraint) if self.use_bias else None
        return kernel, bias

    def _attention_axes(self, rank):
        inner = tuple(range(1, rank - 1))
        if self.attention_axes is None:
            return inner
        axes = tuple(sorted(a + rank if a < 0 else a for a in self.attention_axes))
        if not axes or any(a not in inner for a in axes) or len(set(axes)) != len(axes):
            raise ValueError(f"MultiHeadAttention {self.name!r}: attention_axes must be "
                             f"distinct axes among {inner} of inputs of rank {rank}, got "
                             f"{self.attention_axes}")
        return axes

    # ---- the computation -----------------------------------------------------------------------
    def call(self, inputs, training=None):
        query, value, key = inputs[:3]
        attention_mask = inputs[3] if len(inputs) > 3 else None
        inner = tuple(range(1, query.ndim - 1))
        batchlike = tuple(a for a in inner if a not in self._axes)
        for name, x in (("query", query), ("value", value), ("key", key)):
            if None in x.shape[1:]:
                raise ValueError(f"MultiHeadAttention {self.name!r}: all axes of {name} but "
                                 f"the batch must be known, got shape {x.shape}")
        q = self._heads(self._project(query, self.query_kernel, self.query_bias), batchlike)
        k = self._heads(self._project(key, self.key_kernel, self.key_bias), batchlike)
        v = self._heads(self._project(value, self.value_kernel, self.value_bias), batchlike)
        scores = ops.matmul(q * (1.0 / math.sqrt(self.key_dim)), ops.swapaxes(k, -1, -2))
        keep = self._keep(inputs, attention_mask, batchlike)
        if keep is not None:       # Keras's masked softmax: a large negative number
            scores = ops.where(ops.greater(keep, 0.5), scores, -1e9)
        probabilities = ops.softmax(scores, -1)
        dropped = self._dropout_layer(probabilities, training=training) \
            if self.dropout else probabilities
        attended = self._unheads(ops.matmul(dropped, v), query, batchlike)
        output = self._output(attended)
        if not self._options["return_attention_scores"]:
            return output
        shape = (-1,) + tuple(query.shape[a] for a in batchlike) + (self.num_heads,) + \
            tuple(query.shape[a] for a in self._axes) + tuple(value.shape[a] for a in self._axes)
        return [output, ops.reshape(probabilities, shape)]

    def _project(self, x, kernel, bias):
        """(batch, *inner, features) @ (features, heads, dim) -> (batch, *inner, heads, dim)."""
        features, heads, dim = kernel.shape
        y = ops.matmul(x, ops.reshape(kernel.read, (features, heads * dim)))
        if bias is not None:
            y = y + ops.reshape(bias.read, (heads * dim,))
        return ops.reshape(y, (-1,) + tuple(x.shape[1:-1]) + (heads, dim))

    def _heads(self, y, batchlike):
        """(batch, *inner, heads, dim) -> (batch, *batchlike, heads, steps, dim), the attention
        axes folded into one ``steps`` axis."""
        rank = y.ndim
        order = (0,) + batchlike + (rank - 2,) + self._axes + (rank - 1,)
        y = ops.transpose(y, order)
        steps = math.prod(y.shape[a] for a in range(2 + len(batchlike), rank - 1))
        return ops.reshape(y, (-1,) + y.shape[1:2 + len(batchlike)] + (steps, y.shape[-1]))

    def _unheads(self, y, query, batchlike):
        """Inverse of ``_heads`` for the attended values: (batch, *inner, heads, value_dim)."""
        unfolded = (-1,) + tuple(query.shape[a] for a in batchlike) + (self.num_heads,) + \
            tuple(query.shape[a] for a in self._axes) + (self.value_dim,)
        y = ops.reshape(y, unfolded)
        rank = query.ndim + 1
        order = (0,) + batchlike + (rank - 2,) + self._axes + (rank - 1,)
        return ops.transpose(y, tuple(np.argsort(order)))

    def _output(self, attended):
        """(batch, *inner, heads, value_dim) @ (heads, value_dim, *out) -> (batch, *inner, *out)."""
        inner = tuple(attended.shape[1:-2])
        flat = ops.reshape(attended, (-1,) + inner + (self.num_heads * self.value_dim,))
        kernel = ops.reshape(self.output_kernel.read, (self.num_heads * self.value_dim,
                                                       math.prod(self._out_shape)))
        y = ops.matmul(flat, kernel)
        if self.output_bias is not None:
            y = y + ops.reshape(self.output_bias.read, (math.prod(self._out_shape),))
        return ops.reshape(y, (-1,) + inner + self._out_shape)

    def _keep(self, inputs, attention_mask, batchlike):
        """1.0 where a query position may attend to a key position, broadcastable to the
        scores (batch, *batchlike, heads, T, S); None when nothing is masked."""
        query, value, key = inputs[:3]
        masks = []
        if attention_mask is not None:
            mask = attention_mask if attention_mask.dtype.kind == "b" else \
                ops.not_equal(attention_mask, 0)
            mask = ops.cast(mask, query.dtype)
            if len(self._axes) == 1:
                mask = ops.expand_dims(mask, mask.ndim - 2)
            else:
                steps = lambda x: math.prod(x.shape[a] for a in self._axes)
                mask = ops.reshape(mask, (-1,) + tuple(query.shape[a] for a in batchlike) +
                                   (1, steps(query), steps(value)))
            masks.append(mask)
        carried = [(query, -1), (value, -2)] + ([] if key is value else [(key, -2)])
        for x, axis in carried:
            mask = getattr(x, "_keras_mask", None)
            if mask is None:
                continue
            if query.ndim != 3:
                raise ValueError(f"MultiHeadAttention {self.name!r}: masks carried by the "
                                 f"inputs are supported for inputs of rank 3, got {x.shape}")
            masks.append(ops.expand_dims(ops.cast(mask, query.dtype), (1, axis % 4)))
        if self._options["use_causal_mask"]:
            if len(self._axes) != 1:
                raise ValueError(f"MultiHeadAttention {self.name!r}: use_causal_mask needs one "
                                 f"attention axis, got attention_axes {self._axes}")
            axis = self._axes[0]
            causal = np.tril(np.ones((query.shape[axis], value.shape[axis]), bool))
            masks.append(ops.constant(causal.astype(query.dtype)))
        keep = None
        for mask in masks:
            keep = mask if keep is None else keep * mask
        return keep

    def compute_output_shape(self, query_shape, value_shape=None, key_shape=None):
        """Keras's signature: the output has the query's shape with ``output_shape`` (by
        default the query's features) as its last axes."""
        return tuple(query_shape[:-1]) + self._output_dims(query_shape[-1])

    def _output_dims(self, query_features):
        """The output's last axes: ``output_shape``, by default the query's features."""
        out = self.output_shape_arg
        if out is None:
            return (query_features,)
        return (int(out),) if isinstance(out, (int, np.integer)) else tuple(int(d) for d in out)

    def compute_mask(self, inputs, previous_mask=None):
        query_mask = previous_mask[0] if previous_mask else None
        return [query_mask, None] if self._options["return_attention_scores"] else query_mask

    def get_config(self):
        config = {**super().get_config(), "num_heads": self.num_heads, "key_dim": self.key_dim,
                  "value_dim": self.value_dim, "dropout": self.dropout,
                  "use_bias": self.use_bias, "output_shape": self.output_shape_arg,
                  "attention_axes": self.attention_axes,
                  "flash_attention": self.flash_attention,
                  "kernel_initializer": initializers.serialize(self.kernel_initializer),
                  "bias_initializer": initializers.serialize(self.bias_initializer),
                  "kernel_regularizer": regularizers.serialize(self.kernel_regularizer),
                  "bias_regularizer": regularizers.serialize(self.bias_regularizer),
                  "kernel_constraint": constraints.serialize(self.kernel_constraint),
                  "bias_constraint": constraints.serialize(self.bias_constraint),
                  "seed": self.seed}
        if self._call_options not in (None, DEFAULT_OPTIONS):
            config["_call_options"] = dict(self._call_options)
        return config
