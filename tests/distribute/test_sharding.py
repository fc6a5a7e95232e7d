"""``Strategy(shard_optimizer_state=True)`` (ZeRO stage 1): real ``mpiexec -n 2`` and ``-n 4``
training equal to one process on the global batch for SGD with momentum, Adam and LARS, each
rank holding about 1/N of the optimizer slot bytes, and the unsupported cases as errors."""
import importlib.util
import json

import numpy as np
import pytest

import hiapi
from hiapi.distribute.sharding import assign_owners
from hiapi.graph import Variable

from mpi import WORKERS, run_mpi

spec = importlib.util.spec_from_file_location("sharded_worker", WORKERS / "sharded.py")
worker = importlib.util.module_from_spec(spec)
spec.loader.exec_module(worker)


def one_process(optimizer_name, global_batch):
    """Weights and total slot bytes of the same training in this process, unsharded."""
    model = worker.make_model()
    model.compile(optimizer=worker.make_optimizer(optimizer_name),
                  loss="sparse_categorical_crossentropy")
    x, y = worker.data()
    model.fit(x, y, batch_size=global_batch, epochs=2, verbose=0)
    optimizer = model.optimizer
    slots = sum(v.numpy().nbytes for v in optimizer.variables if v is not optimizer.iterations)
    return model.get_weights(), slots


@pytest.mark.parametrize("ranks", [2, 4])
@pytest.mark.parametrize("optimizer", ["sgd", "adam", "lars"])
def test_sharded_training_equals_one_process_with_1_over_n_of_the_slots(
        tmp_path, ranks, optimizer):
    run_mpi(ranks, "sharded.py", tmp_path, optimizer, 1)
    reference, total_slot_bytes = one_process(optimizer, 20 * ranks)
    for rank in range(ranks):
        weights = np.load(tmp_path / f"weights_{rank}.npz")
        for i, expected in enumerate(reference):
            np.testing.assert_allclose(weights[f"arr_{i}"], expected, rtol=1e-4, atol=1e-5)
    reports = [json.load(open(tmp_path / f"slots_{r}.json")) for r in range(ranks)]
    per_rank = [report["slot_bytes"] for report in reports]
    assert sum(per_rank) == total_slot_bytes                  # every slot kept exactly once
    assert max(per_rank) <= 1.1 * total_slot_bytes / ranks    # measured: 1.00 (n=2), 1.06 (n=4)
    for report in reports:                                    # no file with one rank's shard
        assert "shard_optimizer_state=True) is not supported" in report["save_error"]
    assert not list(tmp_path.glob("model_*"))


def test_owners_are_whole_variables_balanced_by_size():
    shapes = [(100, 10), (10,), (100, 10), (10,), (50, 10), (50, 10), (4,)]
    variables = [Variable(np.zeros(s, "float32")) for s in shapes]
    owners = assign_owners(variables, 2)
    load = [sum(np.prod(s) for s, o in zip(shapes, owners) if o == rank) for rank in (0, 1)]
    assert owners[0] != owners[2] and owners[4] != owners[5]
    assert abs(load[0] - load[1]) <= 10
    assert assign_owners(variables, 2) == owners               # the same on every rank
    assert assign_owners(variables, 1) == [0] * len(shapes)


def test_unsupported_combinations_are_clear_errors():
    with pytest.raises(NotImplementedError, match="gradient compression 'dgc'"):
        hiapi.distribute.Strategy(shard_optimizer_state=True, compression="dgc")
    strategy = hiapi.distribute.Strategy(shard_optimizer_state=True)
    with strategy.scope():
        model = worker.make_model()
        model.compile(optimizer=hiapi.optimizers.SGD(0.1, global_clipnorm=1.0), loss="mse")
    x, y = worker.data()
    with pytest.raises(NotImplementedError, match="global_clipnorm=1.0 is not supported"):
        model.fit(x, np.eye(4)[y], batch_size=20, epochs=1, verbose=0)
