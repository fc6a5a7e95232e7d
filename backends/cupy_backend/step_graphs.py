"""A compiled step recorded once as a CUDA graph and replayed with one launch per call.

A step of a small model is 50-100 kernels, each launched from Python at 5-20 us: on a GPU that
finishes each of them in a few microseconds, the host's launches are the step's time (the
MNIST convnet ran at 0.4-0.7x torch's throughput, torch's own launches being C++). CUDA graphs
remove that cost: the step's kernel launches are recorded once (stream capture), then the whole
recording is launched at every call, as torch's ``CUDAGraph`` and JAX's compiled executables
do. The executor's memory plan makes this possible, since every value already has a fixed
address in the arena. What a recording needs besides:

- **Fixed inputs.** The batch is copied into buffers kept with the graph (one device copy per
  input) and the graph reads those.
- **Fixed state.** The graph reads and writes the Variables' storage arrays it was recorded
  with. A Variable whose array was replaced (``variable.value = new_array``, a new optimizer
  slot) makes the next call record again; a step whose Variables change at every call stops
  recording after ``MAX_RECORDINGS`` and runs as before.
- **Temporaries.** What kernels allocate while being recorded (cuBLAS products, reductions'
  scratch, the deferred checks' status arrays) comes from a memory pool of the step's own,
  which nothing else allocates from, so replays can keep using those addresses.
- **Deferred checks.** The label and index checks write status arrays inside the graph; after
  each replay the same arrays are registered again, so a bad label still raises at the step's
  copy to the host, with numpy's message, before any Variable is written.
- **Commit after the checks.** The updates' copies into the Variables are a second, small
  graph, launched only once the checks have passed (as the unrecorded step does).

The first ``WARMUP`` calls run unrecorded (cupy compiles its kernels and cuBLAS picks its
algorithms at a first call), so a step called once or twice never pays for a recording. A
step whose kernels cannot be recorded (one that reads the device from the host mid-step)
fails the recording, and then runs unrecorded for good; ``reason`` says why.
``HIAPI_CUDA_GRAPHS=0`` turns recording off; collectives (a step with an allreduce's wait)
are never recorded.
"""
import operator

import cupy

from hiapi.runtime import environment


class StepGraphs:
    WARMUP = 2              # unrecorded calls before the first recording
    MAX_RECORDINGS = 4      # recordings of one step before it stays unrecorded

    def __init__(self, executable, checks):
        self.executable = executable
        self.checks = checks            # the backend's DeferredChecks
        self.calls = 0
        self.recordings = 0
        self.replays = 0
        self.reason = None              # why this step runs unrecorded, once it does for good
        self.graph = self.commit_graph = None
        self.storages = ()              # the Variables' arrays the graphs were recorded with
        self.inputs = {}                # input slot -> the buffer the graph reads
        self.recorded_checks = []
        self.replayed = False           # whether this call's steps were a replay
        self.pool = self.stream = None  # made at the first recording (most steps never record)

    @classmethod
    def for_executable(cls, executable, checks):
        if not environment.cuda_graphs() or executable.called_views or not executable.steps:
            return None
        return cls(executable, checks)

    def run_steps(self, bufs):
        """Replay (recording first where needed); False: the caller runs the steps itself."""
        self.replayed = False
        if self.reason is not None:
            return False
        self.calls += 1
        if self.calls <= self.WARMUP:
            return False
        slots = self.executable.state_slots
        if self.graph is None or \
                not all(map(operator.is_, (bufs[i] for i, _ in slots), self.storages)):
            if not self._record(bufs):
                return False
        else:
            self._feed(bufs)
        self.graph.launch()                         # on the current stream, after the copies
        self.checks.extend(self.recorded_checks)
        self.replays += 1
        self.replayed = True
        return True

    def commit(self, bufs):
        """The updates' copies as one launch, after the checks passed; False: not replayed.
        The executor calls it only for a step with updates."""
        if not self.replayed:
            return False
        self.replayed = False
        if self.commit_graph is None:
            try:
                self.commit_graph = self._recorded(lambda: self.executable.commit(bufs))[0]
            except Exception as error:      # noqa: BLE001 (cupy raises several types here)
                self._give_up(f"the updates could not be recorded: {error}")
                return False
        self.commit_graph.launch()
        return True

    def _record(self, bufs):
        if self.recordings >= self.MAX_RECORDINGS:
            self._give_up(f"its Variables' arrays changed after {self.recordings} recordings")
            return False
        self.recordings += 1
        self.graph = self.commit_graph = None
        executable = self.executable
        self.inputs = {i: cupy.empty_like(bufs[i]) for i in executable.input_slots
                       if i is not None}
        self._feed(bufs)                            # the recording reads the kept buffers
        try:
            self.graph, self.recorded_checks = self._recorded(
                lambda: executable.run_steps(bufs))
        except Exception as error:          # noqa: BLE001 (CUDARuntimeError, RuntimeError, ...)
            self._give_up(f"its kernels could not be recorded: {error}")
            return False
        self.storages = tuple(bufs[i] for i, _ in executable.state_slots)
        return True

    def _feed(self, bufs):
        """This call's inputs copied into the buffers the graph reads (queued before it)."""
        for i, buffer in self.inputs.items():
            fed = bufs[i]
            if fed is not buffer:
                cupy.copyto(buffer, fed)
                bufs[i] = buffer

    def _recorded(self, work):
        """``work()`` recorded on this step's stream, with its allocations from this step's
        pool: (the graph, the deferred checks its kernels registered)."""
        if self.pool is None:
            self.pool = cupy.cuda.MemoryPool()      # the recordings' temporaries, theirs alone
            self.stream = cupy.cuda.Stream(non_blocking=True)  # the legacy one can't record
        mark = self.checks.mark()
        with cupy.cuda.using_allocator(self.pool.malloc), self.stream:
            self.stream.begin_capture()
            try:
                work()
            except BaseException:
                try:
                    self.stream.end_capture()
                except Exception:       # noqa: BLE001  (an invalidated capture also raises)
                    pass
                self.checks.take_since(mark)
                raise
            graph = self.stream.end_capture()
        return graph, self.checks.take_since(mark)

    def _give_up(self, reason):
        self.reason = reason
        self.graph = self.commit_graph = None
        self.inputs, self.storages, self.recorded_checks = {}, (), []
