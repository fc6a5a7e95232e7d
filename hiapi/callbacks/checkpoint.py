"""``ModelCheckpoint`` and ``BackupAndRestore``: files written during training, atomically, so
a run killed at any moment leaves the previous checkpoint loadable."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

import numpy as np

from hiapi.callbacks.callback import Callback
from hiapi.callbacks.monitor import Monitor
from hiapi.serialization import saving_functions


class ModelCheckpoint(Callback):
    """Save the model (or its weights) each epoch, or every ``save_freq`` batches.

    ``filepath`` may hold fields filled from the epoch (1-based) and the logs:
    ``"ckpt-{epoch:02d}-{val_loss:.3f}.hiapi"``. With ``save_best_only`` a file is written only
    when ``monitor`` improves.
    """

    def __init__(self, filepath: str | os.PathLike[str], monitor: str = "val_loss",
                 verbose: int = 0, save_best_only: bool = False, save_weights_only: bool = False,
                 mode: Literal["auto", "min", "max"] = "auto",
                 save_freq: Literal["epoch"] | int = "epoch",
                 initial_value_threshold: float | None = None) -> None:
        super().__init__()
        if save_freq != "epoch" and not (isinstance(save_freq, int) and save_freq > 0):
            raise ValueError(f"ModelCheckpoint: save_freq must be 'epoch' or a positive "
                             f"integer, got {save_freq!r}")
        self.filepath, self.verbose = os.fspath(filepath), verbose
        self.save_best_only, self.save_weights_only = save_best_only, save_weights_only
        self.save_freq = save_freq
        self.watch = Monitor("ModelCheckpoint", monitor, mode)
        self.best = initial_value_threshold if initial_value_threshold is not None \
            else self.watch.worst
        self._batches = 0

    def on_train_batch_end(self, batch, logs=None):
        if self.save_freq != "epoch":
            self._batches += 1
            if self._batches % self.save_freq == 0:
                self._save(self._epoch, logs, batch=batch + 1)

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def on_epoch_end(self, epoch, logs=None):
        if self.save_freq == "epoch":
            self._save(epoch, logs)

    def _save(self, epoch, logs, batch=None):
        logs = logs or {}                   # the same on every rank: decided on every rank
        if self.save_best_only:
            current = self.watch.value(logs)
            if current is None or not self.watch.improved(current, self.best):
                return
            self.best = current
        if not self.save_weights_only:
            self.model.distribution.consolidate(self.model)     # a collective (ZeRO)
        if not self.model.distribution.is_chief:     # one writer in a distributed run
            return
        path = self.filepath.format(epoch=epoch + 1, batch=batch, **logs)
        if self.verbose:
            print(f"Epoch {epoch + 1}: saving model to {path}")
        (self.model.save_weights if self.save_weights_only else self.model.save)(path)


class BackupAndRestore(Callback):
    """Keep a backup of the whole training state (weights, optimizer state, epoch and step, the
    seed of the batch order and, mid-epoch, the epoch's running loss and metric totals) in
    ``backup_dir``; if a run is interrupted, the next ``fit`` with the same callback resumes at
    the epoch and step where the backup was made, and the resumed epoch logs the same loss and
    metrics as an uninterrupted one. The backup is deleted when training ends normally
    (``delete_checkpoint=True``)."""

    FILENAME = "latest.hiapi"

    def __init__(self, backup_dir: str | os.PathLike[str],
                 save_freq: Literal["epoch"] | int = "epoch",
                 delete_checkpoint: bool = True) -> None:
        super().__init__()
        if save_freq != "epoch" and not (isinstance(save_freq, int) and save_freq > 0):
            raise ValueError(f"BackupAndRestore: save_freq must be 'epoch' or a positive "
                             f"integer, got {save_freq!r}")
        self.backup_path = Path(backup_dir) / self.FILENAME
        self.save_freq, self.delete_checkpoint = save_freq, delete_checkpoint

    def on_train_begin(self, logs=None):
        if self.backup_path.exists():
            extra = saving_functions.get("restore_training_state")(self.model, self.backup_path)
            self.model._resume_at = (extra["epoch"], extra["step"])
            self._totals = extra.get("totals") if extra["step"] else None
        else:
            self._totals = None

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch
        if getattr(self, "_totals", None) is not None:    # the resumed, partly done epoch
            self._restore_totals(self._totals)
            self._totals = None

    def _restore_totals(self, saved):
        """This rank's running totals from the backup; resumed on another number of ranks,
        rank 0 takes the sum of all and the others start from zero (same epoch totals)."""
        plan, compiled = self.model.distribution, self.model._compiled_targets
        rows = [np.asarray(row, np.float64) for row in saved["ranks"]]
        if len(rows) == plan.size:
            vector = rows[plan.rank]
        else:                # a rank that had recorded nothing yet sent an empty row
            vector = sum(r for r in rows if len(r)) if plan.rank == 0 else np.zeros(0)
        if not len(vector):
            return
        try:
            if len(vector) != sum(int(np.prod(shape)) for shape in saved["layout"]):
                raise ValueError(f"{len(vector)} numbers for the shapes {saved['layout']}")
            compiled.load_totals(vector, saved["layout"])
        except ValueError as error:
            raise ValueError(f"BackupAndRestore: the running loss/metric totals in "
                             f"{self.backup_path} do not fit this model (it logs "
                             f"{compiled.log_names}): {error}; compile the model as it was "
                             f"when the backup was made") from None

    def reads_batch_logs(self, hook, batch):
        return False        # a backup saves the running totals, not the batch's logs

    def on_train_batch_end(self, batch, logs=None):
        if self.save_freq != "epoch" and (batch + 1) % self.save_freq == 0:
            self._backup(self._epoch, batch + 1)

    def on_epoch_end(self, epoch, logs=None):
        self._backup(epoch + 1, 0)

    def _backup(self, epoch, step):
        totals = self._running_totals() if step else None     # a collective: on every rank
        self.model.distribution.consolidate(self.model)          # so is this (ZeRO)
        if not self.model.distribution.is_chief:
            return
        saving_functions.get("save_model")(self.model, self.backup_path,
                                            extra={"epoch": epoch, "step": step, "totals": totals})

    def _running_totals(self):
        """Every rank's running loss/metric totals of the epoch so far (exact float64, JSON)."""
        plan, compiled = self.model.distribution, self.model._compiled_targets
        layout = compiled.totals_layout()
        vector = compiled.totals_vector() if layout is not None else np.zeros(0)
        rows = plan.gather_totals(vector)
        if layout is None:
            return None
        return {"layout": layout, "ranks": [row.tolist() for row in rows]}

    def on_train_end(self, logs=None):
        if self.model.distribution.is_chief and self.delete_checkpoint and \
                self.backup_path.exists():
            self.backup_path.unlink()
