"""The patterns of Keras's guides on customizing training, written as users write them: a GAN
with two optimizers and its own compile(), one model training another (distillation), a
metric of one's own. Each must learn, on numpy and numba."""
import numpy as np
import pytest

import hiapi
from hiapi import layers, ops


class GAN(hiapi.Model):
    def __init__(self, discriminator, generator, latent_dim):
        super().__init__()
        self.discriminator = discriminator
        self.generator = generator
        self.latent_dim = latent_dim
        self.d_loss_tracker = hiapi.metrics.Mean(name="d_loss")
        self.g_loss_tracker = hiapi.metrics.Mean(name="g_loss")
        self.seed_generator = hiapi.random.SeedGenerator(1337)

    @property
    def metrics(self):
        return [self.d_loss_tracker, self.g_loss_tracker]

    def compile(self, d_optimizer, g_optimizer, loss_fn):
        super().compile()
        self.d_optimizer = d_optimizer
        self.g_optimizer = g_optimizer
        self.loss_fn = loss_fn

    def train_step(self, real):
        if isinstance(real, tuple):
            real = real[0]
        batch_size = ops.shape(real)[0]
        latent = hiapi.random.normal(shape=(batch_size, self.latent_dim),
                                     seed=self.seed_generator)
        generated = self.generator(latent)
        combined = ops.concatenate([generated, real], axis=0)
        labels = ops.concatenate([ops.ones((batch_size, 1)), ops.zeros((batch_size, 1))],
                                 axis=0)
        labels += 0.05 * hiapi.random.uniform(ops.shape(labels), seed=self.seed_generator)
        with hiapi.GradientTape() as tape:
            predictions = self.discriminator(combined)
            d_loss = self.loss_fn(labels, predictions)
        grads = tape.gradient(d_loss, self.discriminator.trainable_weights)
        self.d_optimizer.apply_gradients(zip(grads, self.discriminator.trainable_weights))
        latent = hiapi.random.normal(shape=(batch_size, self.latent_dim),
                                     seed=self.seed_generator)
        misleading_labels = ops.zeros((batch_size, 1))
        with hiapi.GradientTape() as tape:
            predictions = self.discriminator(self.generator(latent))
            g_loss = self.loss_fn(misleading_labels, predictions)
        grads = tape.gradient(g_loss, self.generator.trainable_weights)
        self.g_optimizer.apply_gradients(zip(grads, self.generator.trainable_weights))
        self.d_loss_tracker.update_state(d_loss)
        self.g_loss_tracker.update_state(g_loss)
        return {"d_loss": self.d_loss_tracker.result(), "g_loss": self.g_loss_tracker.result()}


def test_gan_with_two_optimizers_moves_the_generator_to_the_data(cpu_backend):
    hiapi.utils.set_random_seed(3)
    rng = np.random.default_rng(3)
    target = np.array([2.0, -1.0], "float32")
    real = (target + 0.3 * rng.normal(size=(2048, 2))).astype("float32")
    discriminator = hiapi.Sequential([hiapi.Input(shape=(2,)),
                                      layers.Dense(16, activation="relu"), layers.Dense(1)])
    generator = hiapi.Sequential([hiapi.Input(shape=(4,)),
                                  layers.Dense(16, activation="relu"), layers.Dense(2)])
    gan = GAN(discriminator, generator, latent_dim=4)
    gan.compile(d_optimizer=hiapi.optimizers.Adam(0.005, beta_1=0.5),
                g_optimizer=hiapi.optimizers.Adam(0.005, beta_1=0.5),
                loss_fn=hiapi.losses.BinaryCrossentropy(from_logits=True))

    latent = rng.normal(size=(512, 4)).astype("float32")
    before = np.linalg.norm(generator.predict(latent, verbose=0).mean(0) - target)
    history = gan.fit(real, batch_size=64, epochs=6, verbose=0).history
    after = np.linalg.norm(generator.predict(latent, verbose=0).mean(0) - target)
    assert sorted(history) == ["d_loss", "g_loss"]
    assert after < 0.35 * before, (before, after)
    assert abs(history["d_loss"][-1] - np.log(2)) < 0.1     # the discriminator is fooled
    assert int(gan.d_optimizer.iterations.numpy()) == int(gan.g_optimizer.iterations.numpy()) \
        == 192


class Distiller(hiapi.Model):
    """Keras's knowledge-distillation example: a trainer wrapping two other models."""

    def __init__(self, student, teacher):
        super().__init__()
        self.teacher = teacher
        self.student = student

    def compile(self, optimizer, metrics, student_loss_fn, distillation_loss_fn, alpha=0.1,
                temperature=3):
        super().compile(optimizer=optimizer, metrics=metrics)
        self.student_loss_fn = student_loss_fn
        self.distillation_loss_fn = distillation_loss_fn
        self.alpha = alpha
        self.temperature = temperature

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, allow_empty=False):
        teacher_pred = self.teacher(x, training=False)
        student_loss = self.student_loss_fn(y, y_pred)
        distillation_loss = self.distillation_loss_fn(
            ops.softmax(teacher_pred / self.temperature, axis=1),
            ops.softmax(y_pred / self.temperature, axis=1),
        ) * (self.temperature**2)
        return self.alpha * student_loss + (1 - self.alpha) * distillation_loss

    def call(self, x):
        return self.student(x)


def test_one_model_trains_another_by_distillation(cpu_backend):
    (x, y), (x_test, y_test) = hiapi.datasets.mnist.load_data()
    x = x[:3000].reshape(-1, 784).astype("float32") / 255.0
    y = y[:3000]
    x_test = x_test[:500].reshape(-1, 784).astype("float32") / 255.0
    teacher = hiapi.Sequential([hiapi.Input(shape=(784,)), layers.Dense(128, activation="relu"),
                                layers.Dense(10)])
    teacher.compile(optimizer="adam", metrics=["accuracy"],
                    loss=hiapi.losses.SparseCategoricalCrossentropy(from_logits=True))
    teacher.fit(x, y, epochs=2, batch_size=64, verbose=0)
    teacher_weights = teacher.get_weights()
    teacher.trainable = False                 # the distiller trains the student only
    student = hiapi.Sequential([hiapi.Input(shape=(784,)), layers.Dense(32, activation="relu"),
                                layers.Dense(10)])
    distiller = Distiller(student=student, teacher=teacher)
    distiller.compile(optimizer=hiapi.optimizers.Adam(),
                      metrics=[hiapi.metrics.SparseCategoricalAccuracy()],
                      student_loss_fn=hiapi.losses.SparseCategoricalCrossentropy(
                          from_logits=True),
                      distillation_loss_fn=hiapi.losses.KLDivergence(),
                      alpha=0.1, temperature=10)
    history = distiller.fit(x, y, epochs=5, batch_size=64, verbose=0).history
    assert history["loss"][-1] < history["loss"][0]
    assert history["sparse_categorical_accuracy"][-1] > 0.8
    accuracy = np.mean(np.argmax(student.predict(x_test, verbose=0), -1) == y_test[:500])
    assert accuracy > 0.8
    for old, new in zip(teacher_weights, teacher.get_weights()):     # only the student
        np.testing.assert_array_equal(old, new)


def test_a_metric_of_ones_own_in_fit_and_a_custom_step():
    class CategoricalTruePositives(hiapi.metrics.Metric):
        def __init__(self, name="categorical_true_positives", **kwargs):
            super().__init__(name=name, **kwargs)
            self.true_positives = self.add_variable(shape=(), initializer="zeros", name="ctp")

        def update_state(self, y_true, y_pred, sample_weight=None):
            hits = np.argmax(y_pred, axis=-1) == np.reshape(y_true, -1)
            self.true_positives.assign_add(np.sum(hits))

        def result(self):
            return float(self.true_positives)

    class Counting(hiapi.Model):
        def __init__(self):
            super().__init__()
            self.dense = layers.Dense(3)
            self.hits = CategoricalTruePositives()

        def call(self, inputs):
            return self.dense(inputs)

        def train_step(self, data):
            logs = super().train_step(data)
            x, y = data
            self.hits.update_state(y, self(x))
            return {**logs, "hits": self.hits.result()}

    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 96)
    x = (np.eye(3)[y] * 4 + rng.normal(size=(96, 3))).astype("float32")
    model = Counting()
    model.compile(optimizer=hiapi.optimizers.Adam(0.1),
                  loss=hiapi.losses.SparseCategoricalCrossentropy(from_logits=True))
    history = model.fit(x, y, batch_size=32, epochs=4, verbose=0).history
    assert history["hits"][-1] > history["hits"][0] and history["hits"][-1] > 80


class Sampling(layers.Layer):
    """z = mean + exp(log_var / 2) * eps, adding the KL divergence to N(0, 1) with add_loss."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.noise = layers.GaussianNoise(1.0, seed=7)

    def call(self, inputs, training=None):
        z_mean, z_log_var = inputs
        epsilon = self.noise(ops.zeros_like(z_mean), training=True)
        kl = -0.5 * (1 + z_log_var - ops.square(z_mean) - ops.exp(z_log_var))
        self.add_loss(ops.mean(ops.sum(kl, axis=1)) / 784.0)
        return z_mean + ops.exp(0.5 * z_log_var) * epsilon


class VAE(hiapi.Model):
    def __init__(self, latent_dim=2, **kwargs):
        super().__init__(**kwargs)
        self.hidden = layers.Dense(64, activation="relu")
        self.z_mean = layers.Dense(latent_dim)
        self.z_log_var = layers.Dense(latent_dim)
        self.sampling = Sampling()
        self.decoder = hiapi.Sequential([layers.Dense(64, activation="relu"),
                                         layers.Dense(784, activation="sigmoid")])

    def call(self, inputs, training=None):
        h = self.hidden(inputs)
        return self.decoder(self.sampling([self.z_mean(h), self.z_log_var(h)]))


class VAEWithOwnStep(VAE):
    def train_step(self, data):
        x, y = data
        with hiapi.GradientTape() as tape:
            reconstruction = self(x, training=True)
            loss = self.compute_loss(x=x, y=y, y_pred=reconstruction)   # + the KL term
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply(grads, self.trainable_variables)
        self._loss_tracker.update_state(loss)
        return {"loss": self._loss_tracker.result()}


@pytest.mark.parametrize("cls", [VAE, VAEWithOwnStep])
def test_vae_with_add_loss_on_mnist_learns(cpu_backend, cls):
    hiapi.utils.set_random_seed(5)
    (x, _), _ = hiapi.datasets.mnist.load_data()
    x = x[:2048].reshape(-1, 784).astype("float32") / 255.0
    vae = cls()
    vae.compile(optimizer=hiapi.optimizers.Adam(0.002), loss="binary_crossentropy")
    history = vae.fit(x, x, epochs=4, batch_size=128, verbose=0).history
    assert history["loss"][-1] < 0.75 * history["loss"][0], history["loss"]
    with_kl = vae.evaluate(x[:256], x[:256], verbose=0)
    assert np.isfinite(with_kl)
