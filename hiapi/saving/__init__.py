"""Saving and loading models and weights (one file each, written atomically), and Keras's
serialization API: configs of layers, models and other objects, and the registry of custom
objects they name."""
from hiapi.serialization import saving_functions
from hiapi.serialization.object_registration import (CustomObjectScope, custom_object_scope,
                                                     get_custom_objects, get_registered_name,
                                                     get_registered_object,
                                                     register_keras_serializable)
from hiapi.saving.architecture import deserialize_layer, serialize_layer
from hiapi.saving.serialization_lib import deserialize_keras_object, serialize_keras_object
from hiapi.saving.keras_archive.compile_config import compile_from_keras, compile_to_keras
from hiapi.saving.model_file import (load_model, load_weights, restore_training_state,
                                     save_model, save_weights)

# what the floors below call (Model.save, load_model, checkpoints, wrappers' configs)
saving_functions.provide(
    save_model=save_model, save_weights=save_weights, load_weights=load_weights,
    load_model=load_model, restore_training_state=restore_training_state,
    serialize_layer=serialize_layer, deserialize_layer=deserialize_layer,
    serialize_keras_object=serialize_keras_object,
    deserialize_keras_object=deserialize_keras_object,
    compile_config=compile_to_keras, compile_from_config=compile_from_keras)
