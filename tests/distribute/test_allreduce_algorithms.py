"""Allreduce algorithms (``hiapi.distribute.algorithms``) under real ``mpiexec``: each one's sum
equals numpy's for odd lengths and several dtypes, blocking and non-blocking, at 2, 3 and 4
ranks; the hierarchical one also on pretend nodes (2 + 2 and uneven 2 + 1 ranks); ``auto``
picks the same everywhere, with real timings and with injected ones that differ by rank."""
import json

import numpy as np
import pytest

import hiapi
from hiapi.distribute.algorithms import ALGORITHMS

from mpi import run_mpi


@pytest.mark.parametrize("ranks, ranks_per_node", [(2, None), (3, 2), (4, 2)])
def test_every_algorithm_sums_like_numpy(tmp_path, ranks, ranks_per_node):
    env = {"HIAPI_RANKS_PER_NODE": str(ranks_per_node)} if ranks_per_node else {}
    run_mpi(ranks, "allreduce_algorithms.py", tmp_path, env=env, timeout=300)
    reports = [json.loads(p.read_text()) for p in sorted(tmp_path.glob("report_*.json"))]
    assert sorted(r["rank"] for r in reports) == list(range(ranks))
    assert all(r["picks"] == reports[0]["picks"] for r in reports)   # no deadlock by disagreement
    assert set(reports[0]["picks"].values()) <= set(ALGORITHMS)
    injected = [r["injected"] for r in reports]
    assert all(i == injected[0] for i in injected)
    # rank 0 alone measured the first of the short list fastest: the MAX over ranks picks
    # the second everywhere; where native measured faster, native stays
    assert injected[0]["disagreeing"]["picked"] == injected[0]["disagreeing"]["shortlist"][2]
    assert injected[0]["native_faster"]["picked"] == "native"
    per_node = ranks_per_node or ranks                   # 3 ranks by 2: nodes of 2 and 1
    assert [r["hierarchical_nodes"] for r in reports] == [
        min(per_node, ranks - rank // per_node * per_node) for rank in range(ranks)]


def test_unknown_algorithm_is_named():
    with pytest.raises(ValueError, match="'halving_doubling'.*got 'tree'"):
        hiapi.distribute.world("tree")
    with pytest.raises(ValueError, match="'auto'.*got 'Ring'"):
        hiapi.distribute.Strategy(algorithm="Ring")


@pytest.mark.parametrize("ranks, algorithm", [(2, "auto"), (4, "shared_memory"),
                                               (3, "shared_direct"), (3, "zero_copy")])
def test_training_with_an_algorithm_equals_one_process(tmp_path, ranks, algorithm):
    """Buckets reduced by ``algorithm`` (non-blocking, on the background thread) give the
    weights and logs that native MPI gives: those of one process on the global batch. With
    ``zero_copy`` (and ``auto``, which may pick it) the buckets live in shared memory, and the
    backward pass writes the gradients straight into it."""
    from test_mpi import single_process_weights
    run_mpi(ranks, "train.py", tmp_path, "none", "--algorithm", algorithm, timeout=300)
    reference, history = single_process_weights(25 * ranks,
                                                hiapi.optimizers.SGD(0.1, momentum=0.9))
    logs = [json.load(open(tmp_path / f"history_{r}.json")) for r in range(ranks)]
    for rank in range(ranks):
        weights = np.load(tmp_path / f"weights_{rank}.npz")
        for i, expected in enumerate(reference):
            np.testing.assert_allclose(weights[f"arr_{i}"], expected, rtol=1e-4, atol=1e-5)
        assert logs[rank]["history"] == logs[0]["history"]
        assert (logs[rank]["shared_buckets"] > 0) == (algorithm in ("auto", "zero_copy"))
    np.testing.assert_allclose(logs[0]["history"]["loss"], history["loss"], rtol=1e-4)
