"""``hiapi.random``: Keras 3's ``keras.random``, and hiapi's host random streams.

``SeedGenerator``, ``normal``, ``uniform``, ``truncated_normal``, ``randint``, ``dropout``,
``shuffle`` and ``categorical`` take Keras's arguments. Their numbers are counter-based (a hash
of seed, counter and element index), so they repeat for a seed on every backend; inside a
layer's ``call`` they become ops of the compiled step and a ``SeedGenerator`` advances at every
step, and on arrays they run at once::

    hiapi.random.normal((2, 3), seed=1)                      # an array; the same every call
    gen = hiapi.random.SeedGenerator(1)
    a, b = hiapi.random.uniform((3,), seed=gen), hiapi.random.uniform((3,), seed=gen)  # differ

The host streams (weight initialisation and batch order, reseeded by
``hiapi.utils.set_random_seed``) live on the runtime floor (``hiapi.runtime.random_streams``)
and are re-exported here under their old names.
"""
from hiapi.random.distributions import normal, randint, truncated_normal, uniform  # noqa: F401
from hiapi.random.seed_generator import SeedGenerator  # noqa: F401
from hiapi.random.model_seed import model_shuffle_seed  # noqa: F401
from hiapi.runtime.random_streams import (  # noqa: F401  (the streams, on the runtime floor)
    epoch_generator, generator, make_generator, set_seed, shuffle_seed)
from hiapi.random.tensor_draws import categorical, dropout, shuffle  # noqa: F401
