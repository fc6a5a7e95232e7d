"""``timeseries_dataset_from_array``: sliding windows over a long array as a PyDataset of
batches, with Keras's arguments. Windows are gathered per batch (the array is never copied
whole, so a ``np.memmap`` works too).

Window i starts at ``start_index + i * sequence_stride`` and takes ``sequence_length``
steps ``sampling_rate`` apart; its target is ``targets[start of window i]``, as in Keras:

    x = np.arange(100)
    ds = hiapi.utils.timeseries_dataset_from_array(x[:-10], x[10:], sequence_length=10,
                                                   batch_size=8)
    windows, after = ds[0]     # windows[0] = 0..9, after[0] = 10
"""
from __future__ import annotations

from typing import Any

import numpy as np

from hiapi.utils.py_dataset import PyDataset

WHAT = "timeseries_dataset_from_array"


class TimeseriesDataset(PyDataset):
    def __init__(self, data: Any, targets: Any, starts: np.ndarray, offsets: np.ndarray,
                 batch_size: int | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.data, self.targets = data, targets
        self.starts, self.offsets, self.batch_size = starts, offsets, batch_size

    def __len__(self) -> int:
        return -(-len(self.starts) // (self.batch_size or 1))

    def __getitem__(self, index: int) -> Any:
        if not 0 <= index < len(self):
            raise IndexError(f"batch {index} out of range: the dataset has {len(self)}")
        size = self.batch_size or 1
        starts = self.starts[index * size:(index + 1) * size]
        rows = starts[:, None] + self.offsets[None, :]
        x = np.asarray(self.data[rows.ravel()])      # only this batch's rows are read
        x = x.reshape(rows.shape + x.shape[1:])
        y = None if self.targets is None else np.asarray(self.targets[starts])
        if self.batch_size is None:
            x, y = x[0], None if y is None else y[0]
        return x if y is None else (x, y)


def timeseries_dataset_from_array(
        data: Any, targets: Any, sequence_length: int, sequence_stride: int = 1,
        sampling_rate: int = 1, batch_size: int | None = 128, shuffle: bool = False,
        seed: int | None = None, start_index: int | None = None, end_index: int | None = None,
        *, workers: int = 1, use_multiprocessing: bool = False,
        max_queue_size: int = 10) -> TimeseriesDataset:
    """Keras's arguments and defaults (``shuffle`` draws the windows' order once, with
    ``seed``); returns a PyDataset of (windows, targets) batches, windows alone when
    ``targets`` is None."""
    for name, value in (("sequence_length", sequence_length),
                        ("sequence_stride", sequence_stride), ("sampling_rate", sampling_rate)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{WHAT}: {name} must be a positive integer, got {value!r}")
    if batch_size is not None and (not isinstance(batch_size, int) or batch_size < 1):
        raise ValueError(f"{WHAT}: batch_size must be a positive integer or None, got "
                         f"{batch_size!r}")
    start = 0 if start_index is None else int(start_index)
    end = len(data) if end_index is None else int(end_index)
    if not 0 <= start < end <= len(data):
        raise ValueError(f"{WHAT}: need 0 <= start_index < end_index <= len(data) = "
                         f"{len(data)}, got start_index={start_index}, end_index={end_index}")
    count = end - start - (sequence_length - 1) * sampling_rate      # as Keras counts
    if targets is not None:
        count = min(count, len(targets))
    starts = start + np.arange(0, max(count, 0), sequence_stride, dtype=np.int64)
    if len(starts) == 0:
        raise ValueError(f"{WHAT}: no window of {sequence_length} steps (sampling_rate "
                         f"{sampling_rate}) fits between {start} and {end}")
    if shuffle:
        seed = np.random.randint(1_000_000) if seed is None else seed
        starts = np.random.RandomState(seed).permutation(starts)
    offsets = np.arange(sequence_length, dtype=np.int64) * sampling_rate
    return TimeseriesDataset(data, targets, starts, offsets, batch_size, workers=workers,
                             use_multiprocessing=use_multiprocessing,
                             max_queue_size=max_queue_size)
