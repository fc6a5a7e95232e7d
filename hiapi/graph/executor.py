"""``Executable``: one compiled graph for one set of concrete input shapes.

Compiling binds every shape, plans memory (``hiapi.graph.memory``: one arena, each value at an
offset, buffers reused once their values are dead, in place where an op allows it), and turns
the graph into a flat list of steps (kernel, output slot, input slots, attributes); running is
one loop over that list with no shape inference and no allocation by the executor.
``memory="none"`` gives every value its own buffer instead (for comparison and bisection).
"""
import operator
import time

import numpy as np

from hiapi.runtime import state_writes, timeline
from hiapi.graph.memory import plan_memory
from hiapi.graph.memory.scratch import place_scratch, scratch_requests
from hiapi.graph.op import Spec
from hiapi.graph.ops.sources import Placeholder, Read
from hiapi.graph.schedule import execution_order


class Executable:
    tuner = None        # a step's thread tuner (``Function(tuned=True)`` sets one)

    def __init__(self, inputs, outputs, updates, input_shapes, backend, memory="plan"):
        self.backend = backend
        roots = list(outputs) + [value for _, value in updates]
        order = execution_order(roots)
        slot = {var: i for i, var in enumerate(order)}
        fed = dict(zip(inputs, input_shapes))
        self.specs = {}
        for var in order:
            self.specs[var] = self._infer(var, fed)
        self.plan = plan_memory(order, self.specs, roots) if memory == "plan" else None
        self.scratch = scratch_requests(order, self.specs, backend)     # kernel workspaces
        if self.plan is not None:
            place_scratch(self.plan, order, self.scratch)
        self.buffers = [None] * len(order)
        self.reads, self.steps = [], []
        self.views = {}         # a view step's output slot -> (its inputs, the view) last run
        self.called_views = set()   # view steps run at every call (a collective's wait)
        allocate = self._arena_allocator(backend) if self.plan else \
            (lambda var, spec: backend.empty(spec.shape, spec.dtype))
        for var in order:
            self._bind(var, self.specs[var], slot, backend, allocate)
        self.order = order
        self.input_slots = [slot.get(var) for var in inputs]
        self.output_slots = [slot[var] for var in outputs]
        update_slots = [(variable, slot[value], _may_alias_state(value))
                        for variable, value in updates]
        # A backend whose kernels check input on the device and raise later (cupy: an
        # out-of-range label or embedding index) gets no in-place updates: its Variables are
        # written after the checks pass, so a failed step leaves them untouched, as on numpy.
        self.checks = getattr(backend, "checks", None)
        self.direct_updates = [] if self.checks is not None else \
            self._direct_updates(update_slots)
        direct = {i for i, _ in self.direct_updates}
        self.update_slots = [u for u in update_slots if u[1] not in direct]
        # slots bound to Variable storage each run: old values read, new values written in place
        self.state_slots = self.reads + self.direct_updates
        self.writes_state = bool(updates)
        # a backend may run the steps as one recorded graph (cupy: CUDA graphs), or None
        self.replay = backend.step_replay(self)

    def _direct_updates(self, update_slots):
        """``(slot, variable)`` for update values whose op can write straight into the
        Variable's storage, saving a copy of every parameter and optimizer slot per step.

        Safe when every reader of the old value (through its Read or any view of it) runs
        before the producing op, or is that op itself reading it element for element
        (``Op.may_overwrite`` that input, same shape); when the old value is not an output;
        when nothing is computed in place into the update value's buffer; and when no update
        value aliases state (those are copied before any Variable is written)."""
        if any(alias for _, _, alias in update_slots):
            return []
        memory_of = {i: i for i, _ in self.reads}          # slot -> the Read whose memory it is
        produced_at, readers = {}, {}
        for n, (_, out, ins, _, view) in enumerate(self.steps):
            produced_at[out] = n
            for j in ins:
                readers.setdefault(j, []).append(n)
            if view and ins and ins[0] in memory_of:
                memory_of[out] = memory_of[ins[0]]
        hosts = set(self.plan.shares.values()) - set(self.plan.shares) if self.plan else set()
        outputs = {memory_of.get(i) for i in self.output_slots}
        direct, seen = [], set()
        for variable, i, _ in update_slots:
            var, n = self.order[i], produced_at.get(i)
            if id(variable) in seen:
                continue
            seen.add(id(variable))
            if n is None or self.steps[n][4] or getattr(var.op, "stateful", False) or \
                    var in hosts or tuple(variable.storage.shape) != self.specs[var].shape or \
                    variable.storage.dtype != self.specs[var].dtype:
                continue
            old = [r for r, v in self.reads if v is variable]
            if any(r in outputs for r in old):
                continue
            if all(k < n or (k == n and j in old and self._overwrites(n, j, var))
                   for j, root in memory_of.items() if root in old
                   for k in readers.get(j, ())):
                direct.append((i, variable))
        return direct

    def _overwrites(self, n, j, var):
        """Step ``n`` (computing ``var``) may write over its input slot ``j`` element for
        element: every place it reads ``j`` is an input it may overwrite, of its shape."""
        return self.specs[self.order[j]].shape == self.specs[var].shape and all(
            var.op.may_overwrite(k) for k, slot in enumerate(self.steps[n][2]) if slot == j)

    def _infer(self, var, fed):
        op = var.op
        if isinstance(op, Placeholder):
            if var not in fed:
                raise ValueError(f"the graph needs placeholder {var.name or var!r}, which is "
                                 f"not among the Function's inputs")
            return Spec(tuple(fed[var]), op.dtype)
        if op.is_source:
            return Spec(*op.infer())
        try:
            return Spec(*op.infer(*(self.specs[i] for i in var.inputs)))
        except (ValueError, TypeError) as error:
            raise type(error)(f"{error} (while compiling for the fed input shapes)") from error

    def _arena_allocator(self, backend):
        plan = self.plan
        self.arena = backend.empty((plan.arena_bytes,), np.uint8)
        placed = {}

        def allocate(var, spec):
            host = plan.shares.get(var, var)
            if host in placed:
                return placed[host]
            offset, count = plan.offsets[host], int(np.prod(spec.shape))
            raw = self.arena[offset:offset + count * spec.dtype.itemsize]
            placed[host] = raw.view(spec.dtype).reshape(spec.shape)
            return placed[host]
        return allocate

    def _bind(self, var, spec, slot, backend, allocate):
        op, i = var.op, slot[var]
        if isinstance(op, Read):
            self.reads.append((i, op.variable))
        elif isinstance(op, Placeholder):
            pass
        elif op.is_source:
            self.buffers[i] = backend.asarray(op.value)
        elif (value := op.value_from_shapes(*(self.specs[v] for v in var.inputs))) is not None:
            self.buffers[i] = backend.asarray(value)      # known from the shapes: no step
        else:
            kernel = backend.kernel(op, [spec] + [self.specs[v] for v in var.inputs])
            view = op.view_of is not None
            if not view:
                self.buffers[i] = allocate(var, spec)
            elif getattr(op, "stateful", False):
                self.called_views.add(i)        # its kernel does more than view: call it
            attrs = op.attrs()
            if var in self.scratch:
                attrs = {**attrs, "workspace": self._workspace(var, backend)}
            self.steps.append((kernel, i, tuple(slot[v] for v in var.inputs), attrs, view))

    def _workspace(self, var, backend):
        """The kernel's planned scratch: its block of the arena (its own buffer unplanned)."""
        nbytes = self.scratch[var]
        if self.plan is None:
            return backend.empty((nbytes,), np.uint8)
        offset = self.plan.scratch[var]
        return self.arena[offset:offset + nbytes]

    def run(self, arrays, times=None):
        """Run once. ``times``, a list with one float per step, gets each step's seconds added
        (the profiler's path; the plain path does no timing)."""
        # Overflow and invalid values are reported where they matter (the trainer stops on a
        # non-finite loss); warnings from inside kernels would only repeat it, once per op.
        # numpy's switch also covers the host-side numpy that other backends call; GPU kernels
        # raise no floating-point warnings.
        with np.errstate(all="ignore"):
            return self._run(arrays, times)

    def _run(self, arrays, times):
        if self.writes_state:
            state_writes.note()         # before: caches of Variable values are stale from here
        bufs = self.buffers
        for i, array in zip(self.input_slots, arrays):
            if i is not None:
                bufs[i] = array
        for i, variable in self.state_slots:
            bufs[i] = variable.storage
        tracer, replay = timeline.ACTIVE, None
        if times is None and tracer is None:
            # a device backend may replay the steps as one recorded graph (not while timed)
            replay = self.replay
            if replay is None or not replay.run_steps(bufs):
                self.run_steps(bufs)
        elif times is None:
            self._traced_steps(bufs, tracer)
        else:
            self._timed_steps(bufs, times)
        to_numpy = self.backend.to_numpy
        results = [to_numpy(bufs[i]).copy() for i in self.output_slots]
        if self.checks is not None:
            self.checks.verify()            # also when there are no outputs to copy back
        if self.update_slots and (replay is None or not replay.commit(bufs)):
            self.commit(bufs)
        return results

    def run_steps(self, bufs):
        """Every step once, in order: the plain path (and what a device backend records)."""
        for kernel, out, ins, attrs, view in self.steps:
            if view:
                bufs[out] = self._view(kernel, out, [bufs[j] for j in ins], attrs)
            else:
                kernel(bufs[out], *[bufs[j] for j in ins], **attrs)

    def commit(self, bufs):
        """Write the update values into their Variables (after every check has passed)."""
        new_values = [(variable, bufs[i].copy() if alias else bufs[i])
                      for variable, i, alias in self.update_slots]
        for variable, value in new_values:
            self.backend.copy_into(variable.storage, value)

    def _view(self, kernel, out, args, attrs):
        """A view step's output: the last run's view object when its inputs are the same
        arrays (a view of an unchanged array is the same memory), else a new view. Kernels
        recognise the buffers of their last call by identity (``fused_elementwise``'s fast
        path); a new view object at every run sent each fused loop that reads one (a
        softmax's gradient, through ``expand_dims``) down the full path: 19 us against 3."""
        last = self.views.get(out)
        if last is not None and all(map(operator.is_, args, last[0])):
            return last[1]
        view = kernel(*args, **attrs)
        # kept only if it is memory of an input (a reshape that had to copy is a snapshot) and
        # the kernel does nothing else (a stateful view, such as a collective's wait, runs)
        if out not in self.called_views and self.backend.xp.may_share_memory(view, args[0]):
            self.views[out] = (args, view)
        return view

    def _traced_steps(self, bufs, tracer):
        """The op loop with one timeline event per op (``hiapi.timeline``, while on)."""
        clock, record = time.perf_counter, tracer.complete
        for kernel, out, ins, attrs, view in self.steps:
            start = clock()
            if view:
                bufs[out] = self._view(kernel, out, [bufs[j] for j in ins], attrs)
            else:
                kernel(bufs[out], *[bufs[j] for j in ins], **attrs)
            record(self.order[out].op.name, start, clock())

    def _timed_steps(self, bufs, times):
        """Each op timed alone: on a device backend the queue is drained before and after it,
        so the time is the kernel's, not its launch's."""
        synchronize = self.backend.synchronize
        synchronize()
        for n, (kernel, out, ins, attrs, view) in enumerate(self.steps):
            start = time.perf_counter()
            if view:
                bufs[out] = self._view(kernel, out, [bufs[j] for j in ins], attrs)
            else:
                kernel(bufs[out], *[bufs[j] for j in ins], **attrs)
            synchronize()
            times[n] += time.perf_counter() - start


def _may_alias_state(var):
    """True when ``var`` may share memory with a Variable (a read or a view of one): such an
    update value is copied before any Variable is written, so every update sees old values."""
    while var.op.view_of is not None:
        var = var.inputs[var.op.view_of]
    return isinstance(var.op, Read)
