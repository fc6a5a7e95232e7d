"""Data sources for ``fit``/``evaluate``/``predict``, each behind one interface
(``DataAdapter``): arrays (or lists/dicts of arrays), Python generators and iterators,
``hiapi.utils.PyDataset`` and ``torch.utils.data.DataLoader``. ``get_adapter`` picks the one
for ``x``."""
import types

from hiapi.models import data
from hiapi.models.data_adapters.array_adapter import ArrayAdapter
from hiapi.models.data_adapters.base import DataAdapter, warn_ran_out
from hiapi.models.data_adapters.generator_adapter import GeneratorAdapter
from hiapi.models.data_adapters.py_dataset_adapter import PyDatasetAdapter
from hiapi.models.data_adapters.torch_data_loader_adapter import (TorchDataLoaderAdapter,
                                                                  is_torch_data_loader)
from hiapi.utils.py_dataset import PyDataset


def is_batch_source(x):
    """Whether ``x`` yields whole batches (a generator, iterator, PyDataset or DataLoader)."""
    return isinstance(x, (PyDataset, types.GeneratorType)) or is_torch_data_loader(x) or (
        hasattr(x, "__next__") and hasattr(x, "__iter__"))


def get_adapter(model, x, y=None, sample_weight=None, class_weight=None, *, batch_size, plan,
                steps=None, what="fit", source="x", targets=True, check_finite=False):
    """The adapter reading ``x`` (and ``y``, ``sample_weight`` for arrays) for ``what``
    ("fit", "evaluate", "predict", "fit validation_data"); ``targets=False`` for predict;
    ``check_finite`` refuses NaN or infinite values (training data)."""
    # a custom train_step may take x alone, and so may a model whose loss is all add_loss
    labels_optional = model.uses_custom_steps() or not model._needs_targets()
    if is_batch_source(x):
        for name, value in (("y", y), ("sample_weight", sample_weight)):
            if value is not None:
                raise ValueError(f"{what}: {name} must not be given when x is a "
                                 f"{_kind(x)}; yield (x, y) or (x, y, sample_weight) "
                                 f"batches instead")
        prepare = _batch_preparer(model, class_weight, targets, check_finite)
        return _batch_adapter(x)(x, prepare, plan, steps, what, targets and not labels_optional)
    if x is None:
        raise ValueError(f"{what}: x is required")
    if targets and y is None and not labels_optional:
        raise ValueError(f"{what}: y (the targets) is required when x is an array")
    arrays = model._prepare(x, y, sample_weight, class_weight, check_finite, lazy=True)
    return ArrayAdapter(arrays, batch_size, plan, steps, what, source,
                        allow_empty=not targets)


def fit_adapters(model, x, y, sample_weight, class_weight, batch_size, plan, steps_per_epoch,
                 validation_split, validation_data, validation_steps, validation_batch_size):
    """``fit``'s adapters: for the training data, and for the validation data (or None)."""
    validation_batch = validation_batch_size or batch_size
    if validation_split and validation_data is None:
        if is_batch_source(x):
            raise ValueError(f"fit: validation_split is only supported for arrays; with a "
                             f"{_kind(x)} pass validation_data")
        if y is None:
            raise ValueError("fit: y (the targets) is required when x is an array")
        arrays = model._prepare(x, y, sample_weight, class_weight, check_finite=True,
                                lazy=True)
        train, held_out = data.split_validation(arrays, validation_split)
        return (ArrayAdapter(train, batch_size, plan, steps_per_epoch, "fit"),
                ArrayAdapter(held_out, validation_batch, plan.evaluation_plan,
                             validation_steps, "fit validation_split"))
    train = get_adapter(model, x, y, sample_weight, class_weight, batch_size=batch_size,
                        plan=plan, steps=steps_per_epoch, what="fit", check_finite=True)
    if validation_data is None:
        return train, None
    val_x, val_y, val_weight = unpack_validation_data(validation_data)
    return train, get_adapter(model, val_x, val_y, val_weight, batch_size=validation_batch,
                              plan=plan.evaluation_plan, steps=validation_steps,
                              what="fit validation_data",
                              source="validation_data")


def unpack_validation_data(validation_data):
    """Keras's forms: (x_val, y_val), (x_val, y_val, sample_weight), a generator, a
    PyDataset or a DataLoader."""
    if is_batch_source(validation_data):
        return validation_data, None, None
    if not isinstance(validation_data, (list, tuple)) or len(validation_data) not in (2, 3):
        raise ValueError("validation_data must be a tuple (x_val, y_val) or (x_val, y_val, "
                         "sample_weight), a generator, a PyDataset or a DataLoader")
    return tuple(validation_data) + (None,) * (3 - len(validation_data))


def _batch_preparer(model, class_weight, targets, check_finite):
    if not targets:
        return lambda x, y, sample_weight: model._prepare(x)
    return lambda x, y, sample_weight: model._prepare(x, y, sample_weight, class_weight,
                                                      check_finite)


def _batch_adapter(x):
    return PyDatasetAdapter if isinstance(x, PyDataset) else \
        TorchDataLoaderAdapter if is_torch_data_loader(x) else GeneratorAdapter


def _kind(x):
    return "PyDataset" if isinstance(x, PyDataset) else \
        "DataLoader" if is_torch_data_loader(x) else "generator"


__all__ = ["DataAdapter", "ArrayAdapter", "GeneratorAdapter", "PyDatasetAdapter",
           "TorchDataLoaderAdapter",
           "get_adapter", "fit_adapters", "is_batch_source", "unpack_validation_data",
           "warn_ran_out"]
