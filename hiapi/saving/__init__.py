"""Saving and loading models and weights (one file each, written atomically), and Keras's
serialization API: configs of layers, models and other objects, and the registry of custom
objects they name."""
from hiapi.saving.object_registration import (CustomObjectScope, custom_object_scope,
                                              get_custom_objects, get_registered_name,
                                              get_registered_object,
                                              register_keras_serializable)
from hiapi.saving.serialization_lib import deserialize_keras_object, serialize_keras_object
from hiapi.saving.model_file import load_model, load_weights, save_model, save_weights
