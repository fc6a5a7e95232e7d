"""``HostStagedCommunicator``: collectives on GPU arrays through host memory and MPI.

NCCL needs one GPU per rank: two ranks on one device fail at ``ncclCommInitRank`` ("duplicate
GPU"). Several ranks per GPU are still worth running (testing a multi-GPU script on one card,
small models that leave a big GPU idle), and a Python allreduce algorithm (``algorithm="ring"``
and the others) works on host arrays only. For those the device array is copied to the host,
reduced by the MPI communicator it wraps, and copied back. That costs two PCIe copies per
collective, which is why ``for_backend`` chooses NCCL whenever every rank has a GPU of its own.
"""
import numpy as np

from hiapi.distribute.communicator import Communicator, Request


def node_rank_and_size(comm):
    """This rank's rank among the processes on its node, and how many there are."""
    from mpi4py import MPI
    local = comm.Split_type(MPI.COMM_TYPE_SHARED)
    try:
        return local.Get_rank(), local.Get_size()
    finally:
        local.Free()


def use_local_gpu(comm):
    """Make GPU ``node rank % device count`` current (before the model's weights are made)
    and return it: how every GPU communicator places its rank."""
    import cupy
    device = cupy.cuda.Device(node_rank_and_size(comm)[0] %
                              cupy.cuda.runtime.getDeviceCount())
    device.use()
    return device


class HostStagedCommunicator(Communicator):
    """Wraps a host communicator; device (cupy) arrays go through a host copy, host arrays
    straight to it."""

    def __init__(self, host):
        import cupy
        self.cupy, self.host = cupy, host
        self.comm, self.rank, self.size = host.comm, host.rank, host.size
        self.device = use_local_gpu(self.comm)
        self.algorithm = getattr(host, "algorithm", "native")

    def _on_device(self, array):
        return isinstance(array, self.cupy.ndarray)

    def _staged(self, array, collective):
        """``collective(host_copy)`` then the result written back into ``array``."""
        host = self.cupy.asnumpy(array)      # waits for the kernels that produced it
        result = collective(host)
        array[...] = self.cupy.asarray(result)
        return array

    def allreduce(self, array):
        if not self._on_device(array):
            return self.host.allreduce(array)
        return self._staged(array, self.host.allreduce)

    def iallreduce(self, array):
        """Blocking underneath: the host copy already waits for the GPU, so there is nothing
        left to overlap."""
        if not self._on_device(array):
            return self.host.iallreduce(array)
        result = self.allreduce(array)
        return Request(lambda: None, result)

    def ireduce(self, array, root):
        if not self._on_device(array):
            return self.host.ireduce(array, root)
        host = self.cupy.asnumpy(array)
        self.host.ireduce(host, root).wait()
        if self.rank == root:
            array[...] = self.cupy.asarray(host)
        return Request(lambda: None, array)

    def allgather(self, array):
        if not self._on_device(array):
            return self.host.allgather(array)
        gathered, sizes = self.host.allgather(self.cupy.asnumpy(array))
        return self.cupy.asarray(np.ascontiguousarray(gathered)), sizes

    def bcast(self, array, root=0):
        if not self._on_device(array):
            return self.host.bcast(array, root)
        return self._staged(array, lambda host: self.host.bcast(host, root))

    def barrier(self):
        self.cupy.cuda.get_current_stream().synchronize()
        self.host.barrier()

    def shared_array(self, count, dtype):
        return None                          # device buffers: shared host memory would not help

    def release_shared(self):
        return self.host.release_shared()

    def set_progress(self, text):
        self.host.set_progress(text)

    def allreduce_scalars(self, values):
        return self.host.allreduce_scalars(values)

    def abort(self, code=1):
        self.host.abort(code)
