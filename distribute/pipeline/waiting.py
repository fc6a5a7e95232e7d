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
    """Whether a node runs more ranks of ``comm`` than its ranks together may use cores (the
    union of their affinity masks: ranks pinned one to a core each are not oversubscribed)."""
    from mpi4py import MPI
    node = comm.Split_type(MPI.COMM_TYPE_SHARED)
    cores = set().union(*node.allgather(os.sched_getaffinity(0)))
    ranks = node.Get_size()
    node.Free()
    return ranks > len(cores)


def for_communicator(comm):
    """``Yielding`` when a node is oversubscribed, else ``Spinning``; ``HIAPI_PIPELINE_WAIT``
    (``spin`` or ``yield``) chooses instead. Agreed over ``comm`` (yield if any rank would):
    the two meet differently before the step's closing collective, so ranks that chose apart
    would hang."""
    chosen = os.environ.get("HIAPI_PIPELINE_WAIT", "").strip().lower()
    if chosen not in ("", "spin", "yield"):
        raise ValueError(f"HIAPI_PIPELINE_WAIT must be 'spin' or 'yield', got {chosen!r}")
    if comm is None:
        return Yielding() if chosen == "yield" else Spinning()
    from mpi4py import MPI
    yielding = chosen == "yield" or (not chosen and oversubscribed(comm))
    return Yielding() if comm.allreduce(yielding, op=MPI.LOR) else Spinning()
