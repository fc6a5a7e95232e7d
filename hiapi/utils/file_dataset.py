"""``FileDataset``: the PyDataset the ``*_dataset_from_directory`` functions return: files
read and decoded per batch (by the dataset's workers), with Keras's ``class_names`` and
``file_paths``. Keras returns a ``tf.data.Dataset``; hiapi's own loader is a PyDataset, so
``workers``/``use_multiprocessing`` decode batches in parallel (docs/data.md)."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from hiapi.utils.py_dataset import PyDataset


class FileDataset(PyDataset):
    """Batches of ``batch_size`` files, each turned into an array by ``read(path)`` (a
    picklable callable, so worker processes can run it), with their ``labels`` (None: x
    alone). ``batch_size=None`` gives one file per item, without a batch axis, as Keras."""

    def __init__(self, file_paths: list[str], labels: np.ndarray | None,
                 read: Callable[[str], Any], batch_size: int | None,
                 class_names: list[str] | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(
                batch_size, int) or batch_size < 1):
            raise ValueError(f"batch_size must be a positive integer or None, got "
                             f"{batch_size!r}")
        self.file_paths, self.labels, self.read = list(file_paths), labels, read
        self.batch_size, self.class_names = batch_size, class_names

    def __len__(self) -> int:
        size = self.batch_size or 1
        return -(-len(self.file_paths) // size)

    def __getitem__(self, index: int) -> Any:
        if not 0 <= index < len(self):
            raise IndexError(f"batch {index} out of range: the dataset has {len(self)}")
        if self.batch_size is None:
            x = self.read(self.file_paths[index])
            return x if self.labels is None else (x, self.labels[index])
        part = slice(index * self.batch_size, (index + 1) * self.batch_size)
        x = np.stack([self.read(path) for path in self.file_paths[part]])
        return x if self.labels is None else (x, self.labels[part])
