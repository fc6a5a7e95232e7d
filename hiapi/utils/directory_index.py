"""Finding a dataset's files in a folder tree, as Keras's ``*_dataset_from_directory``
functions do: the labels from the sub-folders' names (or given), the seeded file order, the
training/validation split and the label encodings. Shared by the image and text datasets."""
from __future__ import annotations

import os

import numpy as np

LABEL_MODES = ("int", "categorical", "binary", None)


def index_directory(directory, labels, formats, class_names, shuffle, seed, follow_links,
                    what):
    """``(file_paths, labels or None, class_names)``: with ``labels="inferred"`` every file
    under each sub-folder of ``directory`` (classes in alphanumeric order, or in
    ``class_names``' order), its label the sub-folder's index; with a list, every file under
    ``directory`` in alphanumeric order and the given labels; with None, no labels. Shuffled
    with ``seed`` as Keras shuffles them (paths and labels by the same permutation)."""
    if not os.path.isdir(directory):
        raise ValueError(f"{what}: directory {os.fspath(directory)!r} does not exist or is not "
                         f"a folder")
    if isinstance(labels, str) and labels == "inferred":
        found = sorted(entry.name for entry in os.scandir(directory) if entry.is_dir(
            follow_symlinks=follow_links))
        class_names = _checked_class_names(class_names, found, directory, what)
        per_class = [_files(os.path.join(directory, name), formats, follow_links)
                     for name in class_names]
        paths = [path for files in per_class for path in files]
        label_array = np.concatenate([np.full(len(files), k, np.int32)
                                      for k, files in enumerate(per_class)]) if paths else \
            np.zeros(0, np.int32)
    else:
        if class_names is not None:
            raise ValueError(f"{what}: class_names is only used with labels='inferred'")
        paths = _files(directory, formats, follow_links)
        label_array = None if labels is None else _given_labels(labels, len(paths), what)
        class_names = None if label_array is None else \
            [str(k) for k in range(int(label_array.max()) + 1 if len(label_array) else 0)]
    if shuffle:
        seed = np.random.randint(1_000_000) if seed is None else seed
        order = np.random.RandomState(seed).permutation(len(paths))
        paths = [paths[k] for k in order]
        label_array = None if label_array is None else label_array[order]
    return paths, label_array, class_names


def _checked_class_names(class_names, found, directory, what):
    if class_names is None:
        return found
    missing = [name for name in class_names if name not in found]
    if missing:
        raise ValueError(f"{what}: class_names {missing} are not sub-folders of "
                         f"{os.fspath(directory)!r}; its sub-folders are {found}")
    return list(class_names)


def _files(folder, formats, follow_links):
    """Files under ``folder`` whose extension is one of ``formats``, in alphanumeric order
    of their path below it."""
    found = []
    for root, dirs, files in os.walk(folder, followlinks=follow_links):
        dirs.sort()
        found += [os.path.join(root, name) for name in sorted(files)
                  if name.lower().endswith(formats)]
    return sorted(found, key=lambda path: os.path.relpath(path, folder))


def _given_labels(labels, count, what):
    array = np.asarray(labels)
    if array.ndim != 1 or len(array) != count or array.dtype.kind not in "iu":
        raise ValueError(f"{what}: labels must be 'inferred', None, or one integer label per "
                         f"file ({count} files found, in alphanumeric order of their paths); "
                         f"got {array.shape} {array.dtype}")
    return array.astype(np.int32)


def check_split(validation_split, subset, shuffle, seed, what):
    """Keras's rules for ``validation_split`` and ``subset``."""
    if subset not in (None, "training", "validation", "both"):
        raise ValueError(f"{what}: subset must be 'training', 'validation', 'both' or None, "
                         f"got {subset!r}")
    if validation_split is None:
        if subset is not None:
            raise ValueError(f"{what}: subset={subset!r} needs a validation_split")
        return
    if not 0 < validation_split < 1:
        raise ValueError(f"{what}: validation_split must be between 0 and 1, got "
                         f"{validation_split!r}")
    if subset is None:
        raise ValueError(f"{what}: validation_split needs subset='training', 'validation' or "
                         f"'both'")
    if shuffle and seed is None:
        raise ValueError(f"{what}: with validation_split and shuffle=True give a seed, so "
                         f"that the training and validation subsets do not overlap")


def split(paths, labels, validation_split, subset):
    """The files of ``subset``: the last ``int(validation_split * n)`` are the validation
    ones, as in Keras."""
    if not validation_split:
        return paths, labels
    held = int(validation_split * len(paths))
    cut = len(paths) - held
    if subset == "training":
        return paths[:cut], None if labels is None else labels[:cut]
    return paths[cut:], None if labels is None else labels[cut:]


def encode_labels(labels, label_mode, num_classes, what):
    """Labels as ``label_mode`` gives them: int32 indices, one-hot float32 ("categorical"),
    float32 of shape (n, 1) ("binary", exactly two classes), or None."""
    if label_mode not in LABEL_MODES:
        raise ValueError(f"{what}: label_mode must be one of {list(LABEL_MODES)}, got "
                         f"{label_mode!r}")
    if labels is None or label_mode is None:
        return None
    if label_mode == "binary":
        if num_classes != 2:
            raise ValueError(f"{what}: label_mode='binary' needs exactly 2 classes, found "
                             f"{num_classes}; use 'int' or 'categorical'")
        return labels.astype(np.float32)[:, None]
    if label_mode == "categorical":
        return np.eye(num_classes, dtype=np.float32)[labels]
    return labels.astype(np.int32)


def report(count, num_classes, subset_count, subset, verbose):
    if not verbose:
        return
    classes = f" belonging to {num_classes} classes" if num_classes is not None else ""
    print(f"Found {count} files{classes}.")
    if subset in ("training", "validation"):
        print(f"Using {subset_count} files for {subset}.")
