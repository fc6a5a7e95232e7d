"""The algorithms ``auto`` times on a communicator: in a module of its own, below both the
package (which names every algorithm) and ``auto`` (which chooses among these)."""
from hiapi.runtime import environment
from hiapi.distribute.algorithms.halving_doubling import HalvingDoublingAllreduce
from hiapi.distribute.algorithms.hierarchical import HierarchicalAllreduce
from hiapi.distribute.algorithms.native import NativeAllreduce
from hiapi.distribute.algorithms.ring import RingAllreduce
from hiapi.distribute.algorithms.shared_direct import SharedDirectAllreduce
from hiapi.distribute.algorithms.shared_memory import SharedMemoryAllreduce
from hiapi.distribute.algorithms.shared_window import node_communicator
from hiapi.distribute.algorithms.zero_copy import ZeroCopyAllreduce


def candidate_algorithms(comm, native_comm=None):
    """What ``auto`` chooses from on ``comm``: native (first), ring, halving/doubling, and the
    three shared-memory ones on one node or the hierarchical allreduce across nodes of several
    ranks each."""
    native = NativeAllreduce(native_comm or comm)
    found = [native, RingAllreduce(comm), HalvingDoublingAllreduce(comm)]
    fake_nodes = environment.ranks_per_node()
    from mpi4py import MPI
    node = node_communicator(comm, fake_nodes)
    local, size = node.Get_size(), comm.Get_size()
    node.Free()
    # decided from numbers every rank agrees on: nodes may hold different rank counts
    smallest, largest = comm.allreduce(local, MPI.MIN), comm.allreduce(local, MPI.MAX)
    if smallest == size:
        found += [SharedMemoryAllreduce(comm), SharedDirectAllreduce(comm),
                  ZeroCopyAllreduce(comm)]
    elif largest > 1:
        found.append(HierarchicalAllreduce(comm, fake_nodes))
    return found
