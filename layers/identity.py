"""``Identity``: returns its input unchanged, as ``keras.layers.Identity``."""
from hiapi.layers.layer import Layer


class Identity(Layer):
    """Returns its input unchanged: a named placeholder in a model, e.g. where an optional
    block (a projection, a normalization) is switched off but the layer graph keeps its
    shape."""
    supports_masking = True

    def call(self, inputs, training=None):
        return inputs
