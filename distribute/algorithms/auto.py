"""``algorithm="auto"``: per message size, the algorithm the measured alpha-beta model prices
lowest, as MPI libraries switch algorithms by size, but from this machine's own constants
rather than a fixed threshold.

The candidates are MPI's native allreduce, the ring, recursive halving/doubling, and the
shared-memory allreduce when every rank is on one node or the hierarchical one when there are
several ranks on each of several nodes. The constants are measured once per communicator
(``cost_model.measure``) and are the same on every rank, so every rank picks the same
algorithm for the same size.
"""
from hiapi.distribute.algorithms.base import AllreduceAlgorithm
from hiapi.distribute.algorithms.cost_model import measure


class AutoAllreduce(AllreduceAlgorithm):
    name = "auto"

    def __init__(self, comm, native_comm=None, candidates=None):
        super().__init__(comm)
        from hiapi.distribute.algorithms import candidate_algorithms
        self.candidates = candidates or candidate_algorithms(comm, native_comm)
        self.costs = measure(native_comm or comm, self.candidates)
        self._picked = {}

    def choose(self, nbytes):
        """The candidate with the smallest predicted time for ``nbytes`` (cached per size)."""
        algorithm = self._picked.get(nbytes)
        if algorithm is None:
            algorithm = self._picked[nbytes] = min(
                self.candidates, key=lambda a: a.predict(nbytes, self.costs))
        return algorithm

    def __call__(self, array):
        return self.choose(array.nbytes)(array)

    def predict(self, nbytes, costs):
        return self.choose(nbytes).predict(nbytes, costs)

    def predictions(self, nbytes):
        """Every candidate's predicted seconds for ``nbytes``, by name."""
        return {a.name: a.predict(nbytes, self.costs) for a in self.candidates}
