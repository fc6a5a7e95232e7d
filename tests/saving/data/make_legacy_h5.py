"""Writes Keras 2's HDF5 files under tests/saving/data/keras/ with real Keras 3 (which still
writes that layout): ``legacy_model.h5`` (``model.save("m.h5")``: weights under
``model_weights``) and ``legacy_weights.h5`` (the layout of Keras 2's ``save_weights("w.h5")``:
weights at the root), and legacy_predictions.npz, Keras's predictions on fixed inputs.
tests/saving/test_legacy_h5.py loads them with hiapi. Trained one step first, so batch-norm
statistics are not their initial values. Run by hand where Keras is installed:
    KERAS_BACKEND=jax python tests/saving/data/make_legacy_h5.py
"""
import pathlib

import h5py
import numpy as np

import keras
from keras import layers
from keras.src.legacy.saving import legacy_h5_format

HERE = pathlib.Path(__file__).parent
keras.utils.set_random_seed(0)
rng = np.random.default_rng(0)

inputs = keras.Input((6, 6, 2))
x = layers.Conv2D(4, 3, activation="relu", name="conv")(inputs)
x = layers.BatchNormalization(name="norm")(x)
x = layers.Flatten(name="flatten")(x)
x = layers.Dense(5, activation="relu", name="hidden")(x)
outputs = layers.Dense(3, name="logits")(x)
model = keras.Model(inputs, outputs, name="legacy")
model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
x_train = rng.normal(size=(8, 6, 6, 2)).astype("float32")
model.fit(x_train, rng.integers(0, 3, 8), epochs=1, verbose=0)
model.save(HERE / "keras" / "legacy_model.h5")
with h5py.File(HERE / "keras" / "legacy_weights.h5", "w") as file:
    legacy_h5_format.save_weights_to_hdf5_group(file, model)
x_test = rng.normal(size=(4, 6, 6, 2)).astype("float32")
np.savez(HERE / "legacy_predictions.npz", x=x_test, y=model.predict(x_test, verbose=0))
