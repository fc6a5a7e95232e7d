"""What the layer fuzzer draws: one ``Case`` per layer in ``CASES``.

A case is the layer class, a strategy for its constructor arguments (valid values mostly, some
invalid ones on purpose) and a function from those arguments to a strategy for its input (an
array, or a list of arrays for merge layers). Fuzzing a new layer is one more entry::

    Case(layers.MyLayer, kwargs(units=st.integers(-1, 5)), lambda kw: tensors(2, 4)),

Regression inputs that once failed go in the entry's ``examples`` as (kwargs, inputs, training).
"""
import dataclasses
import math

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from hiapi import layers
from hiapi.graph import ops

# finite inputs, with the edge values hypothesis likes (0, +-10, repeated values via ``fill``)
FLOATS = st.floats(-10, 10, width=32, allow_subnormal=False)
FORMATS = st.sampled_from([None, "channels_last", "channels_first"])
ACTIVATIONS = st.sampled_from([None, "linear", "relu", "sigmoid", "tanh", "softmax",
                               "log_softmax", "elu", "softplus", "exponential"])
PADDINGS = st.sampled_from(["valid", "same", "VALID", "full"])
BATCH = st.integers(1, 3)


@dataclasses.dataclass
class Case:
    layer: type
    kwargs: st.SearchStrategy                 # draws the constructor's keyword arguments
    inputs: object                            # kwargs -> strategy for the input
    examples: list = dataclasses.field(default_factory=list)
    max_examples: int = 60
    spread: bool = False                      # a list input goes as layer(*inputs)

    @property
    def name(self):
        return self.layer.__name__

    def strategy(self):
        return self.kwargs.flatmap(lambda kw: st.tuples(st.just(kw), self.inputs(kw),
                                                        st.booleans()))


def kwargs(**fields):
    """Constructor arguments, each drawn from its strategy or left out (the default)."""
    return st.fixed_dictionaries({}, optional=fields)


def array(shape):
    return hnp.arrays(np.float32, shape, elements=FLOATS)


def shapes(min_rank, max_rank, max_side=5):
    """Full shapes (batch first) of rank ``min_rank..max_rank``, at most ~400 values."""
    side = max(2, min(max_side, int(400 ** (1 / max(max_rank - 1, 1)))))
    return st.tuples(BATCH, hnp.array_shapes(min_dims=min_rank - 1, max_dims=max_rank - 1,
                                             min_side=1, max_side=side)).map(
        lambda s: (s[0],) + s[1])


def tensors(min_rank, max_rank, max_side=5):
    return shapes(min_rank, max_rank, max_side).flatmap(array)


def int_or_tuple(n, low, high):
    return st.one_of(st.integers(low, high), st.tuples(*[st.integers(low, high)] * n))


@st.composite
def same_shape_list(draw, min_rank=2, max_rank=4, count=(1, 3)):
    """Merge inputs: mostly one shape for all, sometimes one input of another shape."""
    shape = draw(shapes(min_rank, max_rank))
    n = draw(st.integers(*count))
    out = [draw(array(shape)) for _ in range(n)]
    if n > 1 and draw(st.integers(0, 4)) == 0:
        out[-1] = draw(tensors(min_rank, max_rank).filter(lambda a: a.shape[0] == shape[0]))
    return out


@st.composite
def concat_list(draw, axis):
    """Inputs equal in every axis except ``axis`` (when it is in range), sometimes not."""
    rank = draw(st.integers(2, 4))
    shape = list(draw(shapes(rank, rank)))
    out = []
    for _ in range(draw(st.integers(1, 3))):
        this = list(shape)
        if -rank <= axis < rank and axis % rank != 0:
            this[axis] = draw(st.integers(1, 4))
        elif draw(st.integers(0, 3)) == 0:
            this[-1] = draw(st.integers(1, 4))
        out.append(draw(array(tuple(this))))
    return out


@st.composite
def reshape_case(draw):
    """A target shape that fits the input (-1 included), or an arbitrary one."""
    shape = draw(shapes(2, 4))
    size = math.prod(shape[1:])
    if draw(st.booleans()):
        first = draw(st.sampled_from([d for d in range(1, size + 1) if size % d == 0]))
        target = draw(st.sampled_from([(size,), (first, size // first), (first, -1),
                                       (-1, first), (-1,)]))
    else:
        target = tuple(draw(st.lists(st.integers(-1, 6), min_size=1, max_size=3)))
    return {"target_shape": target}, shape


@st.composite
def permute_dims(draw):
    rank = draw(st.integers(1, 3))
    dims = draw(st.permutations(range(1, rank + 1)))
    if draw(st.integers(0, 5)) == 0:
        dims = dims[:-1] + [rank + 1]
    return tuple(dims)


def images(rank, max_side=7):
    """Conv/pooling inputs: (batch, spatial..., channels), sometimes the wrong rank."""
    def draw_input(kw):
        spatial = st.tuples(*[st.integers(1, max_side)] * rank)
        right = st.tuples(BATCH, spatial, st.integers(1, 6)).map(
            lambda t: (t[0],) + t[1] + (t[2],))
        return st.one_of(right.flatmap(array), right.flatmap(array), tensors(2, 4))
    return draw_input


def sequences(kw):
    return st.one_of(shapes(3, 3).flatmap(array), shapes(3, 3).flatmap(array), tensors(2, 4))


def ids(kw):
    """Embedding ids, mostly in [0, input_dim), sometimes one past either end."""
    dim = kw.get("input_dim", 5)
    top = dim if isinstance(dim, int) and dim > 0 else 5
    elements = st.one_of(st.integers(0, top - 1), st.integers(0, top - 1),
                         st.integers(0, top - 1), st.sampled_from([-1, top]))
    return shapes(1, 3).flatmap(lambda s: hnp.arrays(np.int64, s, elements=elements))


@st.composite
def dot_pair(draw):
    """Two inputs of rank 2 or 3 with one batch size; the contracted sizes mostly agree."""
    batch, size = draw(BATCH), draw(st.integers(1, 4))
    def one():
        rank = draw(st.integers(2, 3))
        sides = [draw(st.sampled_from([size, size, draw(st.integers(1, 4))]))
                 for _ in range(rank - 1)]
        return draw(array((batch,) + tuple(sides)))
    return [one(), one()]


@st.composite
def attention_inputs(draw):
    """query (batch, ..., T, d) and value (batch, ..., S, e) of one rank (3 or 4)."""
    batch, rank = draw(BATCH), draw(st.sampled_from([3, 3, 4]))
    middle = tuple(draw(st.integers(1, 3)) for _ in range(rank - 3))
    query = draw(array((batch,) + middle + (draw(st.integers(1, 4)), draw(st.integers(1, 4)))))
    value = draw(array((batch,) + middle + (draw(st.integers(1, 4)), draw(st.integers(1, 4)))))
    return [query, value]


def grouped_channels(kw):
    """Mostly a channel axis (last) that ``groups`` divides."""
    groups = max(kw.get("groups", 32), 1)
    fitting = st.tuples(shapes(1, 3, max_side=4), st.integers(1, 3)).map(
        lambda t: t[0] + (groups * t[1],))
    return st.one_of(fitting.flatmap(array), fitting.flatmap(array), tensors(2, 4))


# Lambda functions at module level: saved by module and name, so a config round trip needs no
# unsafe deserialization (a lambda expression would be stored as bytecode)
def double(x):
    return x * 2.0


def row_sums(x):
    return ops.sum(x, -1, keepdims=True)


def exponential(x):
    return ops.exp(x)


def tanh_residual(x):
    return ops.tanh(x) + x


def add_axis(x):
    return ops.reshape(x, (-1,) + x.shape[1:] + (1,))


LAMBDAS = st.sampled_from([double, row_sums, exponential, tanh_residual, add_axis])


CONV = dict(filters=st.integers(-1, 6), padding=PADDINGS, data_format=FORMATS,
            groups=st.integers(1, 3), activation=ACTIVATIONS, use_bias=st.booleans())
POOL = dict(padding=PADDINGS, data_format=FORMATS)
RNN = dict(units=st.integers(-1, 4), return_sequences=st.booleans(),
           return_state=st.booleans(), go_backwards=st.booleans(),
           activation=st.sampled_from(["tanh", "relu", "sigmoid"]), use_bias=st.booleans())


def conv(cls, rank, examples=()):
    fields = {**CONV, "kernel_size": int_or_tuple(rank, 0, 4),
              "strides": int_or_tuple(rank, 1, 3), "dilation_rate": int_or_tuple(rank, 1, 3)}
    if rank == 1:
        fields["padding"] = st.one_of(PADDINGS, st.just("causal"))
    return Case(cls, kwargs(**fields).map(lambda kw: {"kernel_size": 1, "filters": 2, **kw}),
                images(rank), list(examples), max_examples=120)


def conv_transpose(cls, rank):
    fields = {**{k: v for k, v in CONV.items() if k != "groups"},
              "output_padding": st.one_of(st.none(), st.integers(0, 2)),
              "kernel_size": int_or_tuple(rank, 0, 4), "strides": int_or_tuple(rank, 1, 3),
              "dilation_rate": int_or_tuple(rank, 1, 3)}
    return Case(cls, kwargs(**fields).map(lambda kw: {"kernel_size": 1, "filters": 2, **kw}),
                images(rank), max_examples=100)


def depthwise(cls, rank, **positional):
    """DepthwiseConv1D/2D; SeparableConv1D/2D with ``filters`` among ``positional``."""
    fields = {"strides": int_or_tuple(rank, 1, 3), "padding": PADDINGS,
              "depth_multiplier": st.integers(0, 3), "data_format": FORMATS,
              "dilation_rate": int_or_tuple(rank, 1, 3), "activation": ACTIVATIONS,
              "use_bias": st.booleans()}
    return Case(cls, required(fields, kernel_size=int_or_tuple(rank, 0, 4), **positional),
                images(rank), max_examples=80)


def pool(cls, rank):
    fields = {**POOL, "pool_size": int_or_tuple(rank, 1, 3),
              "strides": st.one_of(st.none(), int_or_tuple(rank, 1, 3))}
    return Case(cls, kwargs(**fields), images(rank))


def global_pool(cls, rank):
    return Case(cls, kwargs(data_format=FORMATS, keepdims=st.booleans()), images(rank))


def merge(cls):
    return Case(cls, kwargs(), lambda kw: same_shape_list())


def required(strategy_fields, **defaults):
    """kwargs() whose listed fields are always present (positional arguments)."""
    return st.fixed_dictionaries(defaults, optional=strategy_fields)


def with_shape(case_strategy):
    """For cases whose input shape is drawn with the arguments: kept under '_shape' (keys
    starting with '_' are for the input strategy, not the constructor)."""
    return case_strategy.map(lambda pair: {**pair[0], "_shape": pair[1]})


CASES = [
    Case(layers.Dense, required({"activation": ACTIVATIONS, "use_bias": st.booleans()},
                                units=st.integers(-1, 6)), lambda kw: tensors(1, 4)),
    Case(layers.Activation, required({}, activation=ACTIVATIONS.filter(bool)),
         lambda kw: tensors(1, 4)),
    Case(layers.Flatten, kwargs(data_format=FORMATS), lambda kw: tensors(1, 4)),
    conv(layers.Conv1D, 1, examples=[      # the op's error did not name the layer
        ({"kernel_size": 2, "filters": 2, "padding": "valid"}, np.zeros((1, 1, 1), np.float32),
         False)]),
    conv(layers.Conv2D, 2),
    pool(layers.MaxPooling1D, 1),
    pool(layers.AveragePooling1D, 1),
    pool(layers.MaxPooling2D, 2),
    pool(layers.AveragePooling2D, 2),
    global_pool(layers.GlobalAveragePooling1D, 1),
    global_pool(layers.GlobalMaxPooling1D, 1),
    global_pool(layers.GlobalAveragePooling2D, 2),
    global_pool(layers.GlobalMaxPooling2D, 2),
    Case(layers.BatchNormalization,
         kwargs(axis=st.integers(-4, 3), center=st.booleans(), scale=st.booleans(),
                epsilon=st.sampled_from([1e-3, 1e-6]), momentum=st.floats(0, 1)),
         lambda kw: tensors(2, 4)),
    Case(layers.LayerNormalization,
         kwargs(axis=st.one_of(st.integers(-4, 3), st.lists(st.integers(-3, 3), min_size=1,
                                                             max_size=2, unique=True)),
                center=st.booleans(), scale=st.booleans(),
                epsilon=st.sampled_from([1e-3, 1e-6])),
         lambda kw: tensors(2, 4)),
    Case(layers.Dropout, required({"seed": st.integers(0, 2**31)},
                                  rate=st.floats(-0.5, 1.0)), lambda kw: tensors(1, 4)),
    Case(layers.Reshape, with_shape(reshape_case()), lambda kw: array(kw["_shape"]),
         examples=[({"target_shape": (0, -1), "_shape": (1, 1)}, np.zeros((1, 1), np.float32),
                    False)]),                  # was ZeroDivisionError
    Case(layers.Permute, required({}, dims=permute_dims()), lambda kw: tensors(2, 4)),
    Case(layers.ZeroPadding2D,
         kwargs(padding=st.one_of(st.integers(0, 2), st.tuples(*[st.integers(0, 2)] * 2),
                                  st.tuples(*[st.tuples(*[st.integers(0, 2)] * 2)] * 2)),
                data_format=FORMATS), images(2)),
    Case(layers.UpSampling2D, kwargs(size=int_or_tuple(2, 1, 3), data_format=FORMATS),
         images(2)),
    Case(layers.Embedding, required({}, input_dim=st.integers(0, 8),
                                    output_dim=st.integers(1, 4)), ids),
    Case(layers.SimpleRNN, required({k: v for k, v in RNN.items() if k != "units"},
                                    units=RNN["units"]), sequences),
    Case(layers.LSTM, required({k: v for k, v in RNN.items() if k != "units"},
                               units=RNN["units"]), sequences),
    Case(layers.GRU, required({k: v for k, v in RNN.items() if k != "units"},
                              units=RNN["units"]), sequences),
    Case(layers.RNN, required({k: RNN[k] for k in ("return_sequences", "return_state",
                                                    "go_backwards")}, cell=st.one_of(
        st.builds(layers.SimpleRNNCell, st.integers(1, 4), activation=RNN["activation"],
                  use_bias=RNN["use_bias"]),
        st.builds(layers.LSTMCell, st.integers(1, 4), use_bias=RNN["use_bias"]),
        st.builds(layers.GRUCell, st.integers(1, 4), reset_after=st.booleans()),
        st.builds(lambda a, b: layers.StackedRNNCells([layers.LSTMCell(a), layers.GRUCell(b)]),
                  st.integers(1, 3), st.integers(1, 3)))), sequences),
    merge(layers.Add),
    merge(layers.Subtract),
    merge(layers.Multiply),
    merge(layers.Average),
    merge(layers.Maximum),
    merge(layers.Minimum),
    Case(layers.Concatenate, kwargs(axis=st.integers(-4, 3)),
         lambda kw: concat_list(kw.get("axis", -1))),
    Case(layers.Masking, kwargs(mask_value=st.sampled_from([0.0, 1.0, -10.0])),
         lambda kw: tensors(2, 4)),
    Case(layers.TimeDistributed, required({}, layer=st.one_of(
        st.builds(layers.Dense, st.integers(1, 4)),
        st.builds(layers.Conv1D, st.integers(1, 3), st.integers(1, 2)),
        st.builds(layers.Flatten), st.builds(layers.LSTM, st.integers(1, 3)))),
        lambda kw: tensors(2, 5)),
    Case(layers.Bidirectional, required({"merge_mode": st.sampled_from(
        ["concat", "sum", "mul", "ave", None, "max"])}, layer=st.one_of(
            st.builds(layers.SimpleRNN, st.integers(1, 3), return_sequences=st.booleans(),
                      return_state=st.booleans()),
            st.builds(layers.GRU, st.integers(1, 3), return_sequences=st.booleans()),
            st.builds(layers.LSTM, st.integers(1, 3), return_state=st.booleans()),
            st.builds(layers.Dense, st.integers(1, 3)))), sequences),
    Case(layers.Dot, required({"normalize": st.booleans()},
                              axes=st.one_of(st.integers(-3, 2), st.tuples(st.integers(-3, 2),
                                                                           st.integers(-3, 2)))),
         lambda kw: dot_pair()),
    Case(layers.Lambda, required({}, function=LAMBDAS), lambda kw: tensors(2, 4)),
    Case(layers.MultiHeadAttention,
         required({"value_dim": st.one_of(st.none(), st.integers(1, 3)),
                   "dropout": st.sampled_from([0.0, 0.5]), "use_bias": st.booleans(),
                   "output_shape": st.one_of(st.none(), st.integers(1, 3)),
                   "attention_axes": st.one_of(st.none(), st.integers(-3, 2))},
                  num_heads=st.integers(0, 3), key_dim=st.integers(1, 4)),
         lambda kw: attention_inputs(), spread=True),
    Case(layers.Rescaling, required({"offset": st.floats(-2, 2)}, scale=st.floats(-2, 2)),
         lambda kw: tensors(1, 4)),
    Case(layers.Normalization,
         kwargs(axis=st.sampled_from([-1, None, 1]), invert=st.booleans(),
                mean=st.floats(-2, 2), variance=st.sampled_from([0.0, 1e-6, 1.0, 4.0])).filter(
             lambda kw: ("mean" in kw) == ("variance" in kw)) .map(
             lambda kw: kw if "mean" in kw else {**kw, "mean": 0.5, "variance": 2.0}),
         lambda kw: tensors(2, 4),
         examples=[({"mean": 0.0, "variance": 0.0, "invert": True}, np.zeros((1, 1), np.float32),
                    False)]),
    Case(layers.RandomFlip, kwargs(mode=st.sampled_from(["horizontal", "vertical",
                                                          "horizontal_and_vertical", "up"]),
                                   seed=st.integers(0, 99), data_format=FORMATS), images(2)),
    Case(layers.RandomCrop, required({"seed": st.integers(0, 99), "data_format": FORMATS},
                                     height=st.integers(0, 6), width=st.integers(1, 6)),
         images(2)),
    Case(layers.RandomRotation,
         required({"fill_mode": st.sampled_from(["reflect", "wrap", "constant", "nearest"]),
                   "interpolation": st.sampled_from(["bilinear", "nearest"]),
                   "seed": st.integers(0, 99), "data_format": FORMATS},
                  factor=st.one_of(st.floats(-1, 1), st.tuples(st.floats(-1, 0),
                                                               st.floats(0, 1)))), images(2)),
    Case(layers.RandomZoom,
         required({"width_factor": st.one_of(st.none(), st.floats(-0.9, 0.9)),
                   "fill_mode": st.sampled_from(["reflect", "wrap", "constant", "nearest"]),
                   "seed": st.integers(0, 99), "data_format": FORMATS},
                  height_factor=st.floats(-0.9, 0.9)), images(2)),
    conv_transpose(layers.Conv1DTranspose, 1),
    conv_transpose(layers.Conv2DTranspose, 2),
    depthwise(layers.DepthwiseConv1D, 1),
    depthwise(layers.DepthwiseConv2D, 2),
    depthwise(layers.SeparableConv1D, 1, filters=st.integers(-1, 4)),
    depthwise(layers.SeparableConv2D, 2, filters=st.integers(-1, 4)),
    Case(layers.Cropping1D, kwargs(cropping=int_or_tuple(2, 0, 3)), sequences),
    Case(layers.Cropping2D,
         kwargs(cropping=st.one_of(int_or_tuple(2, 0, 3),
                                   st.tuples(*[st.tuples(*[st.integers(0, 3)] * 2)] * 2)),
                data_format=FORMATS), images(2)),
    Case(layers.Identity, kwargs(), lambda kw: tensors(1, 4)),
    Case(layers.RepeatVector, required({}, n=st.integers(-1, 4)),
         lambda kw: st.one_of(tensors(2, 2), tensors(2, 2), tensors(1, 3))),
    Case(layers.GaussianNoise, required({"seed": st.integers(0, 99)},
                                        stddev=st.floats(-0.5, 2)), lambda kw: tensors(1, 4)),
    Case(layers.GaussianDropout, required({"seed": st.integers(0, 99)},
                                          rate=st.floats(-0.5, 1)), lambda kw: tensors(1, 4)),
    Case(layers.SpatialDropout1D, required({"seed": st.integers(0, 99)},
                                           rate=st.floats(-0.5, 1)), sequences),
    Case(layers.SpatialDropout2D, required({"seed": st.integers(0, 99), "data_format": FORMATS},
                                           rate=st.floats(-0.5, 1)), images(2)),
    Case(layers.SpatialDropout3D, required({"seed": st.integers(0, 99), "data_format": FORMATS},
                                           rate=st.floats(-0.5, 1)), images(3, max_side=4)),
    Case(layers.ReLU, kwargs(max_value=st.one_of(st.none(), st.floats(-1, 5)),
                             negative_slope=st.floats(-0.5, 1), threshold=st.floats(-0.5, 2)),
         lambda kw: tensors(1, 4)),
    Case(layers.LeakyReLU, kwargs(negative_slope=st.floats(-0.5, 1)), lambda kw: tensors(1, 4)),
    Case(layers.ELU, kwargs(alpha=st.floats(0, 2)), lambda kw: tensors(1, 4)),
    Case(layers.PReLU, kwargs(shared_axes=st.one_of(
        st.none(), st.integers(-1, 4), st.lists(st.integers(0, 3), max_size=2)),
        alpha_initializer=st.sampled_from(["zeros", "random_normal"])),
        lambda kw: tensors(2, 4)),
    Case(layers.Softmax, kwargs(axis=st.sampled_from([-1, 1, -2, 3, [1, 2], [-1, 1]])),
         lambda kw: tensors(2, 4)),
    Case(layers.GroupNormalization,
         kwargs(groups=st.integers(0, 4), axis=st.sampled_from([-1, 1, 2, -4]),
                center=st.booleans(), scale=st.booleans(),
                epsilon=st.sampled_from([1e-3, 1e-6])), grouped_channels),
]
