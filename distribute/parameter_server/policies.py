"""When a server applies a gradient and when it lets a worker go on: one small class per rule.

A policy sees the pushes arriving at one server and answers with what to apply and whom to
release (send the shard's weights to, so it may compute its next step). ``clock[w]`` counts
worker w's pushes; ``active`` are the workers neither finished nor declared dead.

- ``Synchronous(backup_workers=b)``: gradients computed on the current version are collected
  until ``min(W - b, len(active))`` have arrived; their sample-weighted mean is applied as one
  update and those workers are released. A gradient computed on an older version arrives
  after its step was taken: it is dropped and its worker released at once (Chen et al.,
  "Revisiting Distributed Synchronous SGD", 2016, https://arxiv.org/abs/1604.00981). With
  b = 0 every step waits for every worker: synchronous data-parallel SGD.
- ``Bounded(staleness=s)``: each gradient is applied on arrival (one update per push, the
  worker's batch mean, as Downpour); a worker is released only while its clock is at most s
  ahead of the slowest active worker's: stale synchronous parallel (Ho et al., NeurIPS 2013).
- ``Asynchronous()``: apply on arrival, release at once: Downpour SGD (Dean et al., "Large
  Scale Distributed Deep Networks", NeurIPS 2012).
"""


class Synchronous:
    def __init__(self, workers, backup_workers=0):
        self.workers, self.backup_workers = workers, backup_workers
        self.pending = {}              # worker -> (n, gradients) for the current version

    def push(self, worker, version, current, n, gradients, server):
        if version < current:          # its step was taken without it
            server.stats.dropped += 1
            server.release([worker])
            return
        self.pending[worker] = (n, gradients)
        self.settle(server)

    def settle(self, server):
        """Apply once enough gradients of this version are in (also when workers leave)."""
        need = min(self.workers - self.backup_workers, len(server.active))
        if not self.pending or len(self.pending) < need:
            return
        total = sum(n for n, _ in self.pending.values())
        mean = None
        for n, gradients in self.pending.values():
            weighted = [g * (n / total) for g in gradients]
            mean = weighted if mean is None else [m + w for m, w in zip(mean, weighted)]
        server.apply(mean, staleness=[0] * len(self.pending))
        released, self.pending = list(self.pending), {}
        server.release(released)


class Bounded:
    def __init__(self, staleness):
        self.staleness = staleness
        self.blocked = set()

    def push(self, worker, version, current, n, gradients, server):
        server.apply(gradients, staleness=[current - version])
        self.blocked.add(worker)
        self.settle(server)

    def settle(self, server):
        if not self.blocked:
            return
        slowest = min((server.clock[w] for w in server.active), default=None)
        go = [w for w in sorted(self.blocked) if slowest is None or
              server.clock[w] - slowest <= self.staleness]
        for worker in go:
            server.stats.granted(0 if slowest is None else server.clock[worker] - slowest)
        self.blocked -= set(go)
        if go:
            server.release(go)


class Asynchronous(Bounded):
    def __init__(self):
        super().__init__(staleness=float("inf"))


def make(staleness, backup_workers, workers):
    if backup_workers and staleness != 0:
        raise ValueError(f"ParameterServerStrategy: backup_workers={backup_workers} needs "
                         f"staleness=0 (backup workers make a synchronous step skip the last "
                         f"gradients; with staleness={staleness!r} no step waits for them)")
    if staleness == 0:
        return Synchronous(workers, backup_workers)
    return Asynchronous() if staleness is None else Bounded(staleness)
