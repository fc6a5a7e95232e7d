"""The serve loop a server rank runs inside ``fit``: receive pushes, update its shard, reply.

The server owns whole parameter tensors (``Layout``) and their optimizer slots: the model's
own optimizer, built on the owned parameters only, applied by a compiled ``Function`` whose
inputs are the gradients (one update per call, learning rate and update number from the
optimizer as in ``fit``, so schedules and clipping behave as in one process).

Worker 0 may ask for the shard's state (``state``) before it writes a checkpoint, and gives
the slots back with its ``init`` (``optimizer_state``), so a resumed job continues its momentum
and moments instead of restarting them.

A worker not heard from for ``worker_timeout`` seconds while it has work left is declared
dead: it no longer counts as active (a synchronous step stops waiting for it), and if it ever
pushes again it is told to stop. More dead workers than ``backup_workers`` would silently
train on a fraction of the data, so that aborts the job naming them.
"""
import sys
import time

from hiapi.distribute.parameter_server import messages, optimizer_state, policies
from hiapi.graph import Function, placeholder


class Server:
    def __init__(self, strategy, model):
        self.strategy, self.model = strategy, model
        self.comm, self.MPI = strategy.comm, strategy.MPI
        self.layout, self.stats = strategy.layout, strategy.stats
        self.variables = self.layout.owned(strategy.world_rank)
        self.workers = list(range(strategy.workers))
        self.active = set(self.workers)
        self.clock = {w: 0 for w in self.workers}
        self.heard = {w: time.monotonic() for w in self.workers}
        self.finished, self.held, self.version = set(), set(), 0
        self.policy = strategy.make_policy()
        self._requests = []
        self._apply = self._apply_function(model.optimizer) if self.variables else None

    def _apply_function(self, optimizer):
        gradients = [placeholder(v.shape, v.dtype, name=f"{v.name}/pushed_gradient")
                     for v in self.variables]
        updates = optimizer.get_updates(gradients, self.variables)
        return Function(gradients + optimizer.step_inputs(), [optimizer.iterations.read],
                        updates, name="parameter_server_update")

    # ---- what policies call ----------------------------------------------------------------
    def apply(self, gradients, staleness):
        optimizer = self.model.optimizer
        if self._apply is not None:
            self._apply(*gradients, *optimizer.step_values())
        else:                                  # holds no parameter: still counts the updates
            optimizer.iterations.assign(optimizer.iterations.numpy() + 1)
        self.version += 1
        for value in staleness:
            self.stats.used(value)

    def release(self, workers, stop=False):
        arrays = [v.numpy() for v in self.variables]
        now = time.monotonic()
        for worker in workers:
            self.held.discard(worker)
            self.heard[worker] = now           # its silence is its own from here on
            message = ("weights", self.version, self._iterations(),
                       stop or worker in self.stats.dead, arrays)
            self._send(message, worker)

    def _iterations(self):
        return int(self.model.optimizer.iterations.numpy())

    def _send_state(self, worker):
        """The shard's weights and slots at this version, for worker 0's checkpoint."""
        iterations, slots = optimizer_state.shard_state(self.model.optimizer, self.layout)
        arrays = [v.numpy() for v in self.variables]
        self._send(("state", self.version, iterations, arrays, slots), worker)

    # ---- the loop --------------------------------------------------------------------------
    def serve(self):
        self._wait_for_init()
        status, poller = self.MPI.Status(), messages.Poller()
        while self.active:
            if self.comm.Iprobe(source=self.MPI.ANY_SOURCE, tag=messages.UP, status=status):
                poller.busy()
                source = status.Get_source()
                self._handle(self.comm.recv(source=source, tag=messages.UP), source)
            else:
                self._check_alive()
                poller.idle()
        self._finish()

    def _wait_for_init(self):
        message, _ = messages.receive(self.comm, self.MPI, 0, messages.UP)
        if message[0] == "init":
            _, arrays, iterations, slots = message
            for variable, value in zip(self.model.weights, arrays):
                variable.assign(value)
            self.model.optimizer.iterations.assign(iterations)
            if slots is not None:
                optimizer_state.load_shard(self.model.optimizer, self.layout, slots)
            self.heard = {w: time.monotonic() for w in self.workers}
        else:                                  # fit ran no epoch: worker 0 is already done
            self._handle(message, 0)

    def _handle(self, message, worker):
        self.heard[worker] = time.monotonic()
        self.stats.received(worker, messages.payload_bytes(message))
        kind = message[0]
        if kind == "state":
            self._send_state(worker)
            return
        if kind == "done":
            self.finished.add(worker)
            if worker in self.active:
                self._leave(worker)
            return
        _, clock, version, n, payloads = message
        self.stats.pushed(worker)
        if worker in self.stats.dead:          # came back after being given up on
            self.release([worker], stop=True)
            return
        self.clock[worker] = clock + 1
        self.held.add(worker)
        gradients = [self.strategy.compressor.decompress([payload], v.shape, v.dtype)
                     for payload, v in zip(payloads, self.variables)]
        self.policy.push(worker, version, self.version, n, gradients, self)

    def _leave(self, worker):
        """A worker finished or died: steps stop waiting for it."""
        self.active.discard(worker)
        if isinstance(self.policy, policies.Synchronous):
            self.policy.pending.pop(worker, None)
        self.policy.settle(self)

    def _check_alive(self):
        now, timeout = time.monotonic(), self.strategy.worker_timeout
        for worker in sorted(self.active - self.held):    # held: waiting for us, not silent
            if now - self.heard[worker] > timeout:
                self.stats.dead.append(worker)
                self._dead_limit()
                self._leave(worker)

    def _dead_limit(self):
        if len(self.stats.dead) <= self.strategy.backup_workers:
            return
        sys.stderr.write(
            f"[hiapi parameter server rank {self.strategy.world_rank}] worker rank(s) "
            f"{self.stats.dead} sent nothing for {self.strategy.worker_timeout:g} s "
            f"(worker_timeout) and are declared dead; backup_workers="
            f"{self.strategy.backup_workers} covers at most {self.strategy.backup_workers}; "
            f"aborting the job\n")
        sys.stderr.flush()
        self.strategy.abort(1)

    def _finish(self):
        """Every worker finished (or died): share the shards between servers, send each
        finished worker the final weights and the job's statistics."""
        messages.wait_all(self._requests)
        shards = self.strategy.server_comm.allgather(
            [(self.layout.index(v), v.numpy()) for v in self.variables])
        for shard in shards:
            for index, value in shard:
                self.model.trainable_weights[index].assign(value)
        mine = self.stats.as_dict()
        rank = self.strategy.world_rank
        mine["own_sent"] = {rank: sum(self.stats.bytes_sent.values())}
        mine["own_received"] = {rank: sum(self.stats.bytes_received.values())}
        everyone = self.strategy.server_comm.allgather(mine)
        arrays = [v.numpy() for v in self.variables]
        iterations, slots = optimizer_state.shard_state(self.model.optimizer, self.layout)
        final = ("final", self.version, iterations, arrays, slots, everyone)
        for worker in self.workers:           # a dead worker gets it if it ever comes back
            self._send(final, worker)
        self._drain()
        self.stats.merge_servers(everyone, rank)

    def _drain(self):
        """Wait until every worker has said ``done`` (a worker declared dead says it when it
        comes back and finds the final weights), discarding its late pushes, and every final
        message is delivered: MPI cannot end the job with messages in flight."""
        status, poller = self.MPI.Status(), messages.Poller()
        while len(self.finished) < len(self.workers) or self._requests:
            self._requests = [r for r in self._requests if not r.Test()]
            if self.comm.Iprobe(source=self.MPI.ANY_SOURCE, tag=messages.UP, status=status):
                source = status.Get_source()
                kind = self.comm.recv(source=source, tag=messages.UP)[0]
                if kind == "done":
                    self.finished.add(source)
                elif kind == "state":          # worker 0 saving after it was given up on
                    self._send_state(source)
            else:
                poller.idle()

    def _send(self, message, worker):
        self.stats.sent(worker, messages.payload_bytes(message))
        self._requests = [r for r in self._requests if not r.Test()]
        self._requests.append(self.comm.isend(message, dest=worker, tag=messages.DOWN))
