"""Timeline recorder: Chrome trace events of what a training step spends its time on.

While a ``Recorder`` is active (``hiapi.callbacks.Timeline`` or ``HIAPI_TIMELINE=trace.json``
installs one for the length of ``fit``), the executor records every op it runs, the
distributed ops record each bucket's compression and exchange, and the callback records the
fit-level spans (epoch, train step). Events are Chrome's trace-event format
(https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU): complete
events ``"X"`` with a start ``ts`` and a duration ``dur`` in microseconds, ``pid`` = MPI rank,
``tid`` = a small number per thread (0 = the thread that started recording), and async
``"b"``/``"e"`` pairs for a bucket's exchange in flight between its start and wait ops.

Why a module-level ``ACTIVE`` and not a hook list: the executor reads one global per run and,
when it is None, runs its plain loop; recording costs nothing when it is off.
"""
import contextlib
import threading
import time

ACTIVE = None                     # the Recorder in use, or None (read by the executor per run)
_OFF = contextlib.nullcontext()


class Recorder:
    """Collects trace events of one process. Times are ``time.perf_counter`` seconds, stored
    relative to ``origin`` (the moment every rank left the same barrier, so ranks line up)."""

    def __init__(self, rank=0, origin=None):
        self.rank = rank
        self.origin = time.perf_counter() if origin is None else origin
        self.events = []
        self._threads = {threading.get_ident(): 0}
        self._lock = threading.Lock()

    def _tid(self):
        ident = threading.get_ident()
        tid = self._threads.get(ident)
        if tid is None:
            with self._lock:
                tid = self._threads.setdefault(ident, len(self._threads))
        return tid

    def _us(self, seconds):
        return round((seconds - self.origin) * 1e6, 3)

    def complete(self, name, start, end, cat="op", args=None):
        """A span from ``start`` to ``end`` (perf_counter seconds) on the calling thread."""
        ts = self._us(start)
        event = {"name": name, "cat": cat, "ph": "X", "ts": ts,
                 "dur": max(round(self._us(end) - ts, 3), 0.0), "pid": self.rank,
                 "tid": self._tid()}
        if args:
            event["args"] = args
        self.events.append(event)              # list.append is atomic under the GIL

    @contextlib.contextmanager
    def span(self, name, cat="op", args=None):
        start = time.perf_counter()
        try:
            yield
        finally:
            self.complete(name, start, time.perf_counter(), cat, args)

    def async_event(self, phase, name, ident, cat="exchange", args=None):
        """Begin (``"b"``) or end (``"e"``) of an asynchronous span, such as a bucket's
        exchange that runs between its start and wait ops."""
        event = {"name": name, "cat": cat, "ph": phase, "id": ident,
                 "ts": self._us(time.perf_counter()), "pid": self.rank, "tid": self._tid()}
        if args:
            event["args"] = args
        self.events.append(event)

    def trace_events(self):
        """This process's events with the metadata that names the process and threads."""
        names = {ident: thread.name for thread in threading.enumerate()
                 for ident in [thread.ident]}
        meta = [{"name": "process_name", "ph": "M", "pid": self.rank, "tid": 0,
                 "args": {"name": f"rank {self.rank}"}},
                {"name": "process_sort_index", "ph": "M", "pid": self.rank, "tid": 0,
                 "args": {"sort_index": self.rank}}]
        for ident, tid in sorted(self._threads.items(), key=lambda item: item[1]):
            label = "main" if tid == 0 else names.get(ident, f"thread {tid}")
            meta.append({"name": "thread_name", "ph": "M", "pid": self.rank, "tid": tid,
                         "args": {"name": label}})
        return meta + list(self.events)


def span(name, cat="op", **args):
    """``with timeline.span("compress", cat="compression"):`` records a span when a
    timeline is on, and is a shared no-op context otherwise."""
    recorder = ACTIVE
    return recorder.span(name, cat, args) if recorder is not None else _OFF


def start(recorder):
    """Make ``recorder`` the active one (replacing one left by a fit that raised)."""
    global ACTIVE
    ACTIVE = recorder


def stop():
    global ACTIVE
    ACTIVE = None
