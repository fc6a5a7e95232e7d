"""Layer state, ``add_loss`` and ``hiapi.random`` in subclassed models, as Keras's guide
"Making new layers and models via subclassing" ends: a variational autoencoder whose encoder
samples with a SeedGenerator and whose model adds the KL divergence with ``add_loss``."""
import numpy as np
import pytest

import hiapi
from hiapi import layers, ops, random


class Sampling(layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.seed_generator = random.SeedGenerator(1337)

    def call(self, inputs):
        z_mean, z_log_var = inputs
        batch, dim = ops.shape(z_mean)[0], ops.shape(z_mean)[1]
        epsilon = random.normal(shape=(batch, dim), seed=self.seed_generator)
        return z_mean + ops.exp(0.5 * z_log_var) * epsilon


class Encoder(layers.Layer):
    def __init__(self, latent_dim=4, intermediate_dim=16, **kwargs):
        super().__init__(**kwargs)
        self.dense_proj = layers.Dense(intermediate_dim, activation="relu")
        self.dense_mean = layers.Dense(latent_dim)
        self.dense_log_var = layers.Dense(latent_dim)
        self.sampling = Sampling()

    def call(self, inputs):
        x = self.dense_proj(inputs)
        z_mean, z_log_var = self.dense_mean(x), self.dense_log_var(x)
        return z_mean, z_log_var, self.sampling((z_mean, z_log_var))


class VariationalAutoEncoder(hiapi.Model):
    def __init__(self, original_dim, intermediate_dim=16, latent_dim=4, **kwargs):
        super().__init__(**kwargs)
        self.encoder = Encoder(latent_dim, intermediate_dim)
        self.decoder_proj = layers.Dense(intermediate_dim, activation="relu")
        self.decoder_out = layers.Dense(original_dim, activation="sigmoid")
        self.seen = self.add_weight((), "zeros", "seen", trainable=False)

    def call(self, inputs):
        z_mean, z_log_var, z = self.encoder(inputs)
        reconstructed = self.decoder_out(self.decoder_proj(z))
        kl_loss = -0.5 * ops.mean(z_log_var - ops.square(z_mean) - ops.exp(z_log_var) + 1)
        self.add_loss(kl_loss)
        self.seen.assign_add(ops.cast(ops.size(inputs[:, 0]), "float32"))   # the batch size
        return reconstructed


def data():
    rng = np.random.default_rng(0)
    centres = rng.random((4, 16))
    return np.clip(centres[rng.integers(0, 4, 256)] + rng.normal(0, 0.05, (256, 16)),
                   0, 1).astype("float32")


@pytest.mark.parametrize("with_loss", [True, False])
def test_the_guide_vae_trains_with_its_kl_loss_and_sampling(with_loss):
    hiapi.utils.set_random_seed(0)
    x = data()
    vae = VariationalAutoEncoder(16)
    if with_loss:              # the guide's compile: MSE + the KL added in call
        vae.compile(hiapi.optimizers.Adam(1e-2), loss=hiapi.losses.MeanSquaredError())
        history = vae.fit(x, x, epochs=8, batch_size=64, verbose=0).history["loss"]
    else:                      # the KL alone: no loss in compile, no y
        vae.compile(hiapi.optimizers.Adam(1e-2))
        history = vae.fit(x, epochs=8, batch_size=64, verbose=0).history["loss"]
    assert history[-1] < 0.5 * history[0]
    assert vae.seen.numpy() == 8 * 256                          # state updated every step
    assert vae.encoder.sampling.seed_generator.state.numpy().tolist() == [1337, 8 * 4]
    assert vae.encoder.sampling.seed_generator.state in vae.state_variables
    vae(x[:8])
    (kl,) = vae.losses            # the KL of that call, as a value
    z_mean = vae.encoder.dense_mean(vae.encoder.dense_proj(x[:8]))
    z_log_var = vae.encoder.dense_log_var(vae.encoder.dense_proj(x[:8]))
    expected = -0.5 * np.mean(z_log_var - z_mean ** 2 - np.exp(z_log_var) + 1)
    assert kl == pytest.approx(expected, rel=1e-4)


class PenalisedRegression(hiapi.Model):
    """Keras's ``compute_loss`` docstring: the model's own loss plus ``ops.sum(self.losses)``."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense = layers.Dense(1, kernel_regularizer=hiapi.regularizers.L2(0.5))

    def call(self, x):
        y = self.dense(x)
        self.add_loss(0.25 * ops.mean(y))
        return y

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        return ops.mean((y_pred - y) ** 2) + ops.sum(self.losses)


def test_a_custom_compute_loss_adds_model_losses_in_the_step():
    model = PenalisedRegression()
    model.compile(optimizer="sgd")
    rng = np.random.default_rng(2)
    x, y = rng.normal(size=(16, 3)).astype("float32"), rng.normal(size=(16, 1)).astype("float32")
    model.fit(x, y, batch_size=16, epochs=1, verbose=0)
    kernel, bias = model.dense.get_weights()
    pred = x @ kernel + bias
    expected = np.mean((pred - y) ** 2) + 0.25 * pred.mean() + 0.5 * np.sum(kernel ** 2)
    assert model.evaluate(x, y, batch_size=16, verbose=0) == pytest.approx(expected, rel=1e-5)
    assert len(model.losses) == 2           # after evaluate's trace: add_loss, then the penalty
