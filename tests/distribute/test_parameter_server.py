"""ParameterServerStrategy under real ``mpiexec -n 2`` and ``-n 4``: staleness=0 equals
synchronous data-parallel training, the SSP bound holds, backup workers drop late gradients,
compressed pushes, a hung worker covered by a backup; and the server policies on their own."""
import json

import numpy as np
import pytest

import hiapi
from hiapi.distribute.parameter_server import policies
from hiapi.distribute.parameter_server.stats import ParameterServerStats

from mpi import run_mpi


def records(out, ranks):
    return [json.load(open(out / f"record_{r}.json")) for r in range(ranks)]


def weights(out, name):
    return [np.load(out / f"{name}.npz")[f"arr_{i}"] for i in range(4)]


def assert_same_weights(out, ranks, expected=None, atol=1e-5):
    expected = expected or weights(out, "weights_0")
    for rank in range(ranks):
        for got, want in zip(weights(out, f"weights_{rank}"), expected):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=atol)


@pytest.mark.parametrize("ranks, servers, optimizer, fits", [
    (2, 1, "sgd", 1), (4, 2, "sgd", 1), (4, 1, "adam", 1), (3, 1, "sgd", 2)])
def test_staleness_0_equals_synchronous_training_on_the_global_batch(tmp_path, ranks,
                                                                     servers, optimizer, fits):
    run_mpi(ranks, "ps_train.py", tmp_path, "--servers", servers, "--staleness", 0,
            "--optimizer", optimizer, "--fits", fits, "--reference", timeout=300)
    # servers too; to float32 rounding only: the servers apply the update outside the
    # compiled step, so its bits may differ (on an AMD EPYC, 60 of 12,544 weights of the
    # 2-rank job differed from the reference by up to 4e-5 after 90 steps)
    assert_same_weights(tmp_path, ranks, weights(tmp_path, "reference"), atol=1e-4)
    logs = records(tmp_path, ranks)
    workers = ranks - servers
    for log in logs[:workers]:        # one model at every epoch end: the same validation
        assert log["history"]["val_loss"] == logs[0]["history"]["val_loss"]
        assert log["evaluate"] == logs[0]["evaluate"]
    assert [log["serves"] for log in logs] == [False] * workers + [True] * servers
    stats = logs[0]["stats"]
    assert stats["dropped"] == 0 and stats["max_staleness"] == 0
    assert set(stats["steps"].values()) == {fits * 2 * -(-360 // (8 * workers))}  # all fits
    assert all(log["stats"] == stats for log in logs)      # every rank: the job's figures


def assert_checkpoint_has_slots(out):
    """A mid-fit checkpoint of a job whose servers run ahead of worker 0: written (no
    deadlock), with a built optimizer and a nonzero momentum from the servers."""
    model = hiapi.models.load_model(out / "ckpt.hiapi")
    state = [v.numpy() for v in model.optimizer.variables]
    assert model.optimizer.built and int(state[0]) > 0
    assert len(state) == 1 + len(model.trainable_weights)          # one momentum each
    assert all(np.abs(slot).max() > 0 for slot in state[1:])


def test_stale_synchronous_bound_holds_and_asynchronous_runs_ahead(tmp_path):
    for staleness in ("2", "none"):
        out = tmp_path / staleness
        out.mkdir()
        run_mpi(4, "ps_train.py", out, "--staleness", staleness, "--slow", "1:0.05",
                "--epochs", 1, "--checkpoint", 4, timeout=300)
        stats = records(out, 4)[0]["stats"]
        if staleness == "2":          # the slow worker holds the others back exactly 2 steps
            assert stats["max_clock_gap"] == 2, stats
        else:
            assert stats["max_clock_gap"] > 2, stats
        assert stats["max_staleness"] > 0 and stats["dropped"] == 0
        assert stats["applied"] == sum(stats["steps"].values()) == 3 * 15
        assert_same_weights(out, 4)
        assert_checkpoint_has_slots(out)


def test_backup_worker_drops_late_gradients_and_compressed_pushes_send_less(tmp_path):
    run_mpi(4, "ps_train.py", tmp_path, "--backup", 1, "--slow", "2:0.05", "--compression",
            "topk", "--epochs", 1, "--checkpoint", 4, timeout=300)
    stats = records(tmp_path, 4)[0]["stats"]
    assert stats["dropped"] >= 1, stats
    assert stats["applied"] + stats["dropped"] == sum(stats["steps"].values()) == 3 * 15
    dense = 2 * 4 * (28 * 28 * 16 + 16 + 16 * 10 + 10)       # value + index per kept entry
    assert stats["bytes_sent"]["0"] < 15 * dense * 0.1 * 1.1  # topk ratio 0.1
    assert_same_weights(tmp_path, 4)
    assert_checkpoint_has_slots(tmp_path)


def test_a_hung_worker_covered_by_a_backup_is_dropped_and_told_to_stop(tmp_path):
    """With mid-epoch backups too: they gather no collective a dead worker would block."""
    run_mpi(4, "ps_train.py", tmp_path, "--backup", 1, "--hang", "2:2:5", "--timeout", 1.5,
            "--epochs", 1, "--samples", 240, "--backup-every", 2, timeout=120)
    logs = records(tmp_path, 4)
    assert logs[0]["stats"]["dead"] == [2]
    assert logs[2]["stopped"] and not logs[0]["stopped"]
    assert_same_weights(tmp_path, 4)
    model = hiapi.models.load_model(tmp_path / "backup" / "latest.hiapi")
    assert model.optimizer.built and model._saved_extra["epoch"] == 1   # the epoch's end


def test_more_dead_workers_than_backups_abort_the_job(tmp_path):
    result = run_mpi(3, "ps_train.py", tmp_path, "--hang", "1:1:30", "--timeout", 1.5,
                     "--epochs", 1, "--samples", 240, timeout=120, check=False)
    assert result.returncode != 0
    assert "worker rank(s) [1] sent nothing for 1.5 s" in result.stderr


class FakeServer:
    """What a policy sees of a server: it applies, releases and counts."""

    def __init__(self, workers):
        self.active, self.stats = set(workers), ParameterServerStats()
        self.clock = {w: 0 for w in workers}
        self.applied, self.released = [], []

    def apply(self, gradients, staleness):
        self.applied.append([float(g) for g in gradients])
        for value in staleness:
            self.stats.used(value)

    def release(self, workers, stop=False):
        self.released.append(sorted(workers))


def test_synchronous_policy_uses_the_first_w_minus_b_and_weights_by_samples():
    server, policy = FakeServer(range(3)), policies.make(0, 1, 3)
    policy.push(2, 0, 0, 10, [np.float64(1.0)], server)
    assert server.applied == []                          # 1 of the 2 it needs
    policy.push(0, 0, 0, 30, [np.float64(5.0)], server)
    assert server.applied == [[4.0]] and server.released == [[0, 2]]   # (10*1 + 30*5) / 40
    policy.push(1, 0, 1, 20, [np.float64(9.0)], server)  # computed on version 0: late
    assert server.stats.dropped == 1 and server.released[-1] == [1]
    server.active -= {0, 2}                              # the others finished
    policy.push(1, 1, 1, 20, [np.float64(9.0)], server)
    assert server.applied[-1] == [9.0]                   # alone, it needs only itself


def test_bounded_policy_holds_a_worker_more_than_s_steps_ahead():
    server, policy = FakeServer(range(2)), policies.make(1, 0, 2)
    for clock in (1, 2):
        server.clock[0] = clock
        policy.push(0, clock - 1, clock - 1, 8, [np.float64(1.0)], server)
    assert server.released == [[0]]                      # clock 2 vs 0: held
    server.clock[1] = 1
    policy.push(1, 0, 2, 8, [np.float64(1.0)], server)
    assert server.released == [[0], [0, 1]]              # worker 1 caught up: both go
    assert server.stats.max_staleness == 2 and server.stats.max_clock_gap == 1


@pytest.mark.parametrize("kwargs, message", [
    ({"servers": 0}, "servers must be a positive integer"),
    ({"staleness": -1}, "staleness must be None"),
    ({"backup_workers": 1, "staleness": 2}, "backup_workers=1 needs staleness=0"),
    ({"worker_timeout": 0}, "worker_timeout must be > 0")])
def test_bad_arguments_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        strategy = hiapi.distribute.ParameterServerStrategy(**kwargs)
        strategy.make_policy()


def test_one_process_trains_locally():
    strategy = hiapi.distribute.ParameterServerStrategy(staleness=None)
    with strategy.scope():
        model = hiapi.Sequential([hiapi.Input(shape=(3,)), hiapi.layers.Dense(1)])
        model.compile(optimizer=hiapi.optimizers.SGD(0.1), loss="mse")
    x = np.random.default_rng(0).normal(size=(32, 3))
    history = model.fit(x, x.sum(1), batch_size=8, epochs=3, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    assert strategy.stats.steps == {0: 12}


def test_the_example_runs_under_mpiexec():
    result = run_mpi(3, "../../../examples/async_mnist.py", "--method", "ssp", "--staleness",
                     2, "--epochs", 1, "--train-samples", 640, "--batch-size", 16,
                     "--verbose", 0, timeout=300)
    assert "ssp: 2 worker(s), test accuracy" in result.stdout
    accuracy = float(result.stdout.split("test accuracy ")[1].split()[0])
    assert accuracy > 0.6 and "max_clock_gap=" in result.stdout


@pytest.mark.parametrize("ranks, servers, optimizer, mid_epoch", [
    (3, 1, "sgd", False), (3, 1, "momentum", False), (4, 2, "adam", False),
    (3, 1, "momentum", True)])
def test_backup_and_restore_resumes_a_parameter_server_job(tmp_path, ranks, servers,
                                                             optimizer, mid_epoch):
    options = ["--servers", servers, "--optimizer", optimizer]
    if mid_epoch:          # backups every 4 batches, the job dies at batch 7 of epoch 2
        options += ["--save-freq", 4, "--crash-batch", 7]
    run_mpi(ranks, "ps_resume.py", "straight", tmp_path, *options, timeout=300)
    crashed = run_mpi(ranks, "ps_resume.py", "interrupt", tmp_path, *options, check=False,
                      timeout=300)
    assert crashed.returncode != 0 and "simulated crash" in crashed.stderr
    run_mpi(ranks, "ps_resume.py", "resume", tmp_path, *options, timeout=300)
    straight = json.load(open(tmp_path / "straight_history.json"))
    resumed = json.load(open(tmp_path / "resume_history.json"))
    assert resumed["epoch"] == [1, 2]
    np.testing.assert_allclose(resumed["loss"], straight["loss"][1:], rtol=1e-6)
    # the logged rate follows the servers' count, restored, not this fit's versions
    np.testing.assert_allclose(resumed["learning_rate"], straight["learning_rate"][1:])
    expected = np.load(tmp_path / "straight_weights_0.npz")
    for rank in range(ranks):                 # the servers' copy too
        got = np.load(tmp_path / f"resume_weights_{rank}.npz")
        for key in expected.files:
            np.testing.assert_allclose(got[key], expected[key], rtol=1e-6, atol=1e-7)


def optimizer_state(path):
    model = hiapi.models.load_model(path)
    return model, [v.numpy() for v in model.optimizer.variables]


@pytest.mark.parametrize("ranks, servers, optimizer", [(3, 1, "momentum"), (4, 2, "adam")])
def test_saved_files_hold_the_one_process_optimizer_state(tmp_path, ranks, servers,
                                                          optimizer):
    """ModelCheckpoint during fit (worker 0 asks the servers) and model.save after it (the
    final state every worker gets) write what one process training on the global batch
    writes: load_model in one process has the slots and update count."""
    run_mpi(ranks, "ps_resume.py", "straight", tmp_path, "--servers", servers,
            "--optimizer", optimizer, timeout=300)
    steps_per_epoch = 240 // (8 * (ranks - servers))
    for saved, reference, epochs in [("ckpt-2.hiapi", "reference-2.hiapi", 2),
                                     ("ckpt-2.keras", "reference-2.hiapi", 2),
                                     ("final.hiapi", "reference-final.hiapi", 3),
                                     ("final.keras", "reference-final.hiapi", 3)]:
        model, state = optimizer_state(tmp_path / saved)
        want_model, want = optimizer_state(tmp_path / reference)
        assert model.optimizer.built and len(state) == len(want) > 1, saved
        assert int(state[0]) == int(want[0]) == epochs * steps_per_epoch, saved
        assert any(np.abs(slot).max() > 0 for slot in state[1:]), saved   # not fresh zeros
        for got, expected in zip(state[1:], want[1:]):
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-7, err_msg=saved)
        for got, expected in zip(model.get_weights(), want_model.get_weights()):
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6, err_msg=saved)


def test_scale_lr_follows_what_one_update_averages():
    strategy = hiapi.distribute.ParameterServerStrategy(staleness=None)
    strategy.workers = 3                     # as on 4 ranks with one server
    assert strategy.scale_lr(0.1, base_batch=128, per_worker_batch=32) == 0.1 * 32 / 128
    strategy.staleness, strategy.backup_workers = 0, 1
    assert strategy.scale_lr(0.1, base_batch=128, per_worker_batch=32) == 0.1 * 64 / 128
