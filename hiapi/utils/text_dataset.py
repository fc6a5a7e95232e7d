"""``text_dataset_from_directory``: a folder of class sub-folders of ``.txt`` files as a
PyDataset of (texts, labels) batches, with Keras's arguments. The texts are numpy string
arrays (Keras gives ``tf.string`` tensors): turn them into numbers before the model, e.g. in
a PyDataset of your own that wraps this one.

    train = hiapi.utils.text_dataset_from_directory("reviews", batch_size=32, seed=1)
    texts, labels = train[0]          # texts: numpy str array (32,), labels: int32 (32,)
"""
from __future__ import annotations

from typing import Any

import numpy as np

from hiapi.utils import directory_index
from hiapi.utils.file_dataset import FileDataset

WHAT = "text_dataset_from_directory"


class TextReader:
    """One text file as a numpy string, cut to ``max_length`` characters if given.
    Picklable, for worker processes."""

    def __init__(self, max_length):
        self.max_length = max_length

    def __call__(self, path: str) -> np.str_:
        try:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
        except (OSError, UnicodeDecodeError) as error:
            raise ValueError(f"{WHAT}: cannot read the text file {path!r} "
                             f"({type(error).__name__}: {error})") from error
        return np.str_(text if self.max_length is None else text[:self.max_length])


def text_dataset_from_directory(
        directory: str, labels: Any = "inferred", label_mode: str | None = "int",
        class_names: list[str] | None = None, batch_size: int | None = 32,
        max_length: int | None = None, shuffle: bool = True, seed: int | None = None,
        validation_split: float | None = None, subset: str | None = None,
        follow_links: bool = False, verbose: bool = True, *, workers: int = 1,
        use_multiprocessing: bool = False, max_queue_size: int = 10) -> Any:
    """Keras's arguments and defaults; returns a ``FileDataset`` (a PyDataset with
    ``class_names`` and ``file_paths``), or a (training, validation) pair for
    ``subset="both"``; ``workers``, ``use_multiprocessing`` and ``max_queue_size`` are the
    PyDataset's."""
    if max_length is not None and (not isinstance(max_length, int) or max_length < 1):
        raise ValueError(f"{WHAT}: max_length must be a positive integer or None, got "
                         f"{max_length!r}")
    label_mode = None if labels is None else label_mode
    directory_index.check_split(validation_split, subset, shuffle, seed, WHAT)
    paths, label_array, class_names = directory_index.index_directory(
        directory, labels, (".txt",), class_names, shuffle, seed, follow_links, WHAT)
    if not paths:
        raise ValueError(f"{WHAT}: no .txt files found in {str(directory)!r}")
    num_classes = None if class_names is None else len(class_names)
    encoded = directory_index.encode_labels(label_array, label_mode, num_classes, WHAT)
    options = dict(workers=workers, use_multiprocessing=use_multiprocessing,
                   max_queue_size=max_queue_size)

    def made(part):
        files, part_labels = directory_index.split(paths, encoded, validation_split, part)
        directory_index.report(len(paths), num_classes, len(files), part, verbose)
        return FileDataset(files, part_labels, TextReader(max_length), batch_size,
                           class_names, **options)
    if subset == "both":
        return made("training"), made("validation")
    return made(subset)
