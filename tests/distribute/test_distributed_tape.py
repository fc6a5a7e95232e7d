"""Horovod's tape in one process (the ranks' average is in test_custom_steps_mpi.py): the
gradients unchanged, structure kept, and a clear refusal where fit's Strategy averages."""
import numpy as np
import pytest

import hiapi
from hiapi import layers, ops


def test_in_one_process_the_gradients_are_the_tapes():
    v = hiapi.Variable(np.float32(3.0))
    w = hiapi.Variable(np.ones(2, np.float32))
    with hiapi.distribute.DistributedGradientTape(hiapi.GradientTape()) as tape:
        y = v * v + ops.sum(w * 2.0)
    grads = tape.gradient(y, {"v": v, "w": w, "unused": hiapi.Variable(np.float32(0.0))})
    assert float(grads["v"]) == 6.0 and grads["unused"] is None
    np.testing.assert_array_equal(grads["w"], [2.0, 2.0])
    hiapi.distribute.broadcast_variables([v, w])            # one process: nothing to do
    assert float(v.numpy()) == 3.0


def test_inside_a_train_step_under_a_strategy_it_refuses_to_average_twice():
    class Doubled(hiapi.Model):
        def __init__(self):
            super().__init__()
            self.dense = layers.Dense(1)

        def call(self, inputs):
            return self.dense(inputs)

        def train_step(self, data):
            x, y = data
            with hiapi.GradientTape() as tape:
                loss = self.compute_loss(y=y, y_pred=self(x, training=True))
            tape = hiapi.distribute.DistributedGradientTape(tape)
            grads = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply(grads, self.trainable_variables)
            return {"loss": loss}

    with hiapi.distribute.Strategy().scope():
        model = Doubled()
        model.compile(optimizer="sgd", loss="mse")
    x = np.ones((8, 3), np.float32)
    with pytest.raises(RuntimeError, match="averaged twice"):
        model.fit(x, x[:, :1], epochs=1, verbose=0)
