"""Shared by callbacks that watch a logged value: which direction counts as better."""
import warnings

import numpy as np


class Monitor:
    """``monitor`` in ``mode`` min/max/auto ("auto": max for accuracy-like names, else min),
    an improvement being a change of more than ``min_delta`` in the good direction."""

    def __init__(self, owner, monitor, mode, min_delta=0.0):
        if mode not in ("auto", "min", "max"):
            raise ValueError(f"{owner}: mode must be 'auto', 'min' or 'max', got {mode!r}")
        if mode == "auto":
            name = monitor.removeprefix("val_")
            mode = "max" if name in ("acc", "accuracy", "auc") or name.endswith("accuracy") \
                else "min"
        self.owner, self.monitor, self.mode, self.min_delta = owner, monitor, mode, abs(min_delta)
        self.worst = np.inf if mode == "min" else -np.inf

    def value(self, logs):
        value = (logs or {}).get(self.monitor)
        if value is None:
            warnings.warn(f"{self.owner}: metric {self.monitor!r} is not in the logs (available:"
                          f" {', '.join(sorted(logs or {}))}); skipping", stacklevel=3)
        return value

    def improved(self, current, reference):
        if self.mode == "min":
            return current < reference - self.min_delta
        return current > reference + self.min_delta
