"""Run by tests/saving/test_keras_files.py with an interpreter that has Keras 3 (the
``HIAPI_KERAS_PYTHON`` variable names it; ``.ci/run`` makes one in ``.venv-keras``):
    python keras_reference.py FOLDER
For every ``FOLDER/<name>.keras`` that hiapi wrote, Keras loads it, predicts on the inputs in
``FOLDER/inputs.npz`` (``<name>/x0``, ``<name>/x1``, ...), loads ``FOLDER/<name>.weights.h5``
into the loaded model when present and predicts again, and writes everything to
``FOLDER/keras_outputs.npz`` (with each model's optimizer class and iteration count).
Any warning Keras gives while loading is an error. ``ScaleShift`` is the custom layer of
keras_test_models.py, registered under the same name.
"""
import os
import pathlib
import sys
import warnings

os.environ.setdefault("KERAS_BACKEND", "numpy")
import numpy as np  # noqa: E402

import keras  # noqa: E402


@keras.saving.register_keras_serializable(package="hiapi_tests")
class ScaleShift(keras.layers.Layer):
    """keras_test_models.ScaleShift, written for Keras."""

    def __init__(self, factor=1.0, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor

    def build(self, input_shape):
        self.scale = self.add_weight(shape=(input_shape[-1],), initializer="ones",
                                     name="scale")
        self.shift = self.add_weight(shape=(input_shape[-1],), initializer="zeros",
                                     name="shift")

    def call(self, inputs):
        return (inputs * self.scale + self.shift) * self.factor

    def compute_output_shape(self, input_shape):
        # without it Keras's numpy backend infers the shape by running call() on
        # uninitialised arrays, which may overflow (a warning, an error here)
        return input_shape

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


def outputs(model, x):
    y = model.predict(x, verbose=0)
    return [np.asarray(v) for v in (y if isinstance(y, (list, tuple)) else [y])]


def main(folder):
    folder = pathlib.Path(folder)
    inputs = np.load(folder / "inputs.npz")
    out = {"keras_version": np.array(keras.__version__)}
    for path in sorted(folder.glob("*.keras")):
        name = path.stem
        x = [inputs[k] for k in sorted(inputs) if k.startswith(f"{name}/x")]
        x = x if len(x) > 1 else x[0]
        with warnings.catch_warnings():     # Keras's warnings fail it, numpy's do not: its
            warnings.simplefilter("error")  # numpy backend builds models on np.empty arrays,
            warnings.filterwarnings("ignore", category=RuntimeWarning)   # which may overflow
            # Keras compiles a loaded model with loss scaling only under a mixed global
            # policy (its Sequential does not read its own policy back): set, as a script
            # that trains in mixed precision does before it loads
            keras.mixed_precision.set_global_policy(
                "mixed_float16" if name == "mixed_precision" else "float32")
            model = keras.saving.load_model(path)
            keras.mixed_precision.set_global_policy("float32")
        for i, y in enumerate(outputs(model, x)):
            out[f"{name}/y{i}"] = y
        if getattr(model, "optimizer", None) is not None:
            out[f"{name}/optimizer"] = np.array(type(model.optimizer).__name__)
            out[f"{name}/iterations"] = np.asarray(model.optimizer.iterations)
        weights = folder / f"{name}.weights.h5"
        if weights.exists():
            for layer in model.layers:          # forget the archive's weights first
                layer.set_weights([np.zeros_like(w) for w in layer.get_weights()])
            model.load_weights(weights)
            for i, y in enumerate(outputs(model, x)):
                out[f"{name}/weights_y{i}"] = y
    np.savez(folder / "keras_outputs.npz", **out)


if __name__ == "__main__":
    main(sys.argv[1])
