"""Random layers under a Strategy: every rank draws its own dropout masks (not rank 0's copy),
and a run resumed from a backup draws what the uninterrupted run drew, on each rank."""
import json

import numpy as np
import pytest

from mpi import run_mpi


@pytest.mark.parametrize("ranks", [2, 4])
def test_each_rank_draws_its_own_masks_and_resuming_keeps_them(tmp_path, ranks):
    run_mpi(ranks, "random_streams.py", tmp_path)
    reports = [json.load(open(tmp_path / f"rank_{r}.json")) for r in range(ranks)]
    counters = [r["counter"] for r in reports]
    assert len(set(counters)) == ranks                  # one stream per rank
    masks = [tuple(r["mask"]) for r in reports]
    assert len(set(masks)) == ranks                     # 64 draws: equal by chance ~2**-64
    for report in reports:
        assert report["resumed_counter"] == report["counter"]
        for straight, resumed in zip(report["weights"], report["resumed_weights"]):
            np.testing.assert_allclose(resumed, straight, rtol=1e-6, atol=1e-7)
        for straight, rank0 in zip(report["weights"], reports[0]["weights"]):
            np.testing.assert_allclose(straight, rank0, rtol=1e-6)  # one model on all ranks
