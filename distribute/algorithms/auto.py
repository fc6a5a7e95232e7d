"""``algorithm="auto"``: per message-size class, the fastest of MPI's native allreduce and the
candidates the measured alpha-beta model prices lowest, timed on this machine on first use
(``tuner.py``), as MPI libraries switch algorithms by size, but from this machine's own
measurements rather than a fixed threshold.

The candidates are MPI's native allreduce, the ring, recursive halving/doubling, and the two
shared-memory allreduces when every rank is on one node or the hierarchical one when there are
several ranks on each of several nodes. The model's constants are measured once per
communicator (``cost_model.measure``) and are the same on every rank; they choose the short
list the tuner times and are what ``predict``/``Strategy.explain()`` report. The tuner's times
are agreed over ranks too, so every rank picks the same algorithm for the same size.
"""
from hiapi.distribute.algorithms.base import AllreduceAlgorithm
from hiapi.distribute.algorithms.candidates import candidate_algorithms
from hiapi.distribute.algorithms.cost_model import measure
from hiapi.distribute.algorithms.tuner import SHORTLIST, Tuner, size_class


class AutoAllreduce(AllreduceAlgorithm):
    name = "auto"

    def __init__(self, comm, native_comm=None, candidates=None, costs=None, tuner=None):
        super().__init__(comm)
        self.candidates = candidates or candidate_algorithms(comm, native_comm)
        if self.candidates[0].name != "native":
            raise ValueError(f"auto allreduce: the first candidate must be native (the one "
                             f"every pick is measured against), got {self.candidates[0].name!r}")
        self.costs = costs or measure(native_comm or comm, self.candidates)
        self.tuner = tuner or Tuner(native_comm or comm)
        self._picked = {}           # nbytes -> algorithm: the per-call lookup
        self._by_class = {}         # size class -> algorithm
        self.measured = {}          # size class -> {name: agreed seconds per call}
        self.rounds = {}            # size class -> rounds the tuner timed

    def picked(self, nbytes):
        """The algorithm already chosen for ``nbytes`` bytes, or None (no communication)."""
        return self._picked.get(nbytes)

    def choose(self, nbytes):
        """The algorithm for ``nbytes`` bytes. The first call in a size class times the short
        list on every rank (collective: every rank must make it, in the same order)."""
        algorithm = self._picked.get(nbytes)
        if algorithm is None:
            key = size_class(nbytes)
            algorithm = self._by_class.get(key)
            if algorithm is None:
                algorithm, self.measured[key] = self.tuner.pick(nbytes, self.shortlist(nbytes))
                self.rounds[key] = self.tuner.rounds
                self._by_class[key] = algorithm
            self._picked[nbytes] = algorithm
        return algorithm

    def allocate(self, count, dtype):
        """Memory from the first candidate that has its own (``zero_copy``'s shared memory),
        so an array allocated here runs every candidate at its best: the tuner times them on
        such arrays, and the strategy's buckets live in them."""
        for candidate in self.candidates:
            array = candidate.allocate(count, dtype)
            if array is not None:
                return array
        return None

    def scratch(self, count, dtype):
        for candidate in self.candidates:
            array = candidate.scratch(count, dtype)
            if array is not None:
                return array
        return None

    def release_unused(self):
        return sum(candidate.release_unused() for candidate in self.candidates)

    def shortlist(self, nbytes):
        """Native, then the ``SHORTLIST`` other candidates the model prices lowest."""
        native, others = self.candidates[0], self.candidates[1:]
        return [native] + sorted(others, key=lambda a: a.predict(nbytes, self.costs))[:SHORTLIST]

    def __call__(self, array):
        return self.choose(array.nbytes)(array)

    def predict(self, nbytes, costs):
        return self.choose(nbytes).predict(nbytes, costs)

    def predictions(self, nbytes):
        """Every candidate's predicted seconds for ``nbytes``, by name."""
        return {a.name: a.predict(nbytes, self.costs) for a in self.candidates}
