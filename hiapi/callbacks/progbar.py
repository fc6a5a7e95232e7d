"""``ProgbarLogger``: Keras-style progress output.

``verbose=1``: an ``Epoch i/n`` header, then on a terminal (or in a notebook) a tqdm bar with
step counter, time, ETA and the running loss and metrics; when output goes to a file or a pipe,
one plain line at the end of the epoch instead (``"50/50 - 2s 31ms/step - loss: 0.3012"``), as
Keras does: a bar redrawn with carriage returns turns a log file into one huge line per epoch.
``verbose=2``: the header and one line per epoch, as Keras's (``"50/50 - 2s - 31ms/step -
loss: 0.3012"``). Keras prints no header when ``fit`` runs a single epoch, nor does hiapi.
``verbose=0``: nothing.
``evaluate`` and ``predict`` show the same bar or line for their pass (``"8/8 - 0s 2ms/step -
loss: 0.3012"``, no metrics for ``predict``), as Keras's do; fit's validation passes show none.
"""
from __future__ import annotations

import sys
import time

from tqdm.auto import tqdm

from hiapi.callbacks.callback import Callback


def format_logs(logs):
    return " - ".join(f"{k}: {format_value(v)}" for k, v in logs.items())


def format_value(value):
    """A logged number as Keras's progress bar writes it: four decimals, or four significant
    digits in scientific notation when it is 0.001 or smaller in magnitude ("2.4393e-04",
    which four decimals would show as "0.0002")."""
    if not isinstance(value, float):
        return f"{value}"
    return f"{value:.4f}" if abs(value) > 1e-3 else f"{value:.4e}"


def _suffix(logs):
    return f" - {format_logs(logs)}" if logs else ""


def format_step_time(seconds):
    """Keras's time per step: "2s/step", "31ms/step" or "850us/step"."""
    if seconds >= 1 or seconds == 0:
        return f"{seconds:.0f}s/step"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.0f}ms/step"
    return f"{seconds * 1e6:.0f}us/step"


def is_interactive(stream):
    """A terminal or a notebook: where a redrawn bar shows as one line (Keras's test too)."""
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) or "ipykernel" in sys.modules


class ProgbarLogger(Callback):
    def __init__(self, verbose: int = 1) -> None:
        super().__init__()
        self.verbose = verbose
        self._bar = None
        self._first_step = None
        self._in_fit = False

    def on_train_begin(self, logs=None):
        self._first_step = None     # fit's first step compiles (numba: up to tens of seconds)
        self._in_fit = True

    def on_epoch_begin(self, epoch, logs=None):
        if self.verbose and self.params["epochs"] > 1:
            print(f"Epoch {epoch + 1}/{self.params['epochs']}", file=sys.stdout, flush=True)
        self._begin_pass(self.verbose == 1, "compiling the train step"
                         if self._first_step is None else None)

    def _begin_pass(self, bar, note=None):
        """Timing for a pass over the data (an epoch, an evaluate or a predict), with a tqdm
        bar when ``bar`` and the output is a terminal."""
        self._start = self._timed_from = time.perf_counter()
        self._seen = self._skipped = 0
        if bar and is_interactive(sys.stdout):
            self._bar = tqdm(total=self.params.get("steps"), unit="step", file=sys.stdout,
                             dynamic_ncols=True, leave=True, mininterval=0.2,
                             bar_format="{n_fmt}/{total_fmt} {bar:20} {elapsed}<{remaining}"
                                        "{postfix}")
            if note:
                self._bar.set_postfix_str(note, refresh=True)

    # evaluate and predict on their own; a validation pass inside fit shows nothing
    def on_test_begin(self, logs=None):
        if not self._in_fit:
            self._begin_pass(self.verbose == 1)

    def on_test_batch_end(self, batch, logs=None):
        if not self._in_fit:
            self._pass_step(batch, logs)

    def on_test_end(self, logs=None):
        if not self._in_fit:
            self._end_pass(logs)

    def on_predict_begin(self, logs=None):
        self._begin_pass(self.verbose == 1)

    def on_predict_batch_end(self, batch, logs=None):
        self._pass_step(batch, None)

    def on_predict_end(self, logs=None):
        self._end_pass(None)

    def _pass_step(self, batch, logs):
        self._seen = batch + 1
        if self._bar is not None:
            self._bar.update(1)
            if logs and (self._bar.n == self._bar.total or batch % 10 == 0):
                self._bar.set_postfix_str(self._step_time() + _suffix(logs), refresh=False)

    def _end_pass(self, logs):
        """The pass's line ("8/8 - 0s 2ms/step - loss: 0.3012"), or the bar closed."""
        suffix = _suffix(logs)
        if self._bar is not None:
            self._bar.set_postfix_str(self._step_time() + suffix, refresh=False)
            self._bar.close()
            self._bar = None
        else:
            print(f"{self._count()} - {time.perf_counter() - self._start:.0f}s "
                  f"{self._step_time()}{suffix}", file=sys.stdout, flush=True)

    def _count(self):
        """Keras's step count of a pass: "94/94"."""
        return f"{self._seen}/{self.params.get('steps') or self._seen}"

    def reads_batch_logs(self, hook, batch):
        """The bar shows the running logs every 10th batch and at the last; a plain line
        (output to a file) or ``verbose=2`` shows only the epoch's (or the pass's)."""
        if hook == "on_predict_batch_end" or hook == "on_test_batch_end" and self._in_fit:
            return False        # predict's outputs are not shown; fit's validation is quiet
        return self._bar is not None and (
            self._first_step is not None or hook != "on_train_batch_end") and (
            batch % 10 == 0 or self._bar.n + 1 == self._bar.total)

    def on_train_batch_end(self, batch, logs=None):
        if self._first_step is None:
            self._seen = batch + 1
            self._leave_out_first_step()
        else:
            self._pass_step(batch, logs)

    def on_epoch_end(self, epoch, logs=None):
        if self.verbose == 2:
            print(f"{self._count()} - {time.perf_counter() - self._start:.0f}s - "
                  f"{self._step_time()}{_suffix(logs)}", file=sys.stdout, flush=True)
        else:
            self._end_pass(logs)

    def _leave_out_first_step(self):
        """The first step of a fit compiles; timing it with the others gave "29470ms/step" and
        a 3-hour ETA on a cold numba cache. Per-step time and ETA start after it; the epoch's
        elapsed time still includes it."""
        self._timed_from = time.perf_counter()
        self._first_step, self._skipped = self._timed_from - self._start, self._seen
        if self._bar is not None:
            self._bar.reset()               # rate and ETA from here on
            self._bar.n = self._bar.last_print_n = self._bar.initial = self._seen
            self._bar.set_postfix_str(f"first step {self._first_step:.1f}s (compiling)")

    def _step_time(self):
        """Keras's "3ms/step" (tqdm's own rate rounds milliseconds to 0.00s/step), leaving out
        the first step of the fit when later steps exist."""
        steps = self._seen - self._skipped
        start = self._timed_from if steps else self._start
        return format_step_time((time.perf_counter() - start) / max(steps or self._seen, 1))

    def on_train_end(self, logs=None):
        self._in_fit = False
        if self._bar is not None:
            self._bar.close()
            self._bar = None
