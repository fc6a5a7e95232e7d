"""``History``: the per-epoch logs that ``fit`` returns."""
from __future__ import annotations

from hiapi.callbacks.callback import Callback


class History(Callback):
    """``history.history`` maps each log name to a list with one value per epoch."""

    def __init__(self) -> None:
        super().__init__()
        self.history: dict[str, list[float]] = {}
        self.epoch: list[int] = []

    def on_train_begin(self, logs=None):
        self.epoch = []

    def on_epoch_end(self, epoch, logs=None):
        self.epoch.append(epoch)
        for key, value in (logs or {}).items():
            self.history.setdefault(key, []).append(value)
