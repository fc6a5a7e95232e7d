"""Loss scaling under a data-parallel Strategy: one rank's overflow makes every rank skip
that step and halve its scale (the finite check is summed over the workers), with and without
sharded optimizer state; the ranks end with equal weights."""
import json

import numpy as np
import pytest

from mpi import run_mpi


@pytest.mark.parametrize("shard", [0, 1])
def test_ranks_skip_the_same_steps(tmp_path, shard):
    run_mpi(2, "mixed_precision.py", tmp_path, shard)
    ranks = [json.load(open(tmp_path / f"rank_{r}.json")) for r in range(2)]
    assert ranks[0]["scales"] == ranks[1]["scales"] == [4096, 4096, 2048, 2048, 2048]
    assert ranks[0]["iterations"] == ranks[1]["iterations"] == 4     # step 2 skipped
    for a, b in zip(ranks[0]["weights"], ranks[1]["weights"]):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
