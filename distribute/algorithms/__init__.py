"""Allreduce algorithms, one small class each behind one interface (``base.AllreduceAlgorithm``):
``native`` (MPI's), ``ring``, ``halving_doubling`` (Rabenseifner), ``shared_memory`` (one node,
through an MPI shared-memory window: copy in, sum a 1/P slice, copy the slices out),
``shared_direct`` (one node, one fence: every rank sums every slot into its own array),
``zero_copy`` (one node, for arrays it allocated in shared memory: summed where they lie, no
copy in or out), ``hierarchical`` (shared memory inside each node, MPI between node leaders)
and ``auto``
(per size class, the fastest of native and the three the measured alpha-beta model prices
lowest, timed on first use). ``MPICommunicator(algorithm=...)`` and
``Strategy(algorithm=...)`` take these names.
"""
from hiapi.runtime import environment
from hiapi.distribute.algorithms.auto import AutoAllreduce
from hiapi.distribute.algorithms.base import AllreduceAlgorithm, LinkCosts
from hiapi.distribute.algorithms.candidates import candidate_algorithms
from hiapi.distribute.algorithms.cost_model import measure
from hiapi.distribute.algorithms.halving_doubling import HalvingDoublingAllreduce
from hiapi.distribute.algorithms.hierarchical import HierarchicalAllreduce
from hiapi.distribute.algorithms.native import NativeAllreduce
from hiapi.distribute.algorithms.ring import RingAllreduce
from hiapi.distribute.algorithms.shared_direct import SharedDirectAllreduce
from hiapi.distribute.algorithms.shared_memory import SharedMemoryAllreduce
from hiapi.distribute.algorithms.shared_window import node_communicator  # noqa: F401
from hiapi.distribute.algorithms.zero_copy import ZeroCopyAllreduce

ALGORITHMS = ("native", "ring", "halving_doubling", "shared_memory", "shared_direct",
              "zero_copy", "hierarchical", "auto")
# training algorithms people ask ``Strategy(algorithm=...)`` for: their own strategy classes
TRAINING_ALGORITHMS = {"easgd": "EASGDStrategy(tau=..., alpha=...)",
                       "local_sgd": "LocalSGDStrategy(period=...)"}


def check_name(algorithm):
    if algorithm in TRAINING_ALGORITHMS:
        raise ValueError(f"algorithm={algorithm!r} names an allreduce algorithm here; "
                         f"{algorithm} is its own strategy: hiapi.distribute."
                         f"{TRAINING_ALGORITHMS[algorithm]} (which takes algorithm= for its "
                         f"own allreduce)")
    if algorithm not in ALGORITHMS:
        raise ValueError(f"allreduce algorithm must be one of {', '.join(map(repr, ALGORITHMS))}"
                         f", got {algorithm!r}")
    return algorithm


def make_algorithm(algorithm, comm, native_comm=None):
    """The algorithm named ``algorithm`` on ``comm`` (collective). ``native_comm`` is where MPI's
    own allreduce runs (the Python algorithms get a duplicate, used from their own thread)."""
    check_name(algorithm)
    if algorithm == "native":
        return NativeAllreduce(native_comm or comm)
    if algorithm == "auto":
        return AutoAllreduce(comm, native_comm)
    if algorithm == "hierarchical":
        return HierarchicalAllreduce(comm, environment.ranks_per_node())
    return {"ring": RingAllreduce, "halving_doubling": HalvingDoublingAllreduce,
            "shared_memory": SharedMemoryAllreduce,
            "shared_direct": SharedDirectAllreduce, "zero_copy": ZeroCopyAllreduce}[algorithm](comm)
