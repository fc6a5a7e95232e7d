"""The patterns of the Keras guides, in hiapi's words, each run with ``import hiapi as keras``
semantics: the Sequential model guide, the functional API guide, training and evaluation with
the built-in methods, and writing your own callbacks. Data are small random arrays so each
pattern runs in a second or two; the numbers checked are the guides' own claims (shapes,
weight counts, which hooks fire with which logs, what freezing and weighting do)."""
import numpy as np
import pytest

import hiapi as keras
from hiapi import layers, ops

RNG = np.random.default_rng(2024)


def classification_data(n=64, features=8, classes=3):
    x = RNG.normal(size=(n, features)).astype(np.float32)
    y = (np.abs(x[:, :classes]).argmax(1)).astype(np.int64)
    return x, y


# ------------------------------------------------------------------ the Sequential model guide
def test_sequential_list_add_pop_and_names():
    model = keras.Sequential([layers.Dense(2, activation="relu", name="layer1"),
                              layers.Dense(3, activation="relu", name="layer2"),
                              layers.Dense(4, name="layer3")])
    x = np.ones((3, 3), np.float32)
    assert model(x).shape == (3, 4)
    assert [layer.name for layer in model.layers] == ["layer1", "layer2", "layer3"]
    same = keras.Sequential(name="my_sequential")
    for layer in (layers.Dense(2, activation="relu"), layers.Dense(3, activation="relu"),
                  layers.Dense(4)):
        same.add(layer)
    same.pop()
    assert len(same.layers) == 2 and same.name == "my_sequential"


def test_sequential_weights_appear_once_the_input_shape_is_known():
    layer = layers.Dense(3)
    assert layer.weights == []
    layer(np.ones((1, 4), np.float32))
    assert len(layer.weights) == 2
    model = keras.Sequential([layers.Dense(2, activation="relu"), layers.Dense(4)])
    unbuilt = []
    model.summary(print_fn=unbuilt.append)     # Keras 3: layers listed, shapes and counts unknown
    assert "?" in unbuilt[0] and "0 (unbuilt)" in unbuilt[0] and "Total params: 0" in unbuilt[0]
    model.build((None, 4))
    assert len(model.weights) == 4
    with_input = keras.Sequential([keras.Input(shape=(4,)), layers.Dense(2, activation="relu")])
    assert with_input.layers[0].name.startswith("dense")    # the Input is not a layer
    text = []
    with_input.summary(print_fn=text.append)
    assert "Total params: 10" in "\n".join(text)


def test_sequential_incremental_convnet_and_feature_extraction():
    model = keras.Sequential([keras.Input(shape=(16, 16, 3)),
                              layers.Conv2D(4, 3, strides=2, activation="relu"),
                              layers.Conv2D(4, 3, activation="relu"),
                              layers.MaxPooling2D(2)])
    assert model.outputs[0].shape == (None, 2, 2, 4)
    model.add(layers.GlobalMaxPooling2D())
    model.add(layers.Dense(5))
    extractor = keras.Model(inputs=model.inputs,
                            outputs=[layer.output for layer in model.layers])
    features = extractor(RNG.normal(size=(2, 16, 16, 3)).astype(np.float32))
    assert [f.shape for f in features] == [(2, 7, 7, 4), (2, 5, 5, 4), (2, 2, 2, 4), (2, 4),
                                           (2, 5)]


def test_sequential_transfer_learning_freezes_all_but_the_last_layer():
    x, y = classification_data()
    model = keras.Sequential([keras.Input(shape=(8,)), layers.Dense(16, activation="relu"),
                              layers.Dense(16, activation="relu"), layers.Dense(3)])
    for layer in model.layers[:-1]:
        layer.trainable = False
    frozen = [w.copy() for w in model.get_weights()[:4]]
    model.compile(optimizer="adam",
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(x, y, epochs=2, batch_size=16, verbose=0)
    for before, after in zip(frozen, model.get_weights()[:4]):
        np.testing.assert_array_equal(before, after)
    assert len(model.trainable_weights) == 2


# ------------------------------------------------------------------ the functional API guide
def test_functional_multi_input_multi_output_ticket_model():
    num_tags, num_words, num_departments, n = 6, 50, 4, 32
    title_input = keras.Input(shape=(5,), name="title", dtype="int32")
    body_input = keras.Input(shape=(7,), name="body", dtype="int32")
    tags_input = keras.Input(shape=(num_tags,), name="tags")
    title_features = layers.LSTM(8)(layers.Embedding(num_words, 8)(title_input))
    body_features = layers.LSTM(4)(layers.Embedding(num_words, 8)(body_input))
    x = layers.concatenate([title_features, body_features, tags_input])
    priority_pred = layers.Dense(1, name="priority")(x)
    department_pred = layers.Dense(num_departments, name="department")(x)
    model = keras.Model(inputs=[title_input, body_input, tags_input],
                        outputs={"priority": priority_pred, "department": department_pred})
    model.compile(optimizer=keras.optimizers.RMSprop(1e-3),
                  loss={"priority": keras.losses.BinaryCrossentropy(from_logits=True),
                        "department": keras.losses.CategoricalCrossentropy(from_logits=True)},
                  loss_weights={"priority": 1.0, "department": 0.2})
    data = {"title": RNG.integers(num_words, size=(n, 5)),
            "body": RNG.integers(num_words, size=(n, 7)),
            "tags": RNG.integers(2, size=(n, num_tags)).astype("float32")}
    targets = {"priority": RNG.random((n, 1)),
               "department": np.eye(num_departments)[RNG.integers(num_departments, size=n)]}
    history = model.fit(data, targets, epochs=2, batch_size=16, verbose=0)
    assert len(history.history["loss"]) == 2 and np.isfinite(history.history["loss"]).all()
    predictions = model.predict(data, verbose=0)
    assert predictions["priority"].shape == (n, 1)
    assert predictions["department"].shape == (n, num_departments)


def test_functional_shared_layers_and_residual_connections():
    shared_embedding = layers.Embedding(100, 8)
    text_a, text_b = keras.Input(shape=(4,), dtype="int32"), keras.Input(shape=(4,),
                                                                         dtype="int32")
    encoded_a, encoded_b = shared_embedding(text_a), shared_embedding(text_b)
    shared = keras.Model([text_a, text_b], layers.subtract([encoded_a, encoded_b]))
    ids = RNG.integers(100, size=(3, 4))
    np.testing.assert_array_equal(shared.predict([ids, ids], verbose=0), 0.0)
    assert len(shared.weights) == 1

    inputs = keras.Input(shape=(8, 8, 3), name="img")
    x = layers.Conv2D(8, 3, activation="relu")(inputs)
    block_1_output = layers.MaxPooling2D(2)(x)
    x = layers.Conv2D(8, 3, activation="relu", padding="same")(block_1_output)
    block_2_output = layers.add([x, block_1_output])
    x = layers.Conv2D(8, 3, activation="relu", padding="same")(block_2_output)
    x += block_2_output                              # the operator form of the same join
    outputs = layers.Dense(10)(layers.GlobalAveragePooling2D()(x))
    toy_resnet = keras.Model(inputs, outputs, name="toy_resnet")
    toy_resnet.compile(optimizer="adam",
                       loss=keras.losses.CategoricalCrossentropy(from_logits=True),
                       metrics=["acc"])
    images = RNG.normal(size=(16, 8, 8, 3)).astype(np.float32)
    labels = np.eye(10)[RNG.integers(10, size=16)]
    toy_resnet.fit(images, labels, batch_size=8, epochs=1, validation_split=0.25, verbose=0)
    assert toy_resnet.predict(images[:2], verbose=0).shape == (2, 10)


def test_functional_models_as_layers_and_ensembles():
    encoder_input = keras.Input(shape=(6,), name="original")
    encoder = keras.Model(encoder_input, layers.Dense(2, name="code")(encoder_input),
                          name="encoder")
    decoder_input = keras.Input(shape=(2,), name="encoded")
    decoder = keras.Model(decoder_input, layers.Dense(6)(decoder_input), name="decoder")
    autoencoder_input = keras.Input(shape=(6,))
    autoencoder = keras.Model(autoencoder_input, decoder(encoder(autoencoder_input)))
    x = RNG.normal(size=(4, 6)).astype(np.float32)
    np.testing.assert_allclose(autoencoder.predict(x, verbose=0),
                               decoder.predict(encoder.predict(x, verbose=0), verbose=0),
                               rtol=1e-5, atol=1e-6)

    def get_model():
        inputs = keras.Input(shape=(6,))
        return keras.Model(inputs, layers.Dense(1)(inputs))
    members = [get_model() for _ in range(3)]
    inputs = keras.Input(shape=(6,))
    ensemble = keras.Model(inputs, layers.average([m(inputs) for m in members]))
    expected = np.mean([m.predict(x, verbose=0) for m in members], axis=0)
    np.testing.assert_allclose(ensemble.predict(x, verbose=0), expected, rtol=1e-5, atol=1e-6)


@keras.saving.register_keras_serializable(package="guides")
class CustomDense(layers.Layer):
    def __init__(self, units=32, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1], self.units),
                                 initializer="random_normal", name="w")
        self.b = self.add_weight(shape=(self.units,), initializer="random_normal", name="b")

    def call(self, inputs):                          # no training argument, as in the guide
        return ops.matmul(inputs, self.w.read) + self.b.read

    def get_config(self):
        return {**super().get_config(), "units": self.units}


def test_functional_custom_layer_serializes(tmp_path):
    inputs = keras.Input((4,))
    model = keras.Model(inputs, CustomDense(10)(inputs))
    model.save(tmp_path / "custom.hiapi")
    restored = keras.models.load_model(tmp_path / "custom.hiapi")
    x = RNG.normal(size=(2, 4)).astype(np.float32)
    np.testing.assert_array_equal(restored.predict(x, verbose=0), model.predict(x, verbose=0))
    config = model.layers[-1].get_config()
    assert CustomDense.from_config(config).units == 10


# ------------------------------------------------------ training & evaluation with fit()
def mlp(features=8, classes=3, activation=None):
    inputs = keras.Input(shape=(features,), name="digits")
    x = layers.Dense(16, activation="relu", name="dense_1")(inputs)
    return keras.Model(inputs, layers.Dense(classes, activation=activation,
                                            name="predictions")(x))


def test_fit_with_validation_data_evaluate_and_predict():
    x, y = classification_data(96)
    model = mlp(activation="softmax")
    model.compile(optimizer=keras.optimizers.RMSprop(),
                  loss=keras.losses.SparseCategoricalCrossentropy(),
                  metrics=[keras.metrics.SparseCategoricalAccuracy()])
    history = model.fit(x[:64], y[:64], batch_size=16, epochs=2,
                        validation_data=(x[64:], y[64:]), verbose=0)
    assert set(history.history) >= {"loss", "sparse_categorical_accuracy", "val_loss",
                                    "val_sparse_categorical_accuracy"}
    results = model.evaluate(x[64:], y[64:], batch_size=16, verbose=0)
    assert results[0] == pytest.approx(history.history["val_loss"][-1], rel=1e-5)
    assert model.predict(x[:3], verbose=0).shape == (3, 3)


def custom_mean_squared_error(y_true, y_pred):
    return ops.mean(ops.square(y_true - y_pred), axis=-1)


class CustomMSE(keras.losses.Loss):
    def __init__(self, regularization_factor=0.1, name="custom_mse"):
        super().__init__(name=name)
        self.regularization_factor = regularization_factor

    def call(self, y_true, y_pred):
        mse = ops.mean(ops.square(y_true - y_pred), axis=-1)
        reg = ops.mean(ops.square(0.5 - y_pred), axis=-1)
        return mse + reg * self.regularization_factor


def test_custom_loss_function_and_loss_class_match_numpy():
    x, y = classification_data()
    y_one_hot = np.eye(3, dtype=np.float32)[y]
    for loss, reference in [
            (custom_mean_squared_error, lambda p: ((y_one_hot - p) ** 2).mean(-1).mean()),
            (CustomMSE(), lambda p: (((y_one_hot - p) ** 2).mean(-1)
                                     + 0.1 * ((0.5 - p) ** 2).mean(-1)).mean())]:
        model = mlp()
        model.compile(optimizer="adam", loss=loss)
        value = model.evaluate(x, y_one_hot, batch_size=64, verbose=0)
        assert value == pytest.approx(reference(model.predict(x, verbose=0)), rel=1e-5)
        model.fit(x, y_one_hot, batch_size=32, epochs=1, verbose=0)


class CategoricalTruePositives(keras.metrics.Metric):
    def __init__(self, name="categorical_true_positives", **kwargs):
        super().__init__(name=name, **kwargs)
        self.true_positives = self.add_variable(shape=(), name="ctp", initializer="zeros")

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_pred = ops.reshape(ops.argmax(y_pred, axis=1), (-1, 1))
        # hiapi hands a sparse loss's labels to metrics as (batch,), Keras as given (batch, 1)
        y_true = ops.reshape(y_true, (-1, 1))
        values = ops.cast(y_true, "int32") == ops.cast(y_pred, "int32")
        values = ops.cast(values, "float32")
        if sample_weight is not None:
            values = ops.multiply(values, ops.cast(sample_weight, "float32"))
        self.true_positives.assign_add(ops.sum(values))

    def result(self):
        return self.true_positives.value

    def reset_state(self):
        self.true_positives.assign(0.0)


def test_custom_metric_counts_true_positives():
    x, y = classification_data()
    model = mlp()
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(
        from_logits=True), metrics=[CategoricalTruePositives()])
    results = model.evaluate(x, y[:, None], batch_size=16, return_dict=True, verbose=0)
    hits = (model.predict(x, verbose=0).argmax(1) == y).sum()
    assert results["categorical_true_positives"] == hits
    history = model.fit(x, y[:, None], batch_size=16, epochs=1, verbose=0)
    assert "categorical_true_positives" in history.history


class ActivityRegularizationLayer(layers.Layer):
    def call(self, inputs):
        self.add_loss(1e-2 * ops.sum(inputs))
        return inputs


def test_add_loss_in_a_layer_adds_to_the_training_loss():
    x, y = classification_data()
    inputs = keras.Input(shape=(8,))
    hidden = ActivityRegularizationLayer()(layers.Dense(16, activation="relu")(inputs))
    model = keras.Model(inputs, layers.Dense(3)(hidden))
    plain = keras.Model(inputs, model.outputs[0])    # same weights, also with the layer
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(
        from_logits=True))
    with_penalty = model.evaluate(x, y, batch_size=64, verbose=0)
    hidden_values = keras.Model(inputs, hidden).predict(x, verbose=0)
    logits = model.predict(x, verbose=0)
    log_p = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    assert with_penalty == pytest.approx(-log_p[np.arange(64), y].mean()
                                         + 1e-2 * hidden_values.sum(), rel=1e-4)
    assert plain.predict(x, verbose=0).shape == (64, 3)


def test_class_weight_and_sample_weight_weigh_the_loss_alike():
    x, y = classification_data()
    class_weight = {0: 1.0, 1: 1.0, 2: 5.0}
    sample_weight = np.where(y == 2, 5.0, 1.0)
    weights = []
    for kwargs in ({"class_weight": class_weight}, {"sample_weight": sample_weight}):
        keras.utils.set_random_seed(4)
        model = mlp()
        model.compile(optimizer=keras.optimizers.SGD(0.1),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0, **kwargs)
        weights.append(model.get_weights())
    for a, b in zip(*weights):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_validation_split_uses_the_last_fraction():
    x, y = classification_data(80)
    model = mlp()
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(
        from_logits=True))
    history = model.fit(x, y, batch_size=16, validation_split=0.25, epochs=1, verbose=0)
    assert history.history["val_loss"][0] == pytest.approx(
        model.evaluate(x[60:], y[60:], batch_size=16, verbose=0), rel=1e-5)


def test_multi_output_losses_and_metrics_by_name():
    image_input = keras.Input(shape=(8,), name="img_input")
    x = layers.Dense(8, activation="relu")(image_input)
    score_output = layers.Dense(1, name="score_output")(x)
    class_output = layers.Dense(3, name="class_output")(x)
    model = keras.Model(image_input, [score_output, class_output])
    model.compile(optimizer=keras.optimizers.RMSprop(1e-3),
                  loss={"score_output": keras.losses.MeanSquaredError(),
                        "class_output": keras.losses.CategoricalCrossentropy(
                            from_logits=True)},
                  metrics={"score_output": [keras.metrics.MeanAbsolutePercentageError(),
                                            keras.metrics.MeanAbsoluteError()],
                           "class_output": [keras.metrics.CategoricalAccuracy()]},
                  loss_weights={"score_output": 2.0, "class_output": 1.0})
    x_data, y = classification_data()
    logs = model.fit(x_data, {"score_output": RNG.random((64, 1)),
                              "class_output": np.eye(3)[y]},
                     batch_size=32, epochs=1, verbose=0).history
    assert {"score_output_loss", "class_output_loss", "score_output_mean_absolute_error",
            "class_output_categorical_accuracy"} <= set(logs)


def test_generators_and_py_dataset_feed_fit():
    x, y = classification_data()

    class ExamplePyDataset(keras.utils.PyDataset):
        def __init__(self, x, y, batch_size, **kwargs):
            super().__init__(**kwargs)
            self.x, self.y, self.batch_size = x, y, batch_size

        def __len__(self):
            return int(np.ceil(len(self.x) / float(self.batch_size)))

        def __getitem__(self, idx):
            rows = slice(idx * self.batch_size, (idx + 1) * self.batch_size)
            return self.x[rows], self.y[rows]

    model = mlp()
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(
        from_logits=True))
    history = model.fit(ExamplePyDataset(x, y, batch_size=16), epochs=2, verbose=0)
    assert len(history.history["loss"]) == 2

    def batches():
        while True:
            for start in range(0, 64, 16):
                yield x[start:start + 16], y[start:start + 16]
    history = model.fit(batches(), steps_per_epoch=4, epochs=2, verbose=0)
    assert len(history.history["loss"]) == 2


# ----------------------------------------------------------- writing your own callbacks
HOOKS = ["on_train_begin", "on_train_end", "on_epoch_begin", "on_epoch_end",
         "on_train_batch_begin", "on_train_batch_end", "on_test_begin", "on_test_end",
         "on_test_batch_begin", "on_test_batch_end", "on_predict_begin", "on_predict_end",
         "on_predict_batch_begin", "on_predict_batch_end"]


class RecordingCallback(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.calls = []
        for hook in HOOKS:
            setattr(self, hook, self._recorder(hook))

    def _recorder(self, hook):
        def record(*args):
            logs = args[-1] if args else None
            self.calls.append((hook, args[0] if len(args) == 2 else None,
                               sorted(logs) if isinstance(logs, dict) else logs))
        return record


def regression_model():
    inputs = keras.Input(shape=(4,))
    model = keras.Model(inputs, layers.Dense(1)(inputs))
    model.compile(optimizer=keras.optimizers.RMSprop(learning_rate=0.1),
                  loss="mean_squared_error", metrics=["mean_absolute_error"])
    return model


def test_every_callback_hook_fires_with_its_logs():
    x = RNG.normal(size=(32, 4)).astype(np.float32)
    y = x.sum(1, keepdims=True)
    model, callback = regression_model(), RecordingCallback()
    model.fit(x, y, batch_size=16, epochs=2, validation_split=0.5, verbose=0,
              callbacks=[callback])
    model.evaluate(x, y, batch_size=16, verbose=0, callbacks=[callback])
    model.predict(x, batch_size=16, verbose=0, callbacks=[callback])
    hooks = [call[0] for call in callback.calls]
    assert set(hooks) == set(HOOKS)
    assert hooks[0] == "on_train_begin" and hooks.count("on_epoch_end") == 2
    assert hooks.count("on_train_batch_end") == 2       # 16 training samples, batch 16
    epoch_end = [c for c in callback.calls if c[0] == "on_epoch_end"]
    assert [c[1] for c in epoch_end] == [0, 1]
    # Keras's keys, as the guide prints them: no learning_rate (only its LR callbacks log it)
    assert epoch_end[0][2] == ["loss", "mean_absolute_error", "val_loss",
                               "val_mean_absolute_error"]
    assert hooks[:10] == ["on_train_begin", "on_epoch_begin", "on_train_batch_begin",
                          "on_train_batch_end", "on_test_begin", "on_test_batch_begin",
                          "on_test_batch_end", "on_test_end", "on_epoch_end",
                          "on_epoch_begin"]
    assert hooks[-1] == "on_predict_end" and hooks.count("on_predict_batch_end") == 2
    batch_end = next(c for c in callback.calls if c[0] == "on_train_batch_end")
    assert {"loss", "mean_absolute_error"} <= set(batch_end[2])
    predict_end = next(c for c in callback.calls if c[0] == "on_predict_batch_end")
    assert predict_end[2] == ["outputs"]


class EarlyStoppingAtMinLoss(keras.callbacks.Callback):
    """The guide's example: stop when the loss stops falling and restore the best weights."""

    def __init__(self, patience=0):
        super().__init__()
        self.patience = patience
        self.best_weights = None

    def on_train_begin(self, logs=None):
        self.wait, self.stopped_epoch, self.best = 0, 0, np.inf

    def on_epoch_end(self, epoch, logs=None):
        current = logs.get("loss")
        if np.less(current, self.best):
            self.best, self.wait = current, 0
            self.best_weights = self.model.get_weights()
        else:
            self.wait += 1
            if self.wait >= self.patience:
                self.stopped_epoch = epoch
                self.model.stop_training = True
                self.model.set_weights(self.best_weights)


class CustomLearningRateScheduler(keras.callbacks.Callback):
    def __init__(self, schedule):
        super().__init__()
        self.schedule = schedule

    def on_epoch_begin(self, epoch, logs=None):
        lr = float(np.array(self.model.optimizer.learning_rate))
        self.model.optimizer.learning_rate = self.schedule(epoch, lr)


def test_early_stopping_and_learning_rate_callbacks_from_the_guide():
    x = RNG.normal(size=(32, 4)).astype(np.float32)
    y = x.sum(1, keepdims=True)
    model = regression_model()
    model.optimizer.learning_rate = 5.0            # diverges, so the loss rises at once
    stopper = EarlyStoppingAtMinLoss(patience=1)
    history = model.fit(x, y, batch_size=32, epochs=30, verbose=0, callbacks=[stopper])
    assert len(history.history["loss"]) < 30 and stopper.stopped_epoch > 0
    np.testing.assert_array_equal(model.get_weights()[0], stopper.best_weights[0])

    seen = []
    model = regression_model()
    scheduler = CustomLearningRateScheduler(lambda epoch, lr: 0.05 if epoch >= 1 else lr)
    recorder = keras.callbacks.LambdaCallback(
        on_epoch_end=lambda epoch, logs: seen.append(float(model.optimizer.learning_rate)))
    model.fit(x, y, batch_size=32, epochs=3, verbose=0, callbacks=[scheduler, recorder])
    assert seen == pytest.approx([0.1, 0.05, 0.05])


def test_builtin_callbacks_checkpoints_and_schedules_from_the_training_guide(tmp_path):
    x, y = classification_data(80)
    model = mlp()
    lr_schedule = keras.optimizers.schedules.ExponentialDecay(
        initial_learning_rate=0.1, decay_steps=5, decay_rate=0.96, staircase=True)
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=lr_schedule),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["sparse_categorical_accuracy"])
    callbacks = [
        keras.callbacks.EarlyStopping(monitor="val_loss", min_delta=1e-2, patience=2),
        keras.callbacks.ModelCheckpoint(filepath=str(tmp_path / "mymodel_{epoch}.hiapi"),
                                        save_best_only=True, monitor="val_loss"),
    ]
    history = model.fit(x, y, epochs=4, batch_size=16, callbacks=callbacks,
                        validation_split=0.2, verbose=0)
    saved = sorted(p.name for p in tmp_path.iterdir())
    assert saved and saved[0] == "mymodel_1.hiapi"
    restored = keras.models.load_model(tmp_path / saved[-1])
    assert restored.predict(x[:2], verbose=0).shape == (2, 3)
    steps = int(model.optimizer.iterations.numpy())      # the schedule follows the updates
    assert steps == 4 * len(history.epoch)
    assert model.optimizer.current_learning_rate() == pytest.approx(0.1 * 0.96 ** (steps // 5))
