"""``ProgbarLogger``: Keras-style progress output on tqdm.

``verbose=1``: an ``Epoch i/n`` header and a bar with step counter, time, ETA, and the running
loss and metrics. ``verbose=2``: one line per epoch. ``verbose=0``: nothing.
"""
import sys
import time

from tqdm.auto import tqdm

from hiapi.callbacks.callback import Callback


def format_logs(logs):
    return " - ".join(f"{k}: {v:.4f}" if isinstance(v, float) else f"{k}: {v}"
                      for k, v in logs.items())


class ProgbarLogger(Callback):
    def __init__(self, verbose=1):
        super().__init__()
        self.verbose = verbose
        self._bar = None

    def on_epoch_begin(self, epoch, logs=None):
        self._start = time.perf_counter()
        self._seen = 0
        if self.verbose == 1:
            print(f"Epoch {epoch + 1}/{self.params['epochs']}", file=sys.stdout, flush=True)
            self._bar = tqdm(total=self.params.get("steps"), unit="step", file=sys.stdout,
                             dynamic_ncols=True, leave=True, mininterval=0.2,
                             bar_format="{n_fmt}/{total_fmt} {bar:20} {elapsed}<{remaining}"
                                        "{postfix}")

    def on_train_batch_end(self, batch, logs=None):
        self._seen = batch + 1
        if self._bar is not None:
            self._bar.update(1)
            if logs and (self._bar.n == self._bar.total or batch % 10 == 0):
                self._bar.set_postfix_str(self._step_time() + format_logs(logs), refresh=False)

    def on_epoch_end(self, epoch, logs=None):
        elapsed = time.perf_counter() - self._start
        if self._bar is not None:
            self._bar.set_postfix_str(self._step_time() + format_logs(logs or {}),
                                      refresh=False)
            self._bar.close()
            self._bar = None
        elif self.verbose == 2:
            steps = self._seen or 1
            print(f"Epoch {epoch + 1}/{self.params['epochs']} - {self._seen} steps - "
                  f"{elapsed:.1f}s - {1000 * elapsed / steps:.0f}ms/step - "
                  f"{format_logs(logs or {})}", file=sys.stdout, flush=True)

    def _step_time(self):
        """Keras's "3ms/step" (tqdm's own rate rounds milliseconds to 0.00s/step)."""
        milliseconds = 1000 * (time.perf_counter() - self._start) / max(self._seen, 1)
        return f"{milliseconds:.0f}ms/step - "

    def on_train_end(self, logs=None):
        if self._bar is not None:
            self._bar.close()
            self._bar = None
