"""How a pipeline stage waits for its neighbours.

A blocking MPI receive spins: the waiting rank keeps its core busy polling. With a core per
rank that is the fastest way to wait (no wake-up latency). When the node's ranks outnumber
its cores (4 stages on 2 cores), a spinning stage takes the core from the neighbour it waits
for, so the wait itself slows the pipeline down; then a stage tests its request and yields
the core between tests (``Yielding``), and what is measured as its bubble is time it really
left to the others.
"""
import os
import time

POLL_SECONDS = 1e-4          # a sleep between tests: wake-up latency against stolen CPU


class Spinning:
    """MPI's own blocking calls."""
    name = "spin"

    def receive(self, comm, buffer, source, tag):
        comm.Recv(buffer, source=source, tag=tag)

    def wait_all(self, requests):
        for request in requests:
            request.Wait()

    def meet(self, comm):
        """Nothing: the collective that follows is where the stages meet."""


class Yielding:
    """Test, then sleep briefly, until done: the core is free for the other ranks."""
    name = "yield"

    def receive(self, comm, buffer, source, tag):
        self.wait_all([comm.Irecv(buffer, source=source, tag=tag)])

    def wait_all(self, requests):
        for request in requests:
            while not request.Test():
                time.sleep(POLL_SECONDS)

    def meet(self, comm):
        """A non-blocking barrier first, so the step's closing collective does not spin."""
        self.wait_all([comm.Ibarrier()])


def oversubscribed(comm):
    """Whether this node runs more ranks of ``comm`` than this process may use cores."""
    from mpi4py import MPI
    node = comm.Split_type(MPI.COMM_TYPE_SHARED)
    ranks = node.Get_size()
    node.Free()
    return ranks > len(os.sched_getaffinity(0))


def for_communicator(comm):
    """``Yielding`` when the node is oversubscribed, else ``Spinning``; ``HIAPI_PIPELINE_WAIT``
    (``spin`` or ``yield``) chooses instead."""
    chosen = os.environ.get("HIAPI_PIPELINE_WAIT", "").strip().lower()
    if chosen not in ("", "spin", "yield"):
        raise ValueError(f"HIAPI_PIPELINE_WAIT must be 'spin' or 'yield', got {chosen!r}")
    if chosen == "yield" or (not chosen and comm is not None and oversubscribed(comm)):
        return Yielding()
    return Spinning()
