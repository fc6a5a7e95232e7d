"""Data sources for ``fit``/``evaluate``/``predict``, each behind one interface
(``DataAdapter``): arrays (or lists/dicts of arrays), Python generators and iterators, and
``hiapi.utils.PyDataset``. ``get_adapter`` picks the one for ``x``."""
import types

from hiapi.models.data_adapters.array_adapter import ArrayAdapter
from hiapi.models.data_adapters.base import DataAdapter, warn_ran_out
from hiapi.models.data_adapters.generator_adapter import GeneratorAdapter
from hiapi.models.data_adapters.py_dataset_adapter import PyDatasetAdapter
from hiapi.utils.py_dataset import PyDataset


def is_batch_source(x):
    """Whether ``x`` yields whole batches (a generator, iterator or PyDataset)."""
    return isinstance(x, (PyDataset, types.GeneratorType)) or (
        hasattr(x, "__next__") and hasattr(x, "__iter__"))


def get_adapter(model, x, y=None, sample_weight=None, class_weight=None, *, batch_size, plan,
                steps=None, what="fit", source="x", targets=True, check_finite=False):
    """The adapter reading ``x`` (and ``y``, ``sample_weight`` for arrays) for ``what``
    ("fit", "evaluate", "predict", "fit validation_data"); ``targets=False`` for predict;
    ``check_finite`` refuses NaN or infinite values (training data)."""
    if is_batch_source(x):
        for name, value in (("y", y), ("sample_weight", sample_weight)):
            if value is not None:
                raise ValueError(f"{what}: {name} must not be given when x is a "
                                 f"{_kind(x)}; yield (x, y) or (x, y, sample_weight) "
                                 f"batches instead")
        prepare = _batch_preparer(model, class_weight, targets, check_finite)
        adapter = PyDatasetAdapter if isinstance(x, PyDataset) else GeneratorAdapter
        return adapter(x, prepare, plan, steps, what, targets)
    if x is None:
        raise ValueError(f"{what}: x is required")
    if targets and y is None:
        raise ValueError(f"{what}: y (the targets) is required when x is an array")
    arrays = model._prepare(x, y, sample_weight, class_weight, check_finite)
    return ArrayAdapter(arrays, batch_size, plan, steps, what, source,
                        allow_empty=not targets)


def _batch_preparer(model, class_weight, targets, check_finite):
    if not targets:
        return lambda x, y, sample_weight: model._prepare(x)
    return lambda x, y, sample_weight: model._prepare(x, y, sample_weight, class_weight,
                                                      check_finite)


def _kind(x):
    return "PyDataset" if isinstance(x, PyDataset) else "generator"


__all__ = ["DataAdapter", "ArrayAdapter", "GeneratorAdapter", "PyDatasetAdapter",
           "get_adapter", "is_batch_source", "warn_ran_out"]
