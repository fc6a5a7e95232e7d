"""Small callbacks: ``TerminateOnNaN``, ``LambdaCallback``, ``CSVLogger``."""
from __future__ import annotations

import csv
import math
import os
from typing import Any, Callable

from hiapi.callbacks.callback import Callback


class TerminateOnNaN(Callback):
    """Stop training (without an exception) when the loss becomes NaN or infinite."""

    def on_train_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and not math.isfinite(loss):
            print(f"Batch {batch}: invalid loss, terminating training")
            self.model.stop_training = True


class LambdaCallback(Callback):
    """A callback from functions: ``LambdaCallback(on_epoch_end=lambda epoch, logs: ...)``."""

    HOOKS = ("on_train_begin", "on_train_end", "on_epoch_begin", "on_epoch_end",
             "on_train_batch_begin", "on_train_batch_end")

    def __init__(self, **hooks: Callable[..., Any] | None) -> None:
        super().__init__()
        unknown = set(hooks) - set(self.HOOKS)
        if unknown:
            raise TypeError(f"LambdaCallback: unknown hook(s) {sorted(unknown)}; valid: "
                            f"{', '.join(self.HOOKS)}")
        for name, fn in hooks.items():
            if fn is not None:
                setattr(self, name, fn)


class CSVLogger(Callback):
    """One CSV row per epoch (``epoch`` then the logs in sorted order). With ``append=True``
    an existing file is continued, without a second header, as when resuming a run."""

    def __init__(self, filename: str | os.PathLike[str], separator: str = ",",
                 append: bool = False) -> None:
        super().__init__()
        self.filename, self.separator, self.append = os.fspath(filename), separator, append
        self.keys, self._file = None, None

    def on_train_begin(self, logs=None):
        if not self.model.distribution.is_chief:     # one writer in a distributed run
            return
        resume = self.append and os.path.exists(self.filename) and \
            os.path.getsize(self.filename) > 0
        if resume:
            with open(self.filename, newline="") as handle:
                header = next(csv.reader(handle, delimiter=self.separator), None)
            self.keys = header[1:] if header else None
        self._file = open(self.filename, "a" if self.append else "w", newline="")
        self._writer = None

    def on_epoch_end(self, epoch, logs=None):
        if self._file is None:
            return
        logs = logs or {}
        if self.keys is None:
            self.keys = sorted(logs)
        if self._writer is None:
            self._writer = csv.DictWriter(self._file, ["epoch"] + self.keys,
                                          delimiter=self.separator, extrasaction="ignore")
            if self._file.tell() == 0:
                self._writer.writeheader()
        self._writer.writerow({"epoch": epoch, **{k: logs.get(k, "NA") for k in self.keys}})
        self._file.flush()

    def on_train_end(self, logs=None):
        if self._file is not None:
            self._file.close()
            self._file = None
