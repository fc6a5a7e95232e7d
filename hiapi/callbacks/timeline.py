"""``Timeline(path)``: write a Chrome trace of ``fit`` (open it in https://ui.perfetto.dev or
chrome://tracing), as Horovod's timeline does.

    model.fit(x, y, epochs=1, callbacks=[hiapi.callbacks.Timeline("trace.json")])
    HIAPI_TIMELINE=trace.json mpiexec -n 2 python train.py      # the same without code

The trace holds the fit-level spans (``epoch``, ``train step``), every op the executor runs,
and under a ``hiapi.distribute.Strategy`` each bucket's allreduce start and wait, each
compression and each compressed exchange in flight. One process per rank (``pid`` = rank):
at the end of ``fit`` rank 0 gathers every rank's events and writes the one merged file
(atomically), so one file shows all ranks side by side. Ranks' clocks are aligned on a barrier
at the start of ``fit``.
"""
import json
import time

import numpy as np

from hiapi.runtime import environment, timeline
from hiapi.runtime.atomic import atomic_write
from hiapi.callbacks.callback import Callback


class Timeline(Callback):
    """Records a Chrome trace-event JSON file of training at ``path``."""

    def __init__(self, path):
        super().__init__()
        if not isinstance(path, (str, bytes)) and not hasattr(path, "__fspath__"):
            raise TypeError(f"Timeline: path must be a file name, got {path!r}")
        self.path = path
        self.recorder = None
        self._epoch = self._epoch_start = self._step_start = None

    def _communicator(self):
        return getattr(getattr(self.model, "distribution", None), "communicator", None)

    def on_train_begin(self, logs=None):
        communicator = self._communicator()
        if communicator is not None and communicator.size > 1:
            communicator.barrier()               # every rank's time 0 is the same moment
        rank = communicator.rank if communicator is not None else 0
        self.recorder = timeline.Recorder(rank)
        timeline.start(self.recorder)

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch, self._epoch_start = epoch, time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        if self.recorder is not None and self._epoch_start is not None:
            self.recorder.complete("epoch", self._epoch_start, time.perf_counter(), "fit",
                                   {"epoch": epoch})

    def on_train_batch_begin(self, batch, logs=None):
        self._step_start = time.perf_counter()

    def reads_batch_logs(self, hook, batch):
        return False

    def on_train_batch_end(self, batch, logs=None):
        if self.recorder is not None and self._step_start is not None:
            self.recorder.complete("train step", self._step_start, time.perf_counter(), "fit",
                                   {"epoch": self._epoch, "batch": batch})

    def on_train_end(self, logs=None):
        recorder, self.recorder = self.recorder, None
        timeline.stop()
        if recorder is None:
            return
        events = recorder.trace_events()
        communicator = self._communicator()
        if communicator is not None and communicator.size > 1:
            mine = np.frombuffer(json.dumps(events).encode(), np.uint8)
            gathered, sizes = communicator.allgather(mine)
            if communicator.rank != 0:
                return
            events = [event for part in np.split(gathered, np.cumsum(sizes)[:-1])
                      for event in json.loads(part.tobytes())]
        document = json.dumps({"traceEvents": events, "displayTimeUnit": "ms"}).encode()
        atomic_write(self.path, lambda handle: handle.write(document))


def from_environment(callbacks):
    """``[Timeline(path)]`` for ``fit`` when ``HIAPI_TIMELINE`` names a file and the
    ``callbacks`` hold no ``Timeline`` already, else ``[]``."""
    path = environment.timeline_path()
    if not path or any(isinstance(c, Timeline) for c in callbacks):
        return []
    return [Timeline(path)]
