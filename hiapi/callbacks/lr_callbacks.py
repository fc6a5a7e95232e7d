"""Callbacks that set the learning rate: ``LearningRateScheduler`` and ``ReduceLROnPlateau``.
Both write the rate into the epoch's logs as ``learning_rate`` (so History records it)."""
from __future__ import annotations

from typing import Callable, Literal

import numpy as np

from hiapi.callbacks.callback import Callback
from hiapi.callbacks.monitor import Monitor


def _require_plain_rate(owner, optimizer):
    if optimizer.learning_rate_schedule is not None:
        raise TypeError(f"{owner}: the optimizer's learning rate is a schedule "
                        f"({optimizer.learning_rate_schedule!r}); {owner} needs a plain number")


class LearningRateScheduler(Callback):
    """At the start of each epoch, ``lr = schedule(epoch, lr)``."""

    def __init__(self, schedule: Callable[[int, float], float], verbose: int = 0) -> None:
        super().__init__()
        self.schedule, self.verbose = schedule, verbose

    def on_epoch_begin(self, epoch, logs=None):
        optimizer = self.model.optimizer
        _require_plain_rate("LearningRateScheduler", optimizer)
        lr = float(self.schedule(epoch, float(optimizer.learning_rate)))
        if not np.isfinite(lr):
            raise ValueError(f"LearningRateScheduler: schedule returned {lr} for epoch {epoch}")
        optimizer.learning_rate = lr
        if self.verbose:
            print(f"Epoch {epoch + 1}: LearningRateScheduler setting learning rate to {lr}.")

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["learning_rate"] = float(self.model.optimizer.learning_rate)


class ReduceLROnPlateau(Callback):
    """Multiply the rate by ``factor`` after ``patience`` epochs without improvement, then
    wait ``cooldown`` epochs; never below ``min_lr``."""

    def __init__(self, monitor: str = "val_loss", factor: float = 0.1, patience: int = 10,
                 verbose: int = 0, mode: Literal["auto", "min", "max"] = "auto",
                 min_delta: float = 1e-4, cooldown: int = 0, min_lr: float = 0.0) -> None:
        super().__init__()
        if factor >= 1.0:
            raise ValueError(f"ReduceLROnPlateau: factor must be < 1, got {factor!r}")
        self.watch = Monitor("ReduceLROnPlateau", monitor, mode, min_delta)
        self.factor, self.patience, self.verbose = factor, patience, verbose
        self.cooldown, self.min_lr = cooldown, min_lr

    def on_train_begin(self, logs=None):
        self.best, self.wait, self.cooldown_counter = self.watch.worst, 0, 0

    def on_epoch_end(self, epoch, logs=None):
        optimizer = self.model.optimizer
        _require_plain_rate("ReduceLROnPlateau", optimizer)
        logs = logs if logs is not None else {}
        logs["learning_rate"] = float(optimizer.learning_rate)
        current = self.watch.value(logs)
        if current is None:
            return
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.wait = 0
        if self.watch.improved(current, self.best):
            self.best, self.wait = current, 0
        elif self.cooldown_counter <= 0:
            self.wait += 1
            if self.wait >= self.patience:
                old = float(optimizer.learning_rate)
                if old > self.min_lr:
                    optimizer.learning_rate = max(old * self.factor, self.min_lr)
                    if self.verbose:
                        print(f"Epoch {epoch + 1}: ReduceLROnPlateau reducing learning rate "
                              f"to {float(optimizer.learning_rate)}.")
                    self.cooldown_counter, self.wait = self.cooldown, 0
