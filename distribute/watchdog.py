"""Collective stall inspector: a collective that waits too long ends the job with a report.

A collective only completes when every rank reaches it. If one rank never does (it took
another code path, caught an exception, got fewer batches, or is stuck), the others wait
forever with no message. Like Horovod's stall inspector, hiapi watches every collective the
``MPICommunicator`` runs, blocking or non-blocking, and after ``HIAPI_COLLECTIVE_TIMEOUT``
seconds (default 300) aborts the job with a message naming the operation, the training step
and the ranks that did not arrive.

How, without slowing the normal path: the main thread only counts the collectives it starts
and notes the one it is blocked in (two attribute writes; mpi4py releases the GIL while MPI
blocks). A daemon thread per process wakes every ``poll`` seconds (at most 1 s), answers the
other ranks' questions on a private duplicate of the communicator (``Iprobe``), and notices
when the main thread has sat in the same collective for longer than the timeout. It then asks
every rank how many collectives it has started and what it is doing, waits briefly for the
answers, reports, and calls ``MPI_Abort``. Collectives are started in the same order on every
rank (MPI requires it), so "rank r has started fewer than n" means exactly "rank r has not
reached collective n". A rank too busy or too stuck to answer is reported as such.
"""
from __future__ import annotations

import atexit
import sys
import threading
import time

from hiapi.distribute.abort import abort_job

QUERY, REPLY = 7301, 7302
_watchdogs: dict[int, Watchdog] = {}


def watchdog_for(comm, timeout):
    """The process's watchdog for ``comm`` (one per communicator, made collectively on first
    use), or None when ``timeout`` is None (switched off) or there is a single rank."""
    if timeout is None or comm.Get_size() == 1:
        return None
    key = comm.py2f()
    if key not in _watchdogs:
        _watchdogs[key] = Watchdog(comm, timeout)
    return _watchdogs[key]


def describe(name, array=None):
    """``allreduce of 1024 float32 (4.0 KB)``: what a collective moves, for the report."""
    if array is None:
        return name
    unit, scale = next(((u, s) for u, s in (("GB", 2**30), ("MB", 2**20), ("KB", 2**10))
                        if array.nbytes >= s), ("B", 1))
    return f"{name} of {array.size} {array.dtype} ({array.nbytes / scale:.1f} {unit})"


class Shape:
    """What ``describe`` reads of an array (size, dtype, nbytes), without the array."""

    def __init__(self, array):
        self.size, self.dtype, self.nbytes = array.size, array.dtype, array.nbytes


class Watchdog:
    def __init__(self, comm, timeout, poll=None):
        from mpi4py import MPI
        self.MPI, self.comm = MPI, comm
        self.side = comm.Dup()                   # our questions never meet the user's messages
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self.timeout = float(timeout)
        self.poll = poll or min(1.0, max(0.02, self.timeout / 20))
        self.answer_wait = min(10.0, max(1.0, 4 * self.poll))
        self.started = 0              # collectives this rank has entered or posted
        self.current = None           # (number, name, array, progress) while blocked in one
        self.last = None              # the same for the last one started
        self.progress = None          # "epoch 2, batch 5 (train step 12)", set by the Strategy
        self._inquiry = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="hiapi-collective-watchdog",
                                        daemon=True)
        self._thread.start()
        atexit.register(self.stop)    # before mpi4py's MPI_Finalize (a C-level exit hook)

    # ---- the main thread's side: cheap bookkeeping -----------------------------------------

    def forget_arrays(self):
        """Keep only the shape of the last collective's array: the record would otherwise keep
        it alive, and with it a shared-memory window that could be freed (a recompiled
        model's gradient bucket). Called between collectives (``current`` is None)."""
        last = self.last
        if last is not None and last[2] is not None and not isinstance(last[2], Shape):
            self.last = (last[0], last[1], Shape(last[2]), last[3])

    def enter(self, name, array):
        """The main thread enters blocking collective ``name`` (on ``array``, or None); it
        sets ``current = None`` when the collective returns."""
        self.started += 1
        self.last = self.current = (self.started, name, array, self.progress)

    def stop(self):
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()

    # ---- the watchdog thread ---------------------------------------------------------------
    def _run(self):
        try:
            self._watch()
        except Exception as error:     # never take training down; say the watch has ended
            sys.stderr.write(f"[hiapi rank {self.rank}/{self.size}] the collective stall "
                             f"inspector stopped: {type(error).__name__}: {error}\n")

    def _watch(self):
        # the collective watched is remembered by (number, name), never by its record, and the
        # record is let go before sleeping: it holds the collective's array, and holding that
        # past the call would keep a shared-memory window in use that could be freed
        # (``window_arrays.release_unused``: a recompiled model's gradient bucket)
        seen, since = None, 0.0
        while not self._stop.wait(self.poll):
            self._serve()
            current = self.current
            key = current and current[:2]
            if key != seen:
                seen, since = key, time.monotonic()
            elif current is not None and time.monotonic() - since > self.timeout:
                if self._inspect(current, time.monotonic() - since):
                    return
            current = None

    def _state(self):
        current, last = self.current, self.last
        return {"started": self.started, "last": last and describe(*last[1:3]),
                "current": current and (current[0], describe(*current[1:3])),
                "progress": self.progress}

    def _serve(self):
        """Answer every pending question from a stalled rank."""
        status = self.MPI.Status()
        while self.side.Iprobe(source=self.MPI.ANY_SOURCE, tag=QUERY, status=status):
            inquiry = self.side.recv(source=status.Get_source(), tag=QUERY)
            self.side.send((inquiry, self._state()), dest=status.Get_source(), tag=REPLY)

    def _gather(self):
        """Every rank's state, as far as they answer within ``answer_wait`` seconds."""
        self._inquiry += 1
        for rank in range(self.size):
            if rank != self.rank:
                try:
                    self.side.send(self._inquiry, dest=rank, tag=QUERY)
                except Exception:        # a rank already gone: reported as not answering
                    pass
        states, status = {self.rank: self._state()}, self.MPI.Status()
        deadline = time.monotonic() + self.answer_wait
        while len(states) < self.size and time.monotonic() < deadline:
            self._serve()
            if self.side.Iprobe(source=self.MPI.ANY_SOURCE, tag=REPLY, status=status):
                inquiry, state = self.side.recv(source=status.Get_source(), tag=REPLY)
                if inquiry == self._inquiry:          # not a late answer to an earlier one
                    states[status.Get_source()] = state
            else:
                time.sleep(0.005)
        return states

    def _inspect(self, current, waited):
        """Report and abort; returns False if the collective completed meanwhile."""
        states = self._gather()
        if self.current is not current:
            return False
        sys.stderr.write(stall_report(self.rank, self.size, current, waited, self.timeout,
                                      states, self.answer_wait))
        abort_job(self.comm, 1)
        return True


def stall_report(rank, size, current, waited, timeout, states, answer_wait):
    """The message: which collective, where in training, and what every rank is doing."""
    number, what, progress = current[0], describe(*current[1:3]), current[3]
    missing, lines = [], []
    for other in range(size):
        state = states.get(other)
        if state is None:
            missing.append(other)
            lines.append(f"  rank {other}: did not answer within {answer_wait:g} s (busy "
                         f"holding the interpreter, hung, or dead)")
        elif state["started"] < number:
            missing.append(other)
            doing = f"blocked in collective #{state['current'][0]} ({state['current'][1]})" \
                if state["current"] else "running outside any collective"
            lines.append(f"  rank {other}: has not reached it (started {state['started']} "
                         f"collectives, the last: {state['last'] or 'none'}); {doing}"
                         + (f"; its last train step: {state['progress']}"
                            if state["progress"] else ""))
        elif state["current"] is None:
            lines.append(f"  rank {other}: started it but is not waiting for it (busy "
                         f"elsewhere)" + (f"; its last train step: {state['progress']}"
                                          if state["progress"] else ""))
        elif state["current"][0] == number and state["current"][1] != what:
            missing.append(other)
            lines.append(f"  rank {other}: called a different collective in its place: "
                         f"{state['current'][1]} (the ranks disagree on the sequence of "
                         f"collectives)")
        else:
            lines.append(f"  rank {other}: waiting in collective #{state['current'][0]}"
                         + ("" if state["current"][0] == number else
                            f" ({state['current'][1]})"))
    where = f"; this rank's last train step: {progress}" if progress else ""
    return (f"[hiapi rank {rank}/{size}] collective stall: {what} (collective #{number}"
            f"{where}) has waited {waited:.1f} s, longer than HIAPI_COLLECTIVE_TIMEOUT="
            f"{timeout:g} s. Ranks that did not arrive: {missing}.\n" + "\n".join(lines) +
            "\nThe ranks are running different code paths (a condition on the rank, different "
            "amounts of data, an exception caught on one rank) or one is stuck. Aborting the "
            "job.\n")
