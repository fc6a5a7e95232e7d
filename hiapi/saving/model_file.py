"""``model.save`` / ``load_model`` and ``save_weights`` / ``load_weights``.

A model file holds everything needed to continue training exactly where it stopped: the
architecture, the weights, the compile configuration, the optimizer's configuration and
state (iteration count and every slot), and the random state of training: the seed of the
batch order (``hiapi.random.model_shuffle_seed``) and each Dropout layer's seed (in its
config) and step counter (a state variable). A weights file holds the weights alone, listed per
layer so a mismatch can be named.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from hiapi import optimizers as optimizers_module
from hiapi.saving import keras_archive
from hiapi.saving.keras_archive import keras_file, legacy_h5
from hiapi.saving.archive import read_archive, write_archive
from hiapi.saving.keras_format import warn_if_keras_name
from hiapi.serialization.objects import deserialize_object, serialize_object
from hiapi.saving.architecture import (deserialize_layer, serialize_layer, shapes_text,
                                       weight_manifest)

if TYPE_CHECKING:
    from hiapi.models import Model

MODEL_FORMAT, WEIGHTS_FORMAT, VERSION = "hiapi.model", "hiapi.weights", 1


def save_model(model: Model, filepath: str | os.PathLike[str], include_optimizer: bool = True,
               extra: dict[str, Any] | None = None) -> None:
    """Write ``model`` to one file, atomically. ``extra`` (JSON-able) is stored alongside.
    A ``.keras`` name writes Keras 3's format (``hiapi.saving.keras_archive``)."""
    if str(filepath).lower().endswith(keras_archive.KERAS_ARCHIVE_SUFFIX) and extra is None:
        return keras_file.save_keras_model(model, filepath, include_optimizer)
    warn_if_keras_name(filepath, "save")
    if not model.built:
        raise ValueError(f"Model {model.name!r} has not been built yet: there are no weights "
                         f"to save")
    manifest = {"format": MODEL_FORMAT, "version": VERSION, "model": serialize_layer(model),
                "weights": weight_manifest(model), "compile": _compile_config(model),
                "optimizer": None, "extra": extra,
                "shuffle_seed": getattr(model, "_shuffle_seed", None)}
    arrays = {f"weights/{i}": v.numpy() for i, v in enumerate(model.weights)}
    arrays.update({f"state/{i}": v.numpy() for i, v in enumerate(model.state_variables)})
    optimizer = getattr(model, "optimizer", None)
    if include_optimizer and optimizer is not None:
        manifest["optimizer"] = {**optimizers_module.serialize(optimizer),
                                 "built": optimizer.built}
        sharding = getattr(optimizer, "sharded_by", None)     # ZeRO: gathered on rank 0
        state = sharding.consolidated_state(optimizer, f"save({filepath!r})") if sharding \
            else [v.numpy() for v in optimizer.variables]
        arrays.update({f"optimizer/{i}": value for i, value in enumerate(state)})
    write_archive(filepath, manifest, arrays)


def load_model(filepath: str | os.PathLike[str], custom_objects: Mapping[str, Any] | None = None,
               compile: bool = True) -> Model:
    """A model from ``model.save``: weights, and (with ``compile``) its compile configuration
    and optimizer state, ready to ``fit`` on from where it stopped. Keras 3 ``.keras`` files
    are read too."""
    if keras_file.is_keras_archive(filepath):
        return keras_file.load_keras_model(filepath, custom_objects, compile)
    if keras_file.is_hdf5(filepath):
        raise ValueError(f"load_model: {filepath} is an HDF5 file (Keras 2's whole-model "
                         f"'.h5' format, or weights): hiapi reads its weights but not Keras "
                         f"2's architecture; build the model in code and call "
                         f"model.load_weights({str(filepath)!r})")
    manifest, arrays = read_archive(filepath, MODEL_FORMAT)
    model = deserialize_layer(manifest["model"], custom_objects)
    _assign_model(model, arrays, filepath)
    if compile and manifest["compile"] is not None:
        config = manifest["compile"]
        optimizer: Any = optimizers_module.deserialize(manifest["optimizer"]) \
            if manifest["optimizer"] else "sgd"     # an Optimizer wherever one was saved
        model.compile(optimizer=optimizer,
                      loss=deserialize_object(config["loss"], custom_objects, "loss"),
                      loss_weights=config["loss_weights"],
                      metrics=deserialize_object(config["metrics"], custom_objects, "metric"),
                      weighted_metrics=deserialize_object(config.get("weighted_metrics"),
                                                          custom_objects, "metric"))
        if manifest["optimizer"]:
            if manifest["optimizer"]["built"]:
                optimizer.build(model.trainable_weights)
            state = [arrays[f"optimizer/{i}"] for i in range(len(optimizer.variables))]
            _assign(optimizer.variables, state, filepath)
    model._saved_extra = manifest.get("extra")
    model._shuffle_seed = manifest.get("shuffle_seed")
    return model


def _assign_model(model, arrays, filepath):
    """Weights, then non-weight state (random-number counters) from a model file."""
    _assign(model.weights, [arrays[f"weights/{i}"] for i in range(len(model.weights))],
            filepath)
    _assign(model.state_variables, [arrays[f"state/{i}"] for i in
                                    range(len(model.state_variables)) if f"state/{i}" in arrays],
            filepath)


def _assign(variables, values, filepath):
    for variable, value in zip(variables, values):
        if tuple(value.shape) != variable.shape:
            raise ValueError(f"{filepath}: {variable.name!r} has shape {variable.shape}, the "
                             f"file holds shape {tuple(value.shape)}")
        variable.assign(value)


def _compile_config(model):
    """Losses and metrics as compiled (names, functions, objects; per output), via
    ``hiapi.serialization.objects``."""
    if not getattr(model, "compiled", False):
        return None
    return {"loss": serialize_object(model._loss_ids), "loss_weights": model._loss_weight_ids,
            "metrics": serialize_object(model._metric_ids),
            "weighted_metrics": serialize_object(getattr(model, "_weighted_metric_ids", None))}


def save_weights(model: Model, filepath: str | os.PathLike[str]) -> None:
    """Write the weights alone (with each layer's name and shapes), atomically; to a
    ``.weights.h5`` name in Keras 3's HDF5 layout."""
    if str(filepath).lower().endswith(keras_archive.KERAS_WEIGHTS_SUFFIX):
        return keras_file.save_keras_weights(model, filepath)
    warn_if_keras_name(filepath, "save_weights")
    layers = weight_manifest(model)
    arrays = {f"weights/{i}": v.numpy() for i, v in enumerate(model.weights)}
    write_archive(filepath, {"format": WEIGHTS_FORMAT, "version": VERSION, "layers": layers},
                  arrays)


def load_weights(model: Model, filepath: str | os.PathLike[str], skip_mismatch: bool = False,
                 by_name: bool | None = None) -> None:
    """Load weights saved by ``save_weights`` (or ``save``) into a model of the same shape;
    a mismatch names the first layer that differs and both shapes. Keras 3 ``.weights.h5``
    and ``.keras`` files are read too, and Keras 2 ``.h5`` files (by order, or
    ``by_name=True``; ``skip_mismatch=True`` leaves a layer that does not fit as it is)."""
    if keras_file.is_hdf5(filepath) or keras_file.is_keras_archive(filepath):
        return keras_file.load_keras_weights(model, filepath, by_name, skip_mismatch)
    legacy_h5.refuse_options(filepath, "hiapi's own file, matched layer by layer", by_name,
                             skip_mismatch)
    try:
        manifest, arrays = read_archive(filepath, WEIGHTS_FORMAT)
        saved = manifest["layers"]
    except ValueError as error:
        if "holds 'hiapi.model'" not in str(error):
            raise
        manifest, arrays = read_archive(filepath, MODEL_FORMAT)
        saved = manifest["weights"]
    mine = weight_manifest(model)
    if len(saved) != len(mine):
        raise ValueError(f"load_weights: {filepath} has {len(saved)} layers, model "
                         f"{model.name!r} has {len(mine)}")
    for index, (have, want) in enumerate(zip(mine, saved)):
        if have["shapes"] != want["shapes"]:
            raise ValueError(f"load_weights: layer {index} {have['layer']!r} has weights of "
                             f"shapes {shapes_text(have['shapes'])}, but {filepath} holds "
                             f"{shapes_text(want['shapes'])} for layer {want['layer']!r}")
    values = [arrays[f"weights/{i}"] for i in range(len(model.weights))]
    for variable, value in zip(model.weights, values):
        variable.assign(np.asarray(value))


def restore_training_state(model, filepath):
    """Load weights and optimizer state from a model file into an existing, compiled model
    (whose train step exists, so its optimizer is built); returns the file's ``extra``."""
    manifest, arrays = read_archive(filepath, MODEL_FORMAT)
    _assign_model(model, arrays, filepath)
    if manifest.get("shuffle_seed") is not None:
        model._shuffle_seed = manifest["shuffle_seed"]
    optimizer = model.optimizer
    if manifest["optimizer"]:
        if manifest["optimizer"]["built"] and not optimizer.built:
            optimizer.build(model.trainable_weights)
        count = sum(1 for name in arrays if name.startswith("optimizer/"))
        values = [arrays[f"optimizer/{i}"] for i in range(count)]
        if getattr(optimizer, "sharded_by", None) is not None:    # each rank its own slots
            optimizer.sharded_by.restore(optimizer, values, filepath)
            return manifest.get("extra") or {}
        if count != len(optimizer.variables):
            raise ValueError(f"{filepath}: the optimizer state has {count} variables, the "
                             f"model's {type(optimizer).__name__} has "
                             f"{len(optimizer.variables)}")
        _assign(optimizer.variables, values, filepath)
    return manifest.get("extra") or {}
