"""``NCCLCommunicator``: the collectives on GPU arrays, through NCCL (``cupy.cuda.nccl``).

On the cupy backend the gradients to reduce are device arrays; NCCL sums them GPU to GPU
(NVLink or PCIe within a node, the network across nodes) without staging them through the host.
MPI still starts the job and carries everything small that lives on the host (the NCCL unique
id, the model check, the shuffle seed, metric totals)::

    mpiexec -n 4 python train.py          # HIAPI_BACKEND=cupy, one GPU per rank

Each rank uses GPU ``local rank % device count``, where the local rank is the rank among the
processes on the same node; create the Strategy (which creates this communicator) before
building the model, so that the model's weights are allocated on that GPU.

Blocking collectives are queued on cupy's current stream, after the kernels that produced their
input and before those that read the result, so the host never waits for them. ``iallreduce``
runs on a stream of its own, so a bucket's reduction overlaps the backward kernels that follow
it; ``Request.wait()`` makes the current stream wait for it (on the GPU, not the host).
"""
import numpy as np

import os

from hiapi.distribute.communicator import Communicator, MPICommunicator, Request
from hiapi.distribute.host_staged import (HostStagedCommunicator, node_rank_and_size,
                                          use_local_gpu)


def for_backend(communicator, backend_name):
    """The communicator a Strategy should use. On a backend that keeps arrays on the GPU:
    NCCL when every rank on the node has a GPU of its own and MPI's native collectives were
    asked for; otherwise (ranks sharing a GPU, which NCCL refuses, or a Python allreduce
    algorithm, which works on host arrays) the collectives staged through host memory.
    ``HIAPI_GPU_COLLECTIVES`` (``auto``, ``nccl`` or ``host``) overrides the choice. Anything
    else is unchanged."""
    if backend_name != "cupy" or not isinstance(communicator, MPICommunicator):
        return communicator
    choice = gpu_collectives()
    if choice == "host" or communicator.algorithm != "native" or \
            (choice == "auto" and _ranks_share_a_gpu(communicator.comm)):
        return HostStagedCommunicator(communicator)
    return NCCLCommunicator(communicator.comm)


def gpu_collectives():
    """``HIAPI_GPU_COLLECTIVES``: ``auto`` (the default), ``nccl`` or ``host``."""
    value = os.environ.get("HIAPI_GPU_COLLECTIVES", "auto").strip().lower() or "auto"
    if value not in ("auto", "nccl", "host"):
        raise ValueError(f"HIAPI_GPU_COLLECTIVES must be 'auto', 'nccl' or 'host'; got {value!r}")
    return value


def _ranks_share_a_gpu(comm):
    """True when this node runs more ranks than it has GPUs (rank ``i`` uses GPU ``i % n``)."""
    import cupy
    return node_rank_and_size(comm)[1] > cupy.cuda.runtime.getDeviceCount()


def _nccl_types(nccl):
    return {np.dtype(np.float16): nccl.NCCL_FLOAT16, np.dtype(np.float32): nccl.NCCL_FLOAT32,
            np.dtype(np.float64): nccl.NCCL_FLOAT64, np.dtype(np.int8): nccl.NCCL_INT8,
            np.dtype(np.uint8): nccl.NCCL_UINT8, np.dtype(np.int32): nccl.NCCL_INT32,
            np.dtype(np.uint32): nccl.NCCL_UINT32, np.dtype(np.int64): nccl.NCCL_INT64,
            np.dtype(np.uint64): nccl.NCCL_UINT64,
            np.dtype(bool): nccl.NCCL_UINT8}        # bytes: right for bcast and allgather


class NCCLCommunicator(Communicator):
    """NCCL for device (cupy) arrays, MPI for host (numpy) arrays, over the same ranks."""

    def __init__(self, comm=None):
        import cupy
        from cupy.cuda import nccl
        from mpi4py import MPI
        if not nccl.available:
            raise ImportError("NCCLCommunicator: cupy could not load the NCCL library; install "
                              "it with: pip install 'hiapi[cuda12]' (or [cuda13], as the driver)")
        self.cupy, self.nccl = cupy, nccl
        self.host = MPICommunicator(comm or MPI.COMM_WORLD)
        self.comm, self.rank, self.size = self.host.comm, self.host.rank, self.host.size
        self.device = use_local_gpu(self.comm)
        unique_id = nccl.get_unique_id() if self.rank == 0 else None
        self.nccl_comm = nccl.NcclCommunicator(self.size, self.comm.bcast(unique_id, root=0),
                                               self.rank)
        # non-blocking: the legacy default stream would otherwise serialise with it
        self.stream = cupy.cuda.Stream(non_blocking=True)
        self.types = _nccl_types(nccl)

    def _on_device(self, array):
        return isinstance(array, self.cupy.ndarray)

    def _type(self, array):
        try:
            return self.types[array.dtype]
        except KeyError:
            raise TypeError(f"NCCLCommunicator: NCCL cannot reduce dtype {array.dtype.name}; "
                            f"use one of {', '.join(sorted(t.name for t in self.types))}") \
                from None

    def _contiguous(self, array, collective):
        """Run ``collective(buffer)`` on a contiguous buffer, copying back if one was made."""
        if array.flags.c_contiguous:
            collective(array)
        else:
            buffer = self.cupy.ascontiguousarray(array)
            collective(buffer)
            array[...] = buffer

    def allreduce(self, array):
        if not self._on_device(array):
            return self.host.allreduce(array)
        stream = self.cupy.cuda.get_current_stream().ptr
        self._contiguous(array, lambda a: self.nccl_comm.allReduce(
            a.data.ptr, a.data.ptr, a.size, self._type(a), self.nccl.NCCL_SUM, stream))
        return array

    def iallreduce(self, array):
        if not self._on_device(array):
            return self.host.iallreduce(array)
        if not array.flags.c_contiguous:     # the strategy's buckets always are (flat arena slices)
            return Request(lambda: None, self.allreduce(array))
        current = self.cupy.cuda.get_current_stream()
        self.stream.wait_event(current.record())  # after the kernels that filled the bucket
        self.nccl_comm.allReduce(array.data.ptr, array.data.ptr, array.size, self._type(array),
                                 self.nccl.NCCL_SUM, self.stream.ptr)
        done = self.stream.record()
        return Request(lambda: self.cupy.cuda.get_current_stream().wait_event(done), array)

    def allgather(self, array):
        """Every rank's 1-D array, concatenated, and the sizes. NCCL gathers equal counts, so
        each rank sends its array padded to the largest size; the padding is then dropped."""
        if not self._on_device(array):
            return self.host.allgather(array)
        sizes = self.comm.allgather(len(array))
        widest = max(sizes)
        if widest == 0:
            return self.cupy.empty(0, array.dtype), sizes
        send = self.cupy.zeros(widest, array.dtype)
        send[:len(array)] = array
        gathered = self.cupy.empty(widest * self.size, array.dtype)
        self.nccl_comm.allGather(send.data.ptr, gathered.data.ptr, widest, self._type(send),
                                 self.cupy.cuda.get_current_stream().ptr)
        if all(size == widest for size in sizes):
            return gathered, sizes
        parts = [gathered[r * widest:r * widest + size] for r, size in enumerate(sizes)]
        return self.cupy.concatenate(parts), sizes

    def bcast(self, array, root=0):
        if not self._on_device(array):
            return self.host.bcast(array, root)
        stream = self.cupy.cuda.get_current_stream().ptr
        self._contiguous(array, lambda a: self.nccl_comm.bcast(
            a.data.ptr, a.size, self._type(a), root, stream))
        return array

    def barrier(self):
        """Every rank's queued GPU work done, then MPI's barrier."""
        self.cupy.cuda.get_current_stream().synchronize()
        self.stream.synchronize()
        self.comm.Barrier()

    def abort(self, code=1):
        self.nccl_comm.abort()
        self.host.abort(code)
