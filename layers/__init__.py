"""Layers with Keras's names, arguments and defaults."""
from hiapi.layers.layer import Layer
from hiapi.layers.input_spec import InputSpec
from hiapi.layers.input_layer import Input, InputLayer
from hiapi.layers.dense import Dense
from hiapi.layers.activation import Activation
from hiapi.layers.flatten import Flatten
from hiapi.layers.conv import Conv1D, Conv2D
from hiapi.layers.pooling import (AveragePooling1D, AveragePooling2D, GlobalAveragePooling1D,
                                  GlobalAveragePooling2D, GlobalMaxPooling1D,
                                  GlobalMaxPooling2D, MaxPooling1D, MaxPooling2D)
from hiapi.layers.normalization import BatchNormalization, LayerNormalization
from hiapi.layers.dropout import Dropout
from hiapi.layers.reshaping import Permute, Reshape, UpSampling2D, ZeroPadding2D
from hiapi.layers.embedding import Embedding
from hiapi.layers.merge import Add, Average, Concatenate, Maximum, Minimum, Multiply, Subtract
from hiapi.layers.recurrent import GRU, LSTM, SimpleRNN
from hiapi.layers.masking import Masking
