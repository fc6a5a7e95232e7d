"""Point-to-point messages between workers and servers, and a polite wait for them.

Every message is a pickled tuple on one of two tags, so MPI's non-overtaking rule keeps each
worker's messages to a server in order (its ``init`` before its first ``push``, its last
``push`` before ``done``):

- worker -> server (``UP``): ``("init", arrays, iterations, slots)`` from worker 0 once, with
  the weights, update count and optimizer slots it starts from (after ``BackupAndRestore``
  may have restored them; ``slots`` as in ``optimizer_state``, None when it holds none);
  ``("push", clock, version, n, payloads)``: one step's compressed gradient for the server's
  shard, computed on weights of that server ``version``, from a batch of ``n`` samples;
  ``("state",)`` from worker 0 before it writes a checkpoint; ``("done",)`` when the
  worker's ``fit`` ends.
- server -> worker (``DOWN``): ``("weights", version, iterations, stop, arrays)``: the shard's
  current values and the server's update count (``stop``: this worker was declared dead and
  must end its ``fit``); ``("state", version, iterations, arrays, slots)``, the answer to
  ``state``: the shard's values and its optimizer slots at one version;
  ``("final", version, iterations, arrays, slots, stats)`` after ``done``.

Waiting polls with ``Iprobe`` and short sleeps instead of a blocking receive: MPICH's blocking
calls spin at 100 % CPU, which on an oversubscribed node steals the cores the other ranks need
to compute.
"""
import time

UP, DOWN = 71, 72


def payload_bytes(message):
    """Bytes of the arrays a message carries (what the stats count as sent or received)."""
    total = 0
    for item in message:
        if hasattr(item, "nbytes"):
            total += int(item.nbytes)
        elif isinstance(item, (list, tuple)):
            total += payload_bytes(item)
    return total


class Poller:
    """Sleeps between probes: 20 µs at first, doubling to at most 1 ms while nothing arrives."""

    def __init__(self):
        self.pause = 0.0

    def idle(self):
        self.pause = min(max(self.pause * 2, 2e-5), 1e-3)
        time.sleep(self.pause)

    def busy(self):
        self.pause = 0.0


def receive(comm, MPI, source, tag):
    """The next message from ``source`` (a rank or ``MPI.ANY_SOURCE``) on ``tag``, politely;
    returns ``(message, source)``."""
    status, poller = MPI.Status(), Poller()
    while not comm.Iprobe(source=source, tag=tag, status=status):
        poller.idle()
    return comm.recv(source=status.Get_source(), tag=tag), status.Get_source()


def wait_all(requests):
    """Complete non-blocking sends, politely."""
    poller = Poller()
    pending = [r for r in requests if r is not None]
    while pending:
        pending = [r for r in pending if not r.Test()]
        if pending:
            poller.idle()
