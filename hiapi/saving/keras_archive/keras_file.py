"""``.keras`` archives and ``.weights.h5`` files, read and written as Keras 3 does.

A ``.keras`` file is a zip of ``metadata.json`` (Keras version, date), ``config.json`` (the
model as ``keras.saving.serialize_keras_object`` writes it, with ``build_config`` and
``compile_config``) and ``model.weights.h5`` (``h5_weights``); ``save_weights`` to a
``.weights.h5`` name writes that HDF5 file alone. Only what Keras can express is written:
anything else (a layer Keras lacks, an argument it has no name for, a raw op in a functional
model) is refused with its name, pointing to ``.hiapi``, which keeps everything.
"""
import datetime
import io
import json
import zipfile

from hiapi import optimizers
from hiapi.runtime.atomic import atomic_write
from hiapi.models import model_config
from hiapi.saving.keras_archive import (assets, attribute_walk, compile_config, h5_weights,
                                         legacy_h5)
from hiapi.saving.keras_archive.keras_arguments import KERAS_VERSION
from hiapi.serialization.object_registration import custom_object_scope
from hiapi.saving.serialization_lib import (deserialize_keras_object, find_class,
                                           serialize_keras_object, serialize_layer)

CONFIG, METADATA, WEIGHTS = "config.json", "metadata.json", "model.weights.h5"
HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"


def is_keras_archive(filepath):
    """True for a zip holding Keras's ``config.json`` (and not a hiapi manifest)."""
    try:
        with zipfile.ZipFile(filepath) as archive:
            names = set(archive.namelist())
    except (OSError, zipfile.BadZipFile):
        return False
    return CONFIG in names and "hiapi.json" not in names


def is_hdf5(filepath):
    try:
        with open(filepath, "rb") as handle:
            return handle.read(8) == HDF5_SIGNATURE
    except OSError:
        return False


def _weights_bytes(model, optimizer=None):
    h5py = h5_weights.require_h5py()
    buffer = io.BytesIO()
    with h5py.File(buffer, "w") as file:
        attribute_walk.write(file, model)
        if optimizer is not None:
            values = compile_config.optimizer_values(optimizer, model)
            scaler = isinstance(optimizer, optimizers.LossScaleOptimizer)
            h5_weights.write_optimizer(file, optimizer, values, values[
                compile_config.LOSS_SCALE_OWN:] if scaler else None)   # the inner's, again
    return buffer.getvalue()


def _optimizer(model, include_optimizer):
    optimizer = getattr(model, "optimizer", None)
    if not include_optimizer or optimizer is None:
        return None
    if getattr(optimizer, "sharded_by", None) is not None:
        raise NotImplementedError(
            f"Model {model.name!r}: saving the optimizer state of a model trained with "
            f"Strategy(shard_optimizer_state=True) is not supported (each rank holds only its "
            f"shard of it); use model.save(..., include_optimizer=False)")
    return optimizer


def _refuse_compressor_state(model):
    """A Strategy's gradient compressor with state (error feedback, DGC's velocity) has no
    place in a Keras file; dropping it silently would change training after a reload."""
    compressor = getattr(getattr(model, "distribution", None), "compressor", None)
    slots = getattr(compressor, "state_slots", ())
    if slots:
        raise ValueError(f"cannot write model {model.name!r} to a Keras .keras file: it trains "
                         f"with the {type(compressor).__name__} gradient compressor, whose "
                         f"state ({', '.join(slots)}) a Keras file has no place for; save "
                         f"it to a '.hiapi' file instead")


def save_keras_model(model, filepath, include_optimizer=True):
    """Write ``model`` as a Keras 3 ``.keras`` archive, atomically."""
    if not model.built:
        raise ValueError(f"Model {model.name!r} has not been built yet: there are no weights "
                         f"to save")
    _refuse_compressor_state(model)
    if not (model_config.is_graph_model(model) or attribute_walk.walks(model)):
        raise ValueError(f"cannot write model {model.name!r} ({type(model).__name__}) to a "
                         f"Keras .keras file: only Sequential, functional and subclassed "
                         f"models can be; save it to a '.hiapi' file instead")
    config = serialize_layer(model, strict=True)
    optimizer = _optimizer(model, include_optimizer)
    compile_config = model.get_compile_config() if optimizer is not None else None
    if compile_config is not None:
        config["compile_config"] = serialize_keras_object(compile_config, True)
    weights = _weights_bytes(model, optimizer)
    asset_files = assets.collect(model)
    metadata = {"keras_version": KERAS_VERSION,
                "date_saved": datetime.datetime.now().strftime("%Y-%m-%d@%H:%M:%S")}
    text = json.dumps(config)           # before the file is opened: what fails leaves none

    def write(handle):
        with zipfile.ZipFile(handle, "w", compression=zipfile.ZIP_STORED) as archive:
            archive.writestr(METADATA, json.dumps(metadata))
            archive.writestr(CONFIG, text)
            archive.writestr(WEIGHTS, weights)
            for name, data in asset_files.items():
                archive.writestr(name, data)
    atomic_write(filepath, write)


def load_keras_model(filepath, custom_objects=None, compile=True):
    """A hiapi model from a ``.keras`` archive written by Keras 3 (or by hiapi)."""
    h5py = h5_weights.require_h5py()
    try:
        with zipfile.ZipFile(filepath) as archive:
            bad = archive.testzip()
            if bad is not None:
                raise ValueError(f"{filepath}: member {bad!r} is corrupted (CRC mismatch)")
            config = json.loads(archive.read(CONFIG))
            weights = archive.read(WEIGHTS)
            asset_files = assets.members(archive)
    except (zipfile.BadZipFile, KeyError, EOFError, json.JSONDecodeError) as error:
        raise ValueError(f"{filepath} is not a complete Keras .keras file: {error}") from None
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"{filepath} is not a complete Keras .keras file: its {CONFIG} "
                         f"describes no model")
    if config["class_name"] not in ("Sequential", "Functional", "Model") and \
            not _known(config, custom_objects):
        raise ValueError(f"{filepath}: the model is a {config['class_name']!r} (a subclassed "
                         f"Keras model) that is not registered here: define the class, register "
                         f"it with @hiapi.saving.register_keras_serializable (as Keras requires) "
                         f"or pass custom_objects={{{config['class_name']!r}: cls}}")
    model = deserialize_keras_object(config, custom_objects)
    try:
        file = h5py.File(io.BytesIO(weights), "r")
    except OSError as error:
        raise ValueError(f"{filepath} is not a complete Keras .keras file: its {WEIGHTS} "
                         f"cannot be read ({error})") from None
    with file:          # Keras's order: compile, then the weights, then the assets
        if compile and config.get("compile_config"):
            _compile(model, config["compile_config"], custom_objects, filepath)
        attribute_walk.read(file, model, filepath)
        if getattr(model, "optimizer", None) is not None:
            compile_config.assign_optimizer(
                model, h5_weights.read_vars(file, "optimizer/vars"), filepath,
                h5_weights.read_vars(file, "optimizer/inner_optimizer/vars"))
    assets.restore(model, asset_files, filepath)
    return model


def _compile(model, config, custom_objects, filepath):
    """``model.compile_from_config`` (Keras's hook), naming the file in its errors."""
    with custom_object_scope(custom_objects):
        try:
            model.compile_from_config(config)
        except ValueError as error:
            raise ValueError(f"{filepath}: {error}") from None


def _known(config, custom_objects):
    with custom_object_scope(custom_objects):
        return find_class(config["class_name"], config.get("registered_name"),
                          config.get("module")) is not None


def save_keras_weights(model, filepath):
    """Keras 3's ``save_weights`` file: the weights (and a compiled model's optimizer state)
    in its HDF5 layout, written atomically."""
    optimizer = getattr(model, "optimizer", None)
    if getattr(optimizer, "sharded_by", None) is not None:
        optimizer = None            # each rank holds a shard: the weights alone, as .hiapi
    weights = _weights_bytes(model, optimizer)
    atomic_write(filepath, lambda handle: handle.write(weights))


def load_keras_weights(model, filepath, by_name=None, skip_mismatch=False):
    """Weights from a ``.weights.h5`` file, from the weights of a ``.keras`` archive, or
    from a Keras 2 HDF5 file (``legacy_h5``: by order, or ``by_name``)."""
    h5py = h5_weights.require_h5py()
    source = filepath
    if is_keras_archive(filepath):
        with zipfile.ZipFile(filepath) as archive:
            source = io.BytesIO(archive.read(WEIGHTS))
    with h5py.File(source, "r") as file:
        if legacy_h5.is_legacy(file):
            return legacy_h5.load(file, model, filepath, by_name=bool(by_name),
                                  skip_mismatch=skip_mismatch)
        legacy_h5.refuse_options(filepath, "in Keras 3's layout, matched by the layers' "
                                 "paths", by_name, skip_mismatch)
        attribute_walk.read(file, model, filepath)
