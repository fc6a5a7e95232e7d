"""``Embedding``: integer ids to dense vectors, a row lookup whose gradient adds up the rows
of repeated ids (``scatter_add``). An id outside ``[0, input_dim)`` is an error naming the layer
on every backend (numpy indexing would read ``-1`` as the last row and train on it)."""
from __future__ import annotations

from typing import Any

from hiapi.hints import ConstraintLike, InitializerLike, RegularizerLike
from hiapi import constraints, initializers, regularizers
from hiapi.graph import ops
from hiapi.layers.layer import Layer


class Embedding(Layer):
    def __init__(self, input_dim: int, output_dim: int,
                 embeddings_initializer: InitializerLike = "uniform",
                 embeddings_regularizer: RegularizerLike = None,
                 embeddings_constraint: ConstraintLike = None, mask_zero: bool = False,
                 input_length: int | None = None, weights: Any = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if input_dim <= 0 or output_dim <= 0:
            raise ValueError(f"Embedding {self.name!r}: input_dim and output_dim must be "
                             f"positive, got {input_dim} and {output_dim}")
        self.input_dim, self.output_dim = int(input_dim), int(output_dim)
        self.embeddings_initializer = "random_uniform" if embeddings_initializer == "uniform" \
            else embeddings_initializer
        self.embeddings_regularizer = regularizers.get(embeddings_regularizer)
        self.embeddings_constraint = constraints.get(embeddings_constraint)
        # mask_zero: id 0 is padding; the mask (ids != 0) goes to the layers downstream
        self.mask_zero = bool(mask_zero)
        self.supports_masking = self.mask_zero
        if weights is not None:      # Keras: the initial table, set as soon as it exists
            self.build(None)
            self.set_weights(weights if isinstance(weights, list) and len(weights) == 1
                             else [weights])

    def build(self, input_shape):
        self.embeddings = self.add_weight((self.input_dim, self.output_dim),
                                          self.embeddings_initializer, "embeddings",
                                          regularizer=self.embeddings_regularizer,
                                          constraint=self.embeddings_constraint)
        self.built = True

    def call(self, inputs, training=None):
        ids = inputs if inputs.dtype.kind in "iu" else ops.cast(inputs, "int64")
        return ops.gather(self.embeddings.read, ids,
                          where=f"Embedding {self.name!r} (input_dim={self.input_dim})")

    def compute_mask(self, inputs, previous_mask=None):
        return ops.not_equal(inputs, 0) if self.mask_zero else None

    def get_config(self):
        return {**super().get_config(), "input_dim": self.input_dim,
                "output_dim": self.output_dim, "mask_zero": self.mask_zero,
                "embeddings_initializer": initializers.serialize(self.embeddings_initializer),
                "embeddings_regularizer": regularizers.serialize(self.embeddings_regularizer),
                "embeddings_constraint": constraints.serialize(self.embeddings_constraint)}
