"""``ModelCheckpoint`` and ``BackupAndRestore``: files written during training, atomically, so
a run killed at any moment leaves the previous checkpoint loadable."""
import os
from pathlib import Path

from hiapi.callbacks.callback import Callback
from hiapi.callbacks.monitor import Monitor


class ModelCheckpoint(Callback):
    """Save the model (or its weights) each epoch, or every ``save_freq`` batches.

    ``filepath`` may hold fields filled from the epoch (1-based) and the logs:
    ``"ckpt-{epoch:02d}-{val_loss:.3f}.hiapi"``. With ``save_best_only`` a file is written only
    when ``monitor`` improves.
    """

    def __init__(self, filepath, monitor="val_loss", verbose=0, save_best_only=False,
                 save_weights_only=False, mode="auto", save_freq="epoch",
                 initial_value_threshold=None):
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
        if not self.model.distribution.is_chief:     # one writer in a distributed run
            return
        logs = logs or {}
        if self.save_best_only:
            current = self.watch.value(logs)
            if current is None or not self.watch.improved(current, self.best):
                return
            self.best = current
        path = self.filepath.format(epoch=epoch + 1, batch=batch, **logs)
        if self.verbose:
            print(f"Epoch {epoch + 1}: saving model to {path}")
        (self.model.save_weights if self.save_weights_only else self.model.save)(path)


class BackupAndRestore(Callback):
    """Keep a backup of the whole training state (weights, optimizer state, epoch and step, and
    the seed of the batch order) in
    ``backup_dir``; if a run is interrupted, the next ``fit`` with the same callback resumes at
    the epoch and step where the backup was made. The backup is deleted when training ends
    normally (``delete_checkpoint=True``)."""

    FILENAME = "latest.hiapi"

    def __init__(self, backup_dir, save_freq="epoch", delete_checkpoint=True):
        super().__init__()
        if save_freq != "epoch" and not (isinstance(save_freq, int) and save_freq > 0):
            raise ValueError(f"BackupAndRestore: save_freq must be 'epoch' or a positive "
                             f"integer, got {save_freq!r}")
        self.backup_path = Path(backup_dir) / self.FILENAME
        self.save_freq, self.delete_checkpoint = save_freq, delete_checkpoint

    def on_train_begin(self, logs=None):
        if self.backup_path.exists():
            from hiapi.saving.model_file import restore_training_state
            extra = restore_training_state(self.model, self.backup_path)
            self.model._resume_at = (extra["epoch"], extra["step"])

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if self.save_freq != "epoch" and (batch + 1) % self.save_freq == 0:
            self._backup(self._epoch, batch + 1)

    def on_epoch_end(self, epoch, logs=None):
        self._backup(epoch + 1, 0)

    def _backup(self, epoch, step):
        if not self.model.distribution.is_chief:
            return
        from hiapi.saving.model_file import save_model
        save_model(self.model, self.backup_path, extra={"epoch": epoch, "step": step})

    def on_train_end(self, logs=None):
        if self.model.distribution.is_chief and self.delete_checkpoint and \
                self.backup_path.exists():
            self.backup_path.unlink()
