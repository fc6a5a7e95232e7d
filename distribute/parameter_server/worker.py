"""The worker side: two graph ops that end the worker's train step, and the client they use.

The train step computes the gradients as always; ``ps_push_pull`` (stateful, it needs every
gradient) compresses each server's shard of them, sends them with non-blocking ``isend`` and
waits for every server's reply, which the policy there may hold back (SSP, synchronous
steps). One ``ps_pulled`` op per parameter then reads the value that came back, and the step's
updates assign it: the worker's own optimizer never runs, the servers' does.
"""
import numpy as np

from hiapi.distribute.parameter_server import messages, optimizer_state
from hiapi.graph.op import Op


class PushPull(Op):
    name = "ps_push_pull"
    stateful = True

    def __init__(self, client):
        self.client = client

    def key(self):
        return (id(self),)

    def infer(self, *gradients):
        return (), np.dtype("float32")

    def grad(self, inputs, y, g):
        raise NotImplementedError("parameter-server exchanges are not differentiable")


class Pulled(Op):
    name = "ps_pulled"
    stateful = True

    def __init__(self, client, index, shape, dtype):
        self.client, self.index = client, index
        self._spec = (tuple(shape), np.dtype(dtype))

    def key(self):
        return (id(self),)

    def infer(self, token):
        return self._spec


def ps_push_pull(out, *gradients, client):
    client.push_pull(gradients)
    out[...] = 0


def ps_pulled(out, token, client, index):
    out[...] = client.pulled[index]


def register_kernels(backend):
    backend.kernels.setdefault("ps_push_pull", ps_push_pull)
    backend.kernels.setdefault("ps_pulled", ps_pulled)


class Client:
    """One worker's connection to the servers: versions seen, compressor state, last pull."""

    def __init__(self, strategy, variables):
        self.strategy, self.comm, self.MPI = strategy, strategy.comm, strategy.MPI
        self.layout, self.stats = strategy.layout, strategy.stats
        self.compressor = strategy.compressor
        self.state = [{slot: np.zeros(v.shape, v.dtype) for slot in self.compressor.state_slots}
                      for v in variables]
        self.pulled = [None] * len(variables)
        self.local_n, self.model = 0, None
        # optimizer-wide state (Nadam's product) is taken from the first server that applies
        self.first_server = next((server for server in self.layout.servers
                                  if self.layout.indices(server)), None)
        self.reset()

    def reset(self):
        """A new ``fit``: its servers start again at version 0 and count clocks from 0."""
        self.seen = {server: 0 for server in self.layout.servers}
        self.iterations = {}                   # server -> its update count, last heard
        self.clock, self.stopped = 0, False
        self.finals = {}                       # server -> the job's stats, once it ended

    def push_pull(self, gradients):
        rank = self.strategy.world_rank
        requests = []
        for server in self.layout.servers:
            indices = self.layout.indices(server)
            payloads = [self.compressor.compress(np.asarray(gradients[i]), self.state[i])
                        for i in indices]
            message = ("push", self.clock, self.seen[server], self.local_n, payloads)
            self.stats.sent(rank, messages.payload_bytes(message))
            requests.append(self.comm.isend(message, dest=server, tag=messages.UP))
        self.clock += 1
        self.stats.pushed(rank)
        for server in self.layout.servers:
            message, _ = messages.receive(self.comm, self.MPI, server, messages.DOWN)
            self.stats.received(rank, messages.payload_bytes(message))
            if message[0] == "final":          # declared dead, back after the job ended
                self._final(server, message)
                self._stop()
                continue
            _, version, iterations, stop, arrays = message
            self._take(server, version, iterations, arrays)
            if stop:
                self._stop()
        messages.wait_all(requests)            # the servers receive every push, even late

    def _take(self, server, version, iterations, arrays):
        self.seen[server] = version
        for i, value in zip(self.layout.indices(server), arrays):
            self.pulled[i] = value
        # the worker's counter follows the servers' (not their versions, which start at 0 in
        # every fit), so its logged learning rate and a checkpoint's count are theirs
        self.iterations[server] = iterations
        self.model.optimizer.iterations.assign(max(self.iterations.values()))

    def _take_slots(self, server, slots):
        optimizer_state.take_state(self.model.optimizer, self.model.trainable_weights, slots,
                                   first=server == self.first_server)

    def _stop(self):
        """The servers gave up on this worker (it was silent too long): end its fit."""
        self.stopped = True
        self.model.stop_training = True

    def send_init(self):
        optimizer = self.model.optimizer
        message = ("init", [v.numpy() for v in self.model.weights],
                   optimizer.iterations.numpy(),
                   optimizer_state.full_state(optimizer, self.model.trainable_weights))
        for server in self.layout.servers:
            self.comm.send(message, dest=server, tag=messages.UP)

    def fetch_state(self):
        """Before worker 0 saves: every server's shard and slots at one version each, taken
        as a pull (the weights it will next compute on), so the file holds weights and
        optimizer state that belong together (under ``staleness=0`` without backup workers
        they are the weights it already holds)."""
        for server in self.layout.servers:
            self.comm.send(("state",), dest=server, tag=messages.UP)
        for server in self.layout.servers:
            while True:
                message, _ = messages.receive(self.comm, self.MPI, server, messages.DOWN)
                self.stats.received(self.strategy.world_rank, messages.payload_bytes(message))
                if message[0] == "state":
                    break
                self._final(server, message)   # the job ended while this worker was away
                self._stop()
            _, version, iterations, arrays, slots = message
            self._take(server, version, iterations, arrays)
            self._take_slots(server, slots)
        for i, variable in enumerate(self.model.trainable_weights):
            variable.assign(self.pulled[i])

    def finish(self):
        """After the last step: say so, and take the final weights and the job's stats."""
        for server in self.layout.servers:
            self.comm.send(("done",), dest=server, tag=messages.UP)
        for server in self.layout.servers:
            if server not in self.finals:
                message, _ = messages.receive(self.comm, self.MPI, server, messages.DOWN)
                self._final(server, message)
        self.stats.merge_servers(self.finals[self.layout.servers[0]],
                                 self.strategy.world_rank)

    def _final(self, server, message):
        _, version, iterations, arrays, slots, everyone = message
        weights = self.model.trainable_weights
        for i, value in zip(self.layout.indices(server), arrays):
            weights[i].assign(value)
            self.pulled[i] = value
        self.seen[server] = version
        self.iterations[server] = iterations
        self.model.optimizer.iterations.assign(max(self.iterations.values()))
        self._take_slots(server, slots)
        self.finals[server] = everyone
