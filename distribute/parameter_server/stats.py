"""What a parameter-server job did: ``ParameterServerStrategy.stats``.

During ``fit`` each rank counts its own traffic; at the end every worker receives the servers'
counts with the final weights (and the servers share theirs), so after ``fit`` every rank holds
the same job-wide figures:

- ``steps``: {worker rank: pushes the servers received from it};
- ``applied`` / ``dropped``: gradients the servers used / discarded (a late gradient under
  ``backup_workers``; a push counts once per server);
- ``mean_staleness`` / ``max_staleness``: server updates between the weights a gradient was
  computed on and the update that applied it (0 when synchronous);
- ``max_clock_gap``: the largest lead, in steps, of a worker over the slowest active one when
  it was allowed to go on (at most ``staleness`` under stale synchronous parallel);
- ``bytes_sent`` / ``bytes_received``: {rank: bytes of arrays}; ``dead``: workers declared dead.
"""


class ParameterServerStats:
    def __init__(self):
        self.steps = {}
        self.applied = self.dropped = self.max_clock_gap = 0
        self.staleness_total = self.max_staleness = 0
        self.bytes_sent, self.bytes_received = {}, {}
        self.dead = []

    # ---- counting --------------------------------------------------------------------------
    def sent(self, rank, nbytes):
        self.bytes_sent[rank] = self.bytes_sent.get(rank, 0) + nbytes

    def received(self, rank, nbytes):
        self.bytes_received[rank] = self.bytes_received.get(rank, 0) + nbytes

    def pushed(self, worker):
        self.steps[worker] = self.steps.get(worker, 0) + 1

    def used(self, staleness):
        self.applied += 1
        self.staleness_total += staleness
        self.max_staleness = max(self.max_staleness, staleness)

    def granted(self, gap):
        self.max_clock_gap = max(self.max_clock_gap, gap)

    # ---- results ---------------------------------------------------------------------------
    @property
    def mean_staleness(self):
        return self.staleness_total / self.applied if self.applied else 0.0

    def as_dict(self):
        return {"steps": dict(self.steps), "applied": self.applied, "dropped": self.dropped,
                "staleness_total": self.staleness_total, "max_staleness": self.max_staleness,
                "max_clock_gap": self.max_clock_gap, "bytes_sent": dict(self.bytes_sent),
                "bytes_received": dict(self.bytes_received), "dead": list(self.dead)}

    def merge_servers(self, servers, own_rank):
        """Job-wide figures from every server's ``as_dict()``: each server saw every push, so
        the steps are the first server's; drops and updates add up over servers."""
        first = servers[0]
        self.steps = {int(k): v for k, v in first["steps"].items()}
        self.applied = sum(s["applied"] for s in servers)
        self.dropped = sum(s["dropped"] for s in servers)
        self.staleness_total = sum(s["staleness_total"] for s in servers)
        self.max_staleness = max(s["max_staleness"] for s in servers)
        self.max_clock_gap = max(s["max_clock_gap"] for s in servers)
        self.dead = sorted({w for s in servers for w in s["dead"]})
        sent, received = {}, {}
        for server in servers:        # a server's received bytes are a worker's sent bytes
            for rank, n in server["bytes_received"].items():
                sent[rank] = sent.get(rank, 0) + n
            for rank, n in server["bytes_sent"].items():
                received[rank] = received.get(rank, 0) + n
            sent.update(server.get("own_sent", {}))
            received.update(server.get("own_received", {}))
        self.bytes_sent, self.bytes_received = sent, received

    def __repr__(self):
        return (f"ParameterServerStats(steps={self.steps}, applied={self.applied}, "
                f"dropped={self.dropped}, mean_staleness={self.mean_staleness:.2f}, "
                f"max_staleness={self.max_staleness}, max_clock_gap={self.max_clock_gap}, "
                f"bytes_sent={self.bytes_sent}, bytes_received={self.bytes_received}, "
                f"dead={self.dead})")
