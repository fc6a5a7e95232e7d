"""A Keras script that overrides train_step must not train while silently ignoring it."""
import pytest

import hiapi
from hiapi import layers


def test_overriding_train_step_is_refused_at_compile():
    class Custom(hiapi.Model):
        def train_step(self, data):
            raise AssertionError("never called")

    inputs = hiapi.Input(shape=(3,))
    model = Custom(inputs, layers.Dense(1)(inputs))
    with pytest.raises(NotImplementedError, match="overrides train_step"):
        model.compile(optimizer="sgd", loss="mse")


def test_a_plain_subclass_still_compiles():
    class Plain(hiapi.Model):
        pass

    inputs = hiapi.Input(shape=(3,))
    Plain(inputs, layers.Dense(1)(inputs)).compile(optimizer="sgd", loss="mse")
