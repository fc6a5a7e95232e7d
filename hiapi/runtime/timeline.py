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
        self.spans = []            # (name, cat, start, end, thread ident, args): cheap to add
        self.marks = []            # (phase, name, id, cat, time, thread ident, args)
        self._main = threading.get_ident()

    def complete(self, name, start, end, cat="op", args=None):
        """A span from ``start`` to ``end`` (perf_counter seconds) on the calling thread.
        A tuple is appended (atomic under the GIL); ``trace_events`` builds the JSON later,
        so the executor pays about a microsecond per op."""
        self.spans.append((name, cat, start, end, threading.get_ident(), args))

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
        self.marks.append((phase, name, ident, cat, time.perf_counter(),
                           threading.get_ident(), args))

    def trace_events(self):
        """This process's events as Chrome trace-event dicts (µs since ``origin``), with the
        metadata that names the process and its threads (tid 0: the recording thread)."""
        idents = [self._main] + [t for t in dict.fromkeys(
            [s[4] for s in self.spans] + [m[5] for m in self.marks]) if t != self._main]
        tids = {ident: tid for tid, ident in enumerate(idents)}
        us = lambda seconds: round((seconds - self.origin) * 1e6, 3)
        events = []
        for name, cat, start, end, ident, args in self.spans:
            ts = us(start)
            events.append({"name": name, "cat": cat, "ph": "X", "ts": ts,
                           "dur": max(round(us(end) - ts, 3), 0.0), "pid": self.rank,
                           "tid": tids[ident], **({"args": args} if args else {})})
        for phase, name, ident, cat, when, thread, args in self.marks:
            events.append({"name": name, "cat": cat, "ph": phase, "id": ident, "ts": us(when),
                           "pid": self.rank, "tid": tids[thread],
                           **({"args": args} if args else {})})
        names = {thread.ident: thread.name for thread in threading.enumerate()}
        meta = [{"name": "process_name", "ph": "M", "pid": self.rank, "tid": 0,
                 "args": {"name": f"rank {self.rank}"}},
                {"name": "process_sort_index", "ph": "M", "pid": self.rank, "tid": 0,
                 "args": {"sort_index": self.rank}}]
        for ident, tid in tids.items():
            label = "main" if tid == 0 else names.get(ident, f"thread {tid}")
            meta.append({"name": "thread_name", "ph": "M", "pid": self.rank, "tid": tid,
                         "args": {"name": label}})
        return meta + events


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
