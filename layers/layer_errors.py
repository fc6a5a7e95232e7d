"""Errors from inside a layer name the layer, as Keras 3 does ("Exception encountered when
calling layer 'conv1d'"): an op only knows its own name ("conv2d: input of spatial size (1, 1)
is smaller than the kernel's extent"), which says little in a model of twenty layers.

ValueError and TypeError raised while a layer builds or runs get ``Layer 'name' (Class): ``
in front of their message, keeping their type and traceback; a message that already names the
layer is left alone, and only the innermost layer of a nested call adds its name.
"""
import contextlib


@contextlib.contextmanager
def naming_layer(layer):
    try:
        yield
    except (ValueError, TypeError) as error:
        if not hasattr(error, "hiapi_layer"):
            if layer.name not in str(error):
                error.args = (f"Layer {layer.name!r} ({type(layer).__name__}): {error}",)
            error.hiapi_layer = layer.name
        raise
