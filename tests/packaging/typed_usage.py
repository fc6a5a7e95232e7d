"""A user's training script as a type checker sees it: read by mypy in
tests/packaging/test_types.py, never run (the marked lines are mistakes on purpose).

Every line ending in a comment ``mypy: <text>`` must draw a mypy error containing <text>, and
no other line may draw one: the correct calls type-check, and the hints catch the wrong ones
before a long job starts.
"""
from __future__ import annotations

import numpy as np

import hiapi
from hiapi import layers
from hiapi.hints import ActivationLike


def block(units: int, activation: ActivationLike = "relu") -> layers.Dense:
    return layers.Dense(units, activation=activation)


class StopAtLoss(hiapi.callbacks.Callback):
    def __init__(self, threshold: float) -> None:
        super().__init__()
        self.threshold = threshold

    def on_epoch_end(self, epoch: int, logs: dict[str, float] | None = None) -> None:
        if logs and logs["loss"] < self.threshold:
            self.model.stop_training = True


x = np.random.default_rng(0).normal(size=(64, 8)).astype("float32")
y = (x.sum(axis=1) > 0).astype("int64")

model = hiapi.Sequential([hiapi.Input(shape=(8,)), block(16), layers.Dropout(0.1),
                          layers.Dense(2, activation="softmax")])
model.compile(optimizer=hiapi.optimizers.Adam(learning_rate=1e-3),
              loss="sparse_categorical_crossentropy", metrics=["accuracy"])
history: hiapi.callbacks.History = model.fit(
    x, y, batch_size=16, epochs=2, verbose=0, validation_split=0.25,
    callbacks=[StopAtLoss(0.05), hiapi.callbacks.EarlyStopping(patience=1, mode="min")])
losses: list[float] = history.history["loss"]
probabilities = model.predict(x[:4], verbose=0)
assert isinstance(probabilities, np.ndarray)      # one output: one array
print(probabilities.shape, model.evaluate(x, y, verbose=0), losses)
model.save("model.hiapi")
restored: hiapi.Model = hiapi.models.load_model("model.hiapi")
schedule = hiapi.optimizers.schedules.CosineDecay(1e-3, decay_steps=100)
model.compile(optimizer=hiapi.optimizers.SGD(learning_rate=schedule, momentum=0.9),
              loss="sparse_categorical_crossentropy")

# ---- mistakes the hints catch ------------------------------------------------------------
model.fit(x, y, epochs="3")  # mypy: Argument "epochs" to "fit" of "Trainer" has incompatible type "str"
layers.Dense("16")  # mypy: Argument 1 to "Dense" has incompatible type "str"; expected "int"
layers.Conv2D(8, 3, data_format="NHWC")  # mypy: Argument "data_format" to "Conv2D"
layers.RandomFlip("diagonal")  # mypy: Argument 1 to "RandomFlip"
hiapi.optimizers.Adam(learning_rate="fast")  # mypy: Argument "learning_rate" to "Adam"
model.compile(optimizer=hiapi.optimizers.Adam, loss="mse")  # mypy: type "type[Adam]"
print(model.predict(x).shape)  # mypy: has no attribute "shape"
hiapi.callbacks.EarlyStopping(mode="minimum")  # mypy: Argument "mode" to "EarlyStopping"
