"""``None`` as an output's loss in compile (list or dict): that output is not trained on and
has no loss in the logs, as in Keras; labels may be given for every output or only for those
with a loss."""
import numpy as np
import pytest

import hiapi
from hiapi import layers

RNG = np.random.default_rng(4)


def two_outputs():
    hiapi.utils.set_random_seed(0)
    inputs = hiapi.Input((3,))
    main = layers.Dense(1, name="main")(inputs)
    aux = layers.Dense(2, name="aux")(inputs)
    return hiapi.Model(inputs, [main, aux])


@pytest.mark.parametrize("loss", [["mse", None], {"main": "mse", "aux": None}, {"main": "mse"}])
def test_output_without_a_loss_gets_none(loss):
    x = RNG.normal(size=(32, 3)).astype(np.float32)
    y_main, y_aux = RNG.normal(size=(32, 1)), RNG.normal(size=(32, 2))
    model = two_outputs()
    model.compile(optimizer=hiapi.optimizers.SGD(0.1), loss=loss)
    aux = [layer for layer in model.layers if layer.name == "aux"][0]
    aux_before = aux.get_weights()[0].copy()
    history = model.fit(x, [y_main, y_aux], epochs=2, batch_size=8, verbose=0)
    assert "main_loss" in history.history and "aux_loss" not in history.history
    assert history.history["loss"] == history.history["main_loss"]
    np.testing.assert_array_equal(aux.get_weights()[0], aux_before)   # no gradient reaches it
    main_pred = model.predict(x, verbose=0)[0]
    assert model.evaluate(x, [y_main, y_aux], verbose=0)[0] == \
        pytest.approx(np.mean((main_pred - y_main) ** 2), rel=1e-5)


def test_labels_only_for_outputs_with_a_loss():
    x = RNG.normal(size=(16, 3)).astype(np.float32)
    y_main = RNG.normal(size=(16, 1))
    model = two_outputs()
    model.compile(optimizer="sgd", loss=["mse", None], metrics={"main": ["mae"]})
    logs = model.evaluate(x, y_main, verbose=0, return_dict=True)
    main_pred = model.predict(x, verbose=0)[0]
    assert logs["main_mae"] == pytest.approx(np.mean(np.abs(main_pred - y_main)), rel=1e-5)
    with pytest.raises(ValueError, match="expected 2 \\(one per output\\) or 1"):
        model.evaluate(x, [y_main, y_main, y_main], verbose=0)


def test_every_loss_none_without_add_loss_is_an_error():
    model = two_outputs()
    model.compile(optimizer="sgd", loss=[None, None])
    with pytest.raises(ValueError, match="No loss to compute.*add_loss"):
        model.fit(np.ones((4, 3), np.float32), [np.ones((4, 1)), np.ones((4, 2))], verbose=0)
