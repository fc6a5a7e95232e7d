"""The two collectives of Megatron-LM's tensor parallelism (Shoeybi et al. 2019), as graph ops
whose gradients are each other's forward:

- ``enter_parallel`` (Megatron's *f*): the identity going forward (every rank holds the whole
  input of a column-parallel layer), an allreduce of the input gradient going backward (each
  rank's column slice contributed a part of it);
- ``leave_parallel`` (Megatron's *g*): an allreduce going forward (each rank's row slice gave a
  partial sum of the row-parallel layer's output), the identity going backward (the output's
  gradient is already whole on every rank).

A column-parallel layer followed by a row-parallel one thus costs one allreduce forward and
one backward, whatever happens between them.
"""
from hiapi.graph.op import Op


class EnterParallel(Op):
    name = "enter_parallel"
    stateful = True                  # never merged with another application (CSE)

    def __init__(self, communicator):
        self.communicator = communicator

    def key(self):
        return (id(self),)

    def infer(self, x):
        return x.shape, x.dtype

    def grad(self, inputs, y, g):
        return [LeaveParallel(self.communicator)(g)]


class LeaveParallel(Op):
    name = "leave_parallel"
    stateful = True

    def __init__(self, communicator):
        self.communicator = communicator

    def key(self):
        return (id(self),)

    def infer(self, x):
        return x.shape, x.dtype

    def grad(self, inputs, y, g):
        return [EnterParallel(self.communicator)(g)]


def enter_parallel(out, x, communicator):
    out[...] = x


def leave_parallel(out, x, communicator):
    out[...] = x
    communicator.allreduce(out)


def register_kernels(backend):
    backend.kernels.setdefault("enter_parallel", enter_parallel)
    backend.kernels.setdefault("leave_parallel", leave_parallel)
