"""An op's error raised inside a layer names the layer (found by the layer fuzzer: a Conv1D on
too short an input said only "conv2d: input of spatial size (1, 1) ...")."""
import numpy as np
import pytest

import hiapi
from hiapi import layers
from hiapi.graph import placeholder


def test_op_error_inside_a_layer_names_the_layer_and_keeps_its_type():
    with pytest.raises(ValueError, match=r"^Layer 'short' \(Conv1D\): conv2d: input of spatial "
                                         r"size \(1, 1\) is smaller than the kernel"):
        layers.Conv1D(2, 3, name="short")(placeholder((None, 1, 4)))
    with pytest.raises(ValueError, match=r"^Layer 'short_eager' \(Conv1D\): conv2d"):
        layers.Conv1D(2, 3, name="short_eager")(np.ones((1, 2, 4), np.float32))


def test_a_message_that_names_the_layer_is_left_alone():
    with pytest.raises(ValueError, match=r"^Reshape 'r': cannot reshape"):
        layers.Reshape((5,), name="r")(np.ones((2, 3), np.float32))


def test_only_the_innermost_layer_adds_its_name():
    inner = hiapi.Sequential([hiapi.Input(shape=(None, 4)), layers.Conv1D(2, 3, name="deep")],
                             name="inner")
    with pytest.raises(ValueError) as raised:
        inner(hiapi.Input(shape=(1, 4)))
    assert str(raised.value).startswith("Layer 'deep' (Conv1D): conv2d: ")
    assert str(raised.value).count("Layer '") == 1
