"""``use_multiprocessing=True``: batches read by ``workers`` spawned processes, in order.

Spawned, not forked: a forked child would copy the training process whole, its model, its
compiled steps and their buffers, and inherit locks held by the BLAS and step threads. A
spawned one starts a fresh interpreter and gets only the pickled dataset (so the dataset must
pickle: define it at module level of an importable module, and guard a script's training
code with ``if __name__ == "__main__":``, which spawning imports again). Each worker runs
with one thread per pool (``HIAPI_NUM_THREADS=1``), and the training process's budget gives
up the cores the workers take (``threads.loader_workers``).

Batch j of an epoch goes to worker j % workers, so each worker's answers come back in the
order the step takes them; at most ``max_queue_size`` are asked for ahead. The workers live
as long as the loader (across epochs, so an epoch does not pay for starting interpreters)
and are stopped by ``close()``, when the loader is collected, or at once when an epoch ends
early or with an error. They receive the dataset once, or again at every epoch when its class
overrides ``on_epoch_begin``/``on_epoch_end`` (where a dataset changes itself between epochs):
a dataset holding its arrays is sent whole each time (63 MB of MNIST took longer to pickle
and send to two workers than the epoch's batches).

Failures: an exception in ``__getitem__`` is raised again here, its worker's traceback
attached as ``__cause__`` (as ``concurrent.futures`` does); a worker that dies (killed,
out of memory, a crash in native code) is a ``WorkerDied`` naming it, its pid and the signal,
found by polling its liveness while waiting, never a hang."""
import multiprocessing
import os
import pickle
import signal
import weakref
from collections import deque

from hiapi.runtime import threads
from hiapi.utils.loaders import process_worker
from hiapi.utils.py_dataset import PyDataset

POLL_SECONDS = 0.1
STOP_SECONDS = 2.0        # a worker asked to leave gets this long before it is terminated
WORKER_ENV = {"HIAPI_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}


class WorkerDied(RuntimeError):
    """A ``use_multiprocessing=True`` worker process ended without being asked to."""


class RemoteTraceback(Exception):
    """The traceback of an exception raised in a worker process, as text."""

    def __init__(self, text):
        super().__init__(text)
        self.text = text

    def __str__(self):
        return f'\n"""\n{self.text}"""'


class ProcessLoader:
    def __init__(self, dataset, workers, max_queue_size):
        self.dataset, self.workers, self.ahead = dataset, workers, max(1, max_queue_size)
        self.pool = []             # (process, connection), started at the first epoch
        self._finalizer = None
        self.changes = any(getattr(type(dataset), hook) is not getattr(PyDataset, hook)
                           for hook in ("on_epoch_begin", "on_epoch_end"))
        self.sent = False          # the workers hold the dataset

    def items(self, indices):
        indices = [int(index) for index in indices]
        try:
            payload = pickle.dumps(self.dataset) if self.changes or not self.sent else None
        except Exception as error:
            raise TypeError(f"PyDataset {type(self.dataset).__name__}: use_multiprocessing="
                            f"True sends the dataset to worker processes, but it cannot be "
                            f"pickled ({error}); define it at module level, keep no open "
                            f"files or locks in it, or use threads (use_multiprocessing="
                            f"False)") from error
        finished = False
        try:
            with threads.loader_workers(self.workers):
                self._start()
                if payload is not None:
                    for _, conn in self.pool:
                        conn.send(("dataset", payload))
                    self.sent = True
                asked = 0
                for j in range(len(indices)):
                    while asked < len(indices) and asked - j < self.ahead:
                        self.pool[asked % self.workers][1].send(("index", indices[asked]))
                        asked += 1
                    batch = self._receive(j % self.workers, indices[j])
                    # all answered: the pool is in step even if the caller stops here
                    finished = j == len(indices) - 1
                    yield batch
            finished = True
        finally:            # stopped early or failed: answers in flight would be out of step
            if not finished:
                self.close()

    def _start(self):
        if self.pool:
            return
        context = multiprocessing.get_context("spawn")
        saved = {name: os.environ.get(name) for name in WORKER_ENV}
        os.environ.update(WORKER_ENV)      # what a spawned interpreter starts with
        try:
            for k in range(self.workers):
                mine, theirs = context.Pipe()
                process = context.Process(target=process_worker.serve, args=(theirs,),
                                          name=f"hiapi-loader-{k}", daemon=True)
                process.start()
                theirs.close()          # so the pipe reports EOF once the worker is gone
                self.pool.append((process, mine))
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
        self._finalizer = weakref.finalize(self, _stop, list(self.pool))

    def _receive(self, worker, index):
        process, conn = self.pool[worker]
        while not conn.poll(POLL_SECONDS):
            if process.exitcode is not None and not conn.poll(0):
                raise WorkerDied(_death(process, index))
        try:
            kind, value = conn.recv()
        except (EOFError, OSError):
            process.join(STOP_SECONDS)
            raise WorkerDied(_death(process, index)) from None
        if kind == "error":
            raise _rebuilt(value)
        return value

    def close(self):
        """Stop the workers (asked to leave, then terminated, then killed)."""
        if self._finalizer is not None:
            self._finalizer()
        self.pool, self._finalizer, self.sent = [], None, False

    @property
    def pids(self):
        return [process.pid for process, _ in self.pool]


def _stop(pool):
    for process, conn in pool:
        try:
            conn.send(None)
        except (OSError, ValueError):
            pass
    for process, conn in pool:
        process.join(STOP_SECONDS)
        if process.exitcode is None:
            process.terminate()
            process.join(STOP_SECONDS)
        if process.exitcode is None:
            process.kill()
            process.join()
        conn.close()


def _death(process, index):
    code = process.exitcode
    how = (f"killed by signal {signal.Signals(-code).name}" if code is not None and code < 0
           else f"exit code {code}")
    return (f"PyDataset worker process {process.name!r} (pid {process.pid}) died ({how}) "
            f"while loading batch {index}; a worker killed for memory is the usual cause: "
            f"lower workers or max_queue_size")


def _rebuilt(info):
    """The worker's exception, to raise here, its traceback as the cause."""
    error = None
    if info["payload"] is not None:
        try:
            error = pickle.loads(info["payload"])
        except Exception:
            error = None
    if not isinstance(error, BaseException):
        error = RuntimeError(f"{info['type']}: {info['message']} (in a PyDataset worker "
                             f"process, {info['where']})")
    elif hasattr(error, "add_note"):          # Python 3.11+: shown under the message
        error.add_note(f"(in a PyDataset worker process, {info['where']})")
    error.__cause__ = RemoteTraceback(info["traceback"])
    return error
