"""``hiapi.config``: every switch a user may set, in one namespace (Keras's ``keras.config``).

The switches themselves live on the runtime floor, so that the graph compiler and the kernels
can read them without importing the API: ``hiapi.runtime.environment`` reads every ``HIAPI_*``
variable, ``hiapi.runtime.settings`` holds Keras's in-code settings, ``hiapi.runtime.threads``
the thread budget. This module gathers them, with the two that need the API floors::

    hiapi.config.set_floatx("float64")
    hiapi.config.set_num_threads(1)
    hiapi.config.backend()            # 'numpy'
"""
from hiapi.runtime.environment import (  # noqa: F401
    backend_name, cache_dir, collective_timeout, data_dir, memory, passes, prefetch,
    ranks_per_node, set_passes, timeline_path, winograd)
from hiapi.runtime.settings import (  # noqa: F401
    disable_traceback_filtering, enable_traceback_filtering, enable_unsafe_deserialization,
    epsilon, floatx, image_data_format, is_traceback_filtering_enabled, set_epsilon,
    set_floatx, set_image_data_format, unsafe_deserialization_enabled)
from hiapi.runtime.threads import num_threads_override, set_num_threads  # noqa: F401
from hiapi.dtype_policy import dtype_policy, set_dtype_policy  # noqa: F401
from hiapi.backends import get_backend
from hiapi.runtime import random_streams as random


def backend():
    """The name of the array backend running compiled graphs: ``"numpy"`` (the default, also
    a Keras backend name), ``"numba"`` or ``"cupy"`` (``HIAPI_BACKEND``)."""
    return get_backend().name


def set_random_seed(seed):
    """Seed every random choice hiapi makes, as ``keras.utils.set_random_seed``."""
    random.set_seed(seed)
