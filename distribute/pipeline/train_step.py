"""The pipelined train step: what ``fit`` calls once per global batch on every stage.

It splits the global batch into ``M`` micro-batches, runs this stage's part of the schedule
(``schedules.py``), receives activations from the previous stage and gradients from the next
(blocking, spinning or yielding the core: ``waiting.py``), sends its own with non-blocking
sends (so a stage never waits for its neighbour to *take* a message), accumulates the
parameter gradients over the micro-batches, and applies one optimizer update: a pipelined
step equals one step on the whole global batch.
The last stage's loss and metric outputs are combined over micro-batches (losses weighted by
size, metric statistics summed, per-sample outputs concatenated) and broadcast, so every rank
returns, and logs, the same numbers.
"""
import time

import numpy as np

from hiapi.distribute.pipeline import waiting
from hiapi.distribute.pipeline.schedules import peak_in_flight

FORWARD, BACKWARD = 0, 1


class PipelineTrainStep:
    def __init__(self, strategy, stage, compiled, counts, schedule):
        self.strategy, self.stage, self.compiled = strategy, stage, compiled
        self.n_inputs, self.n_targets, self.n_weights = counts
        self.schedule = schedule
        self.comm = strategy.pipeline_comm                    # None in one process
        self.stats = strategy.pipeline_stats
        self.waiting = waiting.for_communicator(self.comm)     # spin, or yield the core
        self.stats.waiting = self.waiting.name
        self.stats.stage = stage.index

    @property
    def _executables(self):
        """The stage's compiled backward (the program holding its activations), for
        ``model.memory_report()``: each rank reports its own stage's plan."""
        return self.stage.backward._executables

    def __call__(self, *arguments):
        n_feed = self.n_inputs + self.n_targets + self.n_weights
        feed, optimizer_values = arguments[:n_feed], arguments[n_feed:]
        strategy, stage = self.strategy, self.stage
        total = len(feed[0])
        slices = [s for s in _micro_batches(total, strategy.micro_batches)]
        order = self.schedule(stage.index, strategy.pipeline_stages, len(slices))
        base = {id(c): int(c.numpy()) for c in stage.counters}
        entering, sends, results, accumulated, regularization = {}, [], {}, None, 0.0
        self._waited, self._receive_waits, start = 0.0, [], time.perf_counter()
        for kind, m in order:
            part = slices[m]
            stage.set_counters(lambda c: base[id(c)] + m)
            if kind == "F":
                activation = feed[0][part] if stage.first else self._receive(
                    stage.input_spec, part, stage.index - 1, m, FORWARD)
                entering[m] = activation
                held = sum(a.nbytes for a in entering.values())
                self.stats.peak_held_bytes = max(self.stats.peak_held_bytes, held)
                if not stage.last:
                    began, cpu = time.perf_counter(), time.thread_time()
                    output = stage.forward(activation)
                    self.stats.forward_seconds += time.perf_counter() - began
                    self.stats.forward_cpu_seconds += time.thread_time() - cpu
                    sends.append(self._send(output, stage.index + 1, m, FORWARD))
                continue
            share = np.float32((part.stop - part.start) / total * strategy._replica_share)
            activation = entering.pop(m)
            if stage.last:
                targets = [t[part] for t in feed[self.n_inputs:n_feed]]
                began, cpu = time.perf_counter(), time.thread_time()
                outputs = stage.backward(activation, *targets, share)
                results[m] = outputs[:stage.result_count]
                gradients = outputs[stage.result_count:]
            else:
                upstream = self._receive(stage.output_spec, part, stage.index + 1, m, BACKWARD)
                began, cpu = time.perf_counter(), time.thread_time()
                outputs = stage.backward(activation, upstream, share)
                regularization += float(outputs[0])
                gradients = outputs[1:]
            if stage.sends_gradient:
                sends.append(self._send(gradients[0], stage.index - 1, m, BACKWARD))
                gradients = gradients[1:]
            accumulated = [np.array(g, copy=True) for g in gradients] if accumulated is None \
                else [a.__iadd__(g) for a, g in zip(accumulated, gradients)]
            self.stats.backward_seconds += time.perf_counter() - began
            self.stats.backward_cpu_seconds += time.thread_time() - cpu
            self.stats.micro_batches += 1
        stage.set_counters(lambda c: base[id(c)] + len(slices))
        if strategy.replicas > 1:                 # the stage's gradient over all replicas
            accumulated = _allreduce(strategy.data_communicator, accumulated)
        stage.update(*accumulated, *optimizer_values)
        began = time.perf_counter()
        self.waiting.wait_all([request for _, request in sends])   # (arrays alive till sent)
        self._waited += time.perf_counter() - began
        busy = time.perf_counter() - start - self._waited
        combined, stage_busy = self._share_results(
            results, slices, total, regularization / strategy._replica_share, busy)
        self.stats.record(time.perf_counter() - start, stage_busy, peak_in_flight(order),
                          self._receive_waits)
        return combined

    # ---- messages between neighbouring stages ----------------------------------------------
    def _receive(self, spec, part, source, m, direction):
        shape, dtype = spec
        buffer = np.empty((part.stop - part.start,) + tuple(shape[1:]), dtype)
        began = time.perf_counter()
        self.waiting.receive(self.comm, buffer, source, 2 * m + direction)
        waited = time.perf_counter() - began             # idle: the pipeline's bubble
        self._waited += waited
        self._receive_waits.append(waited)
        return buffer

    def _send(self, array, dest, m, direction):
        array = np.array(array, copy=True)          # the executor may reuse its buffer
        return array, self.comm.Isend(array, dest=dest, tag=2 * m + direction)

    # ---- the step's loss and metrics, the same on every rank --------------------------------
    def _share_results(self, results, slices, total, regularization, busy):
        """The step's results from the last stage to all, and every stage's ``busy`` seconds
        to all (``stats.py`` splits each stage's idle time into bubble and imbalance with
        them). Its collectives are where a stage that finished early waits for the others (the
        step ends together), so that wait counts as idle: without it a stage's idle tail would
        fall outside its step. Returns (results, busy seconds per stage)."""
        combined = self._combine(results, slices, total) if self.stage.last else None
        if self.comm is None:
            return combined, [busy]
        began = time.perf_counter()
        self.waiting.meet(self.comm)
        gathered = self.comm.allgather((regularization, busy))   # in stage order
        combined = self.comm.bcast(combined, root=self.strategy.pipeline_stages - 1)
        self._waited += time.perf_counter() - began
        regularization = sum(r for r, _ in gathered)            # earlier stages' penalties
        combined[0] = combined[0] + np.asarray(regularization, combined[0].dtype)
        return combined, [b for _, b in gathered]

    def _combine(self, results, slices, total):
        compiled = self.compiled
        n_losses = len(compiled.log_names) - len(compiled.metrics or [])
        ordered = [results[m] for m in range(len(slices))]
        shares = [(s.stop - s.start) / total for s in slices]
        combined = [sum(np.asarray(r[i], np.float64) * w for r, w in zip(ordered, shares))
                    .astype(np.asarray(ordered[0][i]).dtype) for i in range(n_losses)]
        position = n_losses
        sizes = compiled._metric_sizes[len(ordered[0])]          # this step's layout
        for (_, metric), size in zip(compiled.metrics or [], sizes):
            for i in range(position, position + size):
                parts = [np.asarray(r[i]) for r in ordered]
                combined.append(sum(parts[1:], parts[0].copy()) if metric.uses_statistics
                                else np.concatenate(parts))
            position += size
        return combined


def _allreduce(communicator, arrays):
    """Sum arrays over ``communicator`` in one message."""
    flat = communicator.allreduce(np.concatenate([a.reshape(-1) for a in arrays]))
    out, offset = [], 0
    for a in arrays:
        out.append(flat[offset:offset + a.size].reshape(a.shape))
        offset += a.size
    return out


def _micro_batches(total, count):
    bounds = np.linspace(0, total, min(count, total) + 1).astype(int)
    return [slice(int(a), int(b)) for a, b in zip(bounds, bounds[1:])]
