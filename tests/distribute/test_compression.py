"""Compressors on one process, against their definitions: mass conservation with residuals,
QSGD's unbiasedness, DGC's momentum correction and sparsity warm-up; and the bucketed
allreduce's schedule (started early, waited for late)."""
import numpy as np
import pytest

import hiapi
from hiapi.distribute import compression
from hiapi.graph import Function, grad, ops, placeholder

RNG = np.random.default_rng(0)


def roundtrip(compressor, gradient, state):
    payload = compressor.compress(gradient, state)
    return compressor.decompress([payload], gradient.shape, gradient.dtype), payload


@pytest.mark.parametrize("compressor", [compression.TopK(0.1), compression.Threshold(1.0),
                                        compression.OneBit()])
def test_residual_compressors_lose_no_gradient_mass(compressor):
    """Over many steps: sum of what was sent + what is still held == sum of all gradients."""
    shape = (7, 9)
    state = {name: np.zeros(shape) for name in compressor.state_slots}
    sent_total, gradient_total = np.zeros(shape), np.zeros(shape)
    for _ in range(25):
        gradient = RNG.normal(size=shape)
        sent, _ = roundtrip(compressor, gradient, state)
        sent_total += sent
        gradient_total += gradient
    np.testing.assert_allclose(sent_total + state["residual"], gradient_total, atol=1e-10)


def test_topk_sends_the_largest_coordinates():
    gradient = np.array([0.1, -5.0, 0.2, 3.0, -0.3, 0.0, 0.05, 1.0, 0.0, 0.0])
    state = {"residual": np.zeros(10)}
    sent, payload = roundtrip(compression.TopK(0.2), gradient, state)
    np.testing.assert_array_equal(sent, np.where(np.abs(gradient) >= 3.0, gradient, 0))
    assert sorted(payload[0].tolist()) == [1, 3] and payload[0].dtype == np.int32


def test_qsgd_is_unbiased():
    gradient = RNG.normal(size=50)
    q = compression.QSGD(levels=4, seed=1)
    samples = np.array([roundtrip(q, gradient, {})[0] for _ in range(4000)])
    mean, error = samples.mean(0), samples.std(0) / np.sqrt(len(samples))
    z = (mean - gradient) / np.maximum(error, 1e-12)
    assert np.abs(z).max() < 5.0                     # no coordinate is biased
    assert abs(z.mean()) < 0.5
    levels = q.compress(gradient, {})[1]
    assert levels.dtype == np.int8 and np.abs(levels).max() <= 4


def test_fp16_halves_the_bytes():
    gradient = RNG.normal(size=(4, 5)).astype(np.float32)
    sent, payload = roundtrip(compression.FP16(), gradient, {})
    np.testing.assert_allclose(sent, gradient, rtol=1e-3)
    assert compression.payload_bytes(payload) == gradient.nbytes // 2


def test_dgc_momentum_correction_and_factor_masking():
    m, sparsity = 0.9, 0.5
    dgc = compression.DGC(sparsity=sparsity, momentum=m, warmup_epochs=0)
    state = {"velocity": np.zeros(8), "accumulation": np.zeros(8)}
    u, v, sent_total, grads = np.zeros(8), np.zeros(8), np.zeros(8), np.zeros(8)
    for _ in range(6):
        g = RNG.normal(size=8)
        grads += g
        sent, payload = roundtrip(dgc, g, state)
        u = m * u + g                                  # written out plainly
        v = v + u
        chosen = np.argsort(-np.abs(v))[:4]
        expected = np.zeros(8)
        expected[chosen] = v[chosen]
        u[chosen], v[chosen] = 0, 0                    # momentum factor masking
        np.testing.assert_allclose(sent, expected)
        sent_total += sent
    np.testing.assert_allclose(state["velocity"], u)
    np.testing.assert_allclose(state["accumulation"], v)


def test_dgc_sparsity_warmup_and_local_clipping():
    dgc = compression.DGC(sparsity=0.999)
    seen = []
    for epoch in range(6):
        dgc.on_epoch_begin(epoch)
        seen.append(dgc.sparsity)
    assert seen == [0.75, 0.9375, 0.984375, 0.996, 0.999, 0.999]
    clipped = compression.DGC(sparsity=0.0, momentum=0.0, clip_norm=2.0, warmup_epochs=0)
    clipped.workers = 4                                # threshold 2 / sqrt(4) = 1
    sent, _ = roundtrip(clipped, np.array([3.0, 4.0]), {"velocity": np.zeros(2),
                                                        "accumulation": np.zeros(2)})
    np.testing.assert_allclose(sent, [0.6, 0.8])


def test_unknown_compression_is_named():
    with pytest.raises(ValueError, match="Unknown compression 'zip'.*dgc"):
        compression.get("zip")


def test_one_process_strategy_trains_like_plain_fit():
    """Without mpiexec a Strategy is a one-worker run: same weights as no strategy."""
    (x, y), _ = hiapi.datasets.mnist.load_data()
    x, y = x[:300] / 255.0, y[:300]
    results = []
    for strategy in (None, hiapi.distribute.Strategy(bucket_cap_mb=0.01)):
        hiapi.utils.set_random_seed(4)
        model = hiapi.Sequential([hiapi.Input(shape=(28, 28)), hiapi.layers.Flatten(),
                                  hiapi.layers.Dense(16, activation="relu"),
                                  hiapi.layers.Dense(10)])
        if strategy is None:
            model.compile(optimizer=hiapi.optimizers.SGD(0.1, momentum=0.9),
                          loss=hiapi.losses.SparseCategoricalCrossentropy(from_logits=True))
        else:
            with strategy.scope():
                model.compile(optimizer=hiapi.optimizers.SGD(0.1, momentum=0.9),
                              loss=hiapi.losses.SparseCategoricalCrossentropy(from_logits=True))
        model.fit(x, y, batch_size=32, epochs=1, verbose=0)
        results.append(model.get_weights())
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    assert strategy.stats.compression_ratio == pytest.approx(1.0)
    assert strategy.scale_lr(0.1, base_batch=128) == pytest.approx(0.1)


def test_bucket_allreduce_starts_early_and_is_waited_for_late():
    """In the compiled schedule each bucket's allreduce starts before the backward pass of the
    earlier layers and its wait comes after it: communication overlaps computation."""
    strategy = hiapi.distribute.Strategy(bucket_cap_mb=1e-5)     # one bucket per parameter
    x = placeholder((None, 4))
    w1 = hiapi.graph.Variable(RNG.normal(size=(4, 4)).astype(np.float32), name="w1")
    w2 = hiapi.graph.Variable(RNG.normal(size=(4, 4)).astype(np.float32), name="w2")
    loss = ops.sum(ops.tanh(ops.matmul(ops.tanh(ops.matmul(x, w1.read)), w2.read)))
    reduced = strategy.reduce_gradients(grad(loss, [w1.read, w2.read]), [w1, w2],
                                        hiapi.optimizers.SGD())
    f = Function([x] + strategy.step_inputs(), reduced)
    executable = f.executable(((3, 4), ()))
    names = [var.op.name for var in executable.order]
    starts = [i for i, n in enumerate(names) if n == "allreduce_start"]
    waits = [i for i, n in enumerate(names) if n == "allreduce_wait"]
    w1_gradient_matmul = max(i for i, n in enumerate(names) if n == "matmul")
    assert starts[0] < w1_gradient_matmul < waits[0]       # w2's bucket overlaps w1's backward
    assert max(starts) < min(waits)
    g1, g2 = f(RNG.normal(size=(3, 4)).astype(np.float32), 1.0)
    assert g1.shape == (4, 4) and g2.shape == (4, 4)
