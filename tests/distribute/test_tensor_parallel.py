"""Tensor parallelism: ``Strategy(tensor_parallel=T)`` under real ``mpiexec -n 2`` and ``-n 4``
(T parts, or 2 data-parallel replicas of 2 parts) trains exactly as one process (float64; Dense and Conv2D column/row pairs, an Embedding split by
vocabulary), every rank logs the same History, rank 0's file holds the whole optimizer state and a resumed run continues
exactly; the rewrite finds Megatron's pairs and leaves alone what it cannot split; its two
collectives pass the finite-difference gradient check."""
import json
import subprocess
import sys

import numpy as np
import pytest

import hiapi
from hiapi import layers
from hiapi.distribute.communicator import LocalCommunicator
from hiapi.distribute.tensor_parallel import ops as tp_ops
from hiapi.distribute.tensor_parallel.rewrite import find_pairs
from hiapi.backends import get_backend
from hiapi.models import steps
from hiapi.saving.archive import read_archive

from mpi import ROOT, WORKERS, run_mpi

sys.path.insert(0, str(ROOT / "tests" / "graph"))
from check_op import check_op  # noqa: E402


def load(tmp_path, schedule, rank):
    weights = np.load(tmp_path / f"{schedule}_{rank}.npz")
    report = json.load(open(tmp_path / f"{schedule}_{rank}.json"))
    return [weights[f"arr_{i}"] for i in range(len(weights))], report


@pytest.mark.parametrize("ranks,parts,kind,pairs", [
    (2, 2, "cnn", 2), (2, 2, "mlp", 1), (4, 4, "cnn", 1), (4, 4, "embedding", 2),
    (4, 2, "cnn", 2)])                              # the last: 2 replicas x 2 parts
def test_tensor_parallel_training_equals_one_process(tmp_path, ranks, parts, kind, pairs):
    run_mpi(ranks, "pipeline.py", tmp_path, "tensor", kind, 1, parts, 24, timeout=300)
    subprocess.run([sys.executable, str(WORKERS / "pipeline.py"), str(tmp_path), "reference",
                    kind, "1", "1", str(24 * ranks // parts)], check=True, cwd=ROOT,
                   timeout=300)
    expected_weights, expected = load(tmp_path, "reference", 0)
    for rank in range(ranks):
        weights, report = load(tmp_path, "tensor", rank)
        assert report["explain"]["pairs"] == pairs
        for w, e in zip(weights, expected_weights):      # the whole weights, gathered
            np.testing.assert_allclose(w, e, rtol=1e-5, atol=1e-8)
        for key, values in expected["history"].items():
            np.testing.assert_allclose(report["history"][key], values, rtol=1e-8)
        for key, value in expected["evaluate"].items():
            np.testing.assert_allclose(report["evaluate"][key], value, rtol=1e-8)
    _, saved = read_archive(tmp_path / "tensor.hiapi", "hiapi.model")     # slots joined
    _, want = read_archive(tmp_path / "reference.hiapi", "hiapi.model")
    names = [name for name in want if name.startswith("optimizer/")]
    assert names and sorted(names) == sorted(n for n in saved if n.startswith("optimizer/"))
    for name in names:
        np.testing.assert_allclose(saved[name], want[name], rtol=1e-5, atol=1e-8)


def pairs_of(model, parts=2):
    model.compile(optimizer="sgd", loss="mse")
    x = np.zeros((4,) + tuple(model.input_specs()[0][0][1:]), "float32")
    xs, ys, _ = model._prepare(x, np.zeros((4, 2), "float32"))
    _, results, state = steps._loss_graph(model, xs, ys, False, training=True)
    kernels = {id(layer.kernel) for layer in model.layers if hasattr(layer, "kernel")}
    found = find_pairs(list(results) + [v for _, v in state.updates], kernels, parts)
    return [(p.column.inputs[1].op.variable.name, [r.inputs[1].op.variable.name
                                                   for r in p.rows]) for p in found]


def test_the_rewrite_pairs_column_and_row_layers_and_leaves_the_rest():
    def mlp(*middle, units=8, regularizer=None):
        hiapi.utils.set_random_seed(0)
        return hiapi.Sequential([hiapi.Input(shape=(6,)),
                                 layers.Dense(units, activation="relu", name="a"), *middle,
                                 layers.Dense(4, name="b", kernel_regularizer=regularizer),
                                 layers.Dense(2, name="c")])
    assert pairs_of(mlp()) == [("a/kernel", ["b/kernel"])]
    assert pairs_of(mlp(units=7)) == [("b/kernel", ["c/kernel"])]      # 7 columns: no split
    assert pairs_of(mlp(layers.BatchNormalization())) == [("b/kernel", ["c/kernel"])]
    assert pairs_of(mlp(regularizer=hiapi.regularizers.L2(0.1))) == []   # b read whole
    assert pairs_of(mlp(layers.Activation("tanh"))) == [("a/kernel", ["b/kernel"])]
    # a dropout mask drawn per slice would differ from the whole one: not split there
    assert pairs_of(mlp(layers.Dropout(0.5))) == [("b/kernel", ["c/kernel"])]


def test_enter_and_leave_parallel_gradients():
    tp_ops.register_kernels(get_backend())
    communicator = LocalCommunicator()         # one rank: the collectives are identities
    x = np.random.default_rng(0).normal(size=(3, 4))
    check_op(lambda v: tp_ops.EnterParallel(communicator)(v), [x], lambda a: a, batch=True)
    check_op(lambda v: tp_ops.LeaveParallel(communicator)(v), [x], lambda a: a, batch=True)


def test_tensor_parallel_errors():
    with pytest.raises(ValueError, match="tensor_parallel must be an integer >= 2"):
        hiapi.distribute.Strategy(tensor_parallel=1.5)


def test_an_embedding_index_out_of_range_is_still_an_error(tmp_path):
    script = tmp_path / "bad_index.py"
    script.write_text(
        "import numpy as np, hiapi\n"
        "from hiapi import layers\n"
        "s = hiapi.distribute.Strategy(tensor_parallel=2)\n"
        "with s.scope():\n"
        "    m = hiapi.Sequential([hiapi.Input(shape=(5,), dtype='int64'),\n"
        "                          layers.Embedding(30, 6), layers.Flatten(), layers.Dense(3)])\n"
        "    m.compile(optimizer='sgd', loss='mse')\n"
        "x = np.full((4, 5), 3)\n"
        "x[2, 1] = 31\n"
        "m.fit(x, np.zeros((4, 3)), verbose=0)\n")
    result = run_mpi(2, str(script), check=False, timeout=120)
    assert result.returncode != 0
    assert "Embedding 'embedding' (input_dim=30) (tensor_parallel: rows [15, 30)" in \
        result.stderr + result.stdout


def test_backup_and_restore_resumes_each_rank_from_its_slices(tmp_path):
    run_mpi(2, "tensor_resume.py", tmp_path, "cnn", timeout=300)
    for rank in range(2):
        straight = np.load(tmp_path / f"straight_{rank}.npz")
        resumed = np.load(tmp_path / f"resumed_{rank}.npz")
        for name in straight.files:
            np.testing.assert_allclose(resumed[name], straight[name], rtol=1e-10, atol=1e-12)
