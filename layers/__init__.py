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
from hiapi.layers.rnn import RNN
from hiapi.layers.rnn_cells import GRUCell, LSTMCell, SimpleRNNCell
from hiapi.layers.stacked_cells import StackedRNNCells
from hiapi.layers.masking import Masking
from hiapi.layers.wrappers import TimeDistributed, Wrapper
from hiapi.layers.bidirectional import Bidirectional
from hiapi.layers.attention import MultiHeadAttention
from hiapi.layers.lambda_layer import Lambda
from hiapi.layers.dot import Dot
from hiapi.layers.merge_functions import (add, average, concatenate, dot, maximum, minimum,
                                          multiply, subtract)
from hiapi.layers.preprocessing import Normalization, Rescaling
from hiapi.layers.augmentation import RandomCrop, RandomFlip, RandomRotation, RandomZoom
from hiapi.layers.conv_transpose import Conv1DTranspose, Conv2DTranspose
from hiapi.layers.depthwise_conv import (DepthwiseConv1D, DepthwiseConv2D, SeparableConv1D,
                                         SeparableConv2D)
from hiapi.layers.cropping import Cropping1D, Cropping2D
from hiapi.layers.identity import Identity
from hiapi.layers.repeat_vector import RepeatVector
from hiapi.layers.noise import GaussianDropout, GaussianNoise
from hiapi.layers.spatial_dropout import SpatialDropout1D, SpatialDropout2D, SpatialDropout3D
from hiapi.layers.group_norm import GroupNormalization
from hiapi.layers.serialization import deserialize, serialize
from hiapi.layers.advanced_activations import ELU, LeakyReLU, PReLU, ReLU, Softmax
