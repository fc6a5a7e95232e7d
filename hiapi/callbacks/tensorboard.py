"""``TensorBoard``: Keras 3's callback, writing real TensorBoard event files.

The files are written with tensorboardX (pure Python + protobuf, no TensorFlow), so
``tensorboard --logdir logs`` shows a hiapi run as it shows a Keras one: the same directories
(``logs/train``, ``logs/validation``), the same tags (``epoch_loss``, ``epoch_accuracy``,
``epoch_learning_rate``, ``batch_*``, ``evaluation_*_vs_iterations``) and the same steps, so
Keras and hiapi runs overlay in one chart.

    model.fit(x, y, epochs=5, validation_split=0.1,
              callbacks=[hiapi.callbacks.TensorBoard("logs", histogram_freq=1)])
    # then: tensorboard --logdir logs
"""
from __future__ import annotations

import numbers
import os
import time
import warnings
from typing import Any, Literal, Sequence

import numpy as np

from hiapi.runtime import settings
from hiapi.callbacks.callback import Callback

_MISSING = ("hiapi.callbacks.TensorBoard writes event files with tensorboardX, which is not "
            "installed: pip install 'hiapi[tensorboard]' (or pip install tensorboardX)")


def _summary_writer():
    """tensorboardX's writer class, imported only when a TensorBoard callback is made (the
    import takes seconds and the package is an optional extra)."""
    try:
        from tensorboardX import SummaryWriter
    except ImportError as error:
        raise ImportError(_MISSING) from error
    return SummaryWriter


def _require_pillow():
    """tensorboardX encodes images as PNG with Pillow (in the extra, not in hiapi's core)."""
    try:
        import PIL  # noqa: F401
    except ImportError as error:
        raise ImportError("TensorBoard(write_images=True) encodes images with Pillow, which "
                          "is not installed: pip install 'hiapi[tensorboard]' (or pip install "
                          "pillow)") from error


def _check_count(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"TensorBoard: {name} must be a non-negative integer (0 turns it off), "
                         f"got {value!r}")
    return int(value)


def _check_flag(name, value):
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"TensorBoard: {name} must be True or False, got {value!r}")
    return bool(value)


def _check_update_freq(value):
    if value == "batch":
        return 1
    if value == "epoch":
        return "epoch"
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"TensorBoard: update_freq must be 'epoch', 'batch' or a positive "
                         f"number of batches, got {value!r}")
    return int(value)


def _check_profile_batch(value):
    """Keras's forms: 0 (off), a batch number, a ``(start, stop)`` pair or ``"start,stop"``."""
    pair = value.split(",") if isinstance(value, str) else value
    if isinstance(pair, (list, tuple)) and len(pair) == 2:
        try:
            start, stop = (int(part) for part in pair)
        except (TypeError, ValueError):
            start, stop = -1, -1
    elif isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        start = stop = int(value)
    else:
        start, stop = -1, -1
    if start < 0 or stop < start or (start == 0) != (stop == 0):
        raise ValueError(f"TensorBoard: profile_batch must be 0 (off), a non-negative batch "
                         f"number or a (start, stop) pair with 0 < start <= stop, got {value!r}")
    return start, stop


class TensorBoard(Callback):
    """Log epoch (and batch) scalars and weight histograms for TensorBoard, as Keras 3 does.

    Arguments, names and defaults are Keras 3's:

    - ``log_dir``: scalars of training go to ``log_dir/train``, those of validation (the
      ``val_*`` logs, without the prefix) and of ``evaluate`` to ``log_dir/validation``.
    - ``histogram_freq``: every that many epochs (counted from epoch 0), a histogram of every
      weight, tagged ``<weight path>/histogram`` (``dense/kernel/histogram``); 0 turns it off.
    - ``write_images``: with the histograms, each weight as an image (tag
      ``<weight path>/image``), in Keras's layout; values are scaled to [0, 1] per weight so
      negative weights show (TensorFlow clips them to black).
    - ``write_steps_per_second``: also log ``epoch_steps_per_second`` (and
      ``batch_steps_per_second``).
    - ``update_freq``: ``"epoch"``; ``"batch"`` or N also logs ``batch_<name>`` (the running
      values of the epoch, as the progress bar shows) every N batches, at step = batches seen
      in this ``fit``, as Keras.
    - ``write_graph``, ``profile_batch``, ``embeddings_freq``, ``embeddings_metadata``: accepted
      so Keras scripts run unchanged, but they do nothing here: there is no TensorFlow graph to
      write, no TensorFlow profiler, and no projector plugin writer. The defaults are silent;
      asking for a profile or embeddings warns that none will be written.

    Under a ``hiapi.distribute.Strategy`` only the chief (rank 0) writes: every rank logs the
    same numbers, and one set of files is what TensorBoard should read.
    """

    def __init__(self, log_dir: str | os.PathLike[str] = "logs", histogram_freq: int = 0,
                 write_graph: bool = True, write_images: bool = False,
                 write_steps_per_second: bool = False,
                 update_freq: Literal["epoch", "batch"] | int = "epoch",
                 profile_batch: int | str | Sequence[int] = 0, embeddings_freq: int = 0,
                 embeddings_metadata: Any = None) -> None:
        super().__init__()
        if not isinstance(log_dir, (str, os.PathLike)) or not os.fspath(log_dir):
            raise ValueError(f"TensorBoard: log_dir must be a non-empty path, got {log_dir!r}")
        self._writer_class = _summary_writer()
        self.log_dir = os.fspath(log_dir)
        self.histogram_freq = _check_count("histogram_freq", histogram_freq)
        self.write_graph = _check_flag("write_graph", write_graph)
        self.write_images = _check_flag("write_images", write_images)
        if self.write_images:
            _require_pillow()
        self.write_steps_per_second = _check_flag("write_steps_per_second",
                                                  write_steps_per_second)
        self.update_freq = _check_update_freq(update_freq)
        self.profile_batch = profile_batch
        self.embeddings_freq = _check_count("embeddings_freq", embeddings_freq)
        if embeddings_metadata is not None and not isinstance(
                embeddings_metadata, (str, os.PathLike, dict)):
            raise ValueError(f"TensorBoard: embeddings_metadata must be None, a path or a dict "
                             f"of layer name to path, got {embeddings_metadata!r}")
        self.embeddings_metadata = embeddings_metadata
        if _check_profile_batch(profile_batch) != (0, 0):
            warnings.warn("TensorBoard: profile_batch is not honoured by hiapi (there is no "
                          "TensorFlow profiler); no profile will be written. Use "
                          "hiapi.profiler for per-op timings.", UserWarning, stacklevel=2)
        if self.embeddings_freq:
            warnings.warn("TensorBoard: embeddings_freq is not honoured by hiapi; no projector "
                          "data will be written.", UserWarning, stacklevel=2)
        self._writers: dict[str, Any] = {}      # "train"/"validation" -> tensorboardX writer
        self._in_fit = False
        self._global_train_batch = 0

    # ---- writers -------------------------------------------------------------------------
    def _writes(self):
        distribution = getattr(self.model, "distribution", None)
        return distribution is None or distribution.is_chief

    def _writer(self, kind):
        """The writer of ``train`` or ``validation``, made on first use (as Keras, a run
        without validation leaves no validation directory)."""
        if kind not in self._writers:
            self._writers[kind] = self._writer_class(os.path.join(self.log_dir, kind))
        return self._writers[kind]

    def _scalars(self, kind, prefix, logs, step):
        writer = self._writer(kind)
        for name, value in logs.items():
            if isinstance(value, (numbers.Real, np.number)) and not isinstance(value, bool):
                writer.add_scalar(prefix + name, float(value), step)

    def _close_writers(self):
        for writer in self._writers.values():
            writer.close()
        self._writers = {}

    # ---- hooks ---------------------------------------------------------------------------
    def on_train_begin(self, logs=None):
        self._in_fit = True
        self._global_train_batch = 0

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch_start = time.perf_counter()
        self._epoch_batches = 0

    def on_train_batch_begin(self, batch, logs=None):
        self._batch_start = time.perf_counter()

    def on_train_batch_end(self, batch, logs=None):
        self._global_train_batch += 1
        self._epoch_batches += 1
        if self.update_freq == "epoch" or self._global_train_batch % self.update_freq or \
                not self._writes():
            return
        logs = dict(logs or {})
        if self.write_steps_per_second:
            logs["steps_per_second"] = 1.0 / max(time.perf_counter() - self._batch_start, 1e-9)
        self._scalars("train", "batch_", logs, self._global_train_batch)

    def on_epoch_end(self, epoch, logs=None):
        if not self._writes():
            return
        logs = logs or {}
        train = {k: v for k, v in logs.items() if not k.startswith("val_")}
        if "learning_rate" not in train and getattr(self.model, "optimizer", None) is not None:
            train["learning_rate"] = self.model.optimizer.current_learning_rate()
        if self.write_steps_per_second:
            seconds = max(time.perf_counter() - self._epoch_start, 1e-9)
            train["steps_per_second"] = self._epoch_batches / seconds
        self._scalars("train", "epoch_", train, epoch)
        validation = {k[len("val_"):]: v for k, v in logs.items() if k.startswith("val_")}
        if validation:
            self._scalars("validation", "epoch_", validation, epoch)
        if self.histogram_freq and epoch % self.histogram_freq == 0:
            self._log_weights(epoch)
        for writer in self._writers.values():
            writer.flush()        # an epoch's numbers are on disk when the epoch ends

    def on_test_end(self, logs=None):
        """Keras's ``evaluation_<name>_vs_iterations``, at step = optimizer iterations, for
        every evaluation (each validation in ``fit``, and ``evaluate``)."""
        optimizer = getattr(self.model, "optimizer", None)
        if not self._writes() or optimizer is None:
            return
        step = int(optimizer.iterations.numpy())
        self._scalars("validation", "evaluation_",
                      {f"{k}_vs_iterations": v for k, v in (logs or {}).items()}, step)
        if self._in_fit:
            self._writer("validation").flush()
        else:                     # a lone evaluate: nothing else will close the file
            self._close_writers()

    def on_train_end(self, logs=None):
        self._in_fit = False
        self._close_writers()

    # ---- weights -------------------------------------------------------------------------
    def _log_weights(self, epoch):
        writer = self._writer("train")
        for weight in self.model.weights:
            values = np.asarray(weight.numpy())
            tag = weight.name.replace(":", "_")
            if not np.isfinite(values).all():     # e.g. after TerminateOnNaN stopped a fit
                warnings.warn(f"TensorBoard: weight {weight.name!r} holds NaN or infinite "
                              f"values at epoch {epoch}; its histogram and image are not "
                              f"written", UserWarning, stacklevel=2)
                continue
            if values.size:
                writer.add_histogram(tag + "/histogram", values.astype(np.float64), epoch)
            if self.write_images:
                image = weight_image(values)
                if image is not None:
                    writer.add_images(tag + "/image", image, epoch, dataformats="NHWC")


def weight_image(values):
    """A weight as a batch of grey images (N, H, W, 1), laid out as Keras's
    ``_log_weight_as_image``: a bias is one row, a Dense kernel is wider than tall, a
    (squeezed) 3-D conv kernel is one image per output channel; other ranks give None.
    Values are scaled to [0, 1] over the whole weight."""
    image = np.squeeze(values).astype(np.float64)
    if image.ndim == 1:
        image = image.reshape(1, image.shape[0], 1, 1)
    elif image.ndim == 2:
        image = image.T if image.shape[0] > image.shape[1] else image
        image = image.reshape(1, *image.shape, 1)
    elif image.ndim == 3:
        if settings.image_data_format() == "channels_last":       # one image per filter
            image = np.transpose(image, (2, 0, 1))
        image = image[..., None]
    else:
        return None
    low, high = image.min(), image.max()
    return (image - low) / (high - low) if high > low else np.zeros_like(image)
