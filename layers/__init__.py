"""Layers with Keras's names, arguments and defaults."""
from hiapi.layers.layer import Layer
from hiapi.layers.input_spec import InputSpec
from hiapi.layers.input_layer import Input, InputLayer
from hiapi.layers.dense import Dense
from hiapi.layers.activation import Activation
from hiapi.layers.flatten import Flatten
