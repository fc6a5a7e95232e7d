"""Global settings with Keras's names (``keras.config``): default float type, fuzz factor, image
data format, traceback filtering, unsafe deserialization.

They live in code rather than in ``HIAPI_*`` variables because Keras scripts set them in code.
They are on the runtime floor (no import of hiapi) because layers, ops and kernels all read them;
``hiapi.config`` and ``hiapi.backend`` re-export these functions::

    hiapi.config.set_epsilon(1e-6)
    hiapi.backend.epsilon()          # 1e-06
"""
import numpy as np

_FLOATX = ("float16", "float32", "float64", "bfloat16")
_settings = {"floatx": "float32", "epsilon": 1e-7, "image_data_format": "channels_last",
             "traceback_filtering": True, "unsafe_deserialization": False}


def floatx():
    """The default float type of new layers' weights and of Python floats: ``"float32"``."""
    return _settings["floatx"]


def set_floatx(value):
    """Set the default float type. hiapi runs float32 and float64 models; float16 and
    bfloat16 are refused (no kernels are written or tested for them)."""
    value = str(value)
    if value not in _FLOATX:
        raise ValueError(f"set_floatx: unknown float type {value!r}; expected one of "
                         f"{', '.join(_FLOATX)}")
    if value not in ("float32", "float64"):
        raise ValueError(f"set_floatx: hiapi runs float32 and float64 models only, got "
                         f"{value!r} (its kernels are not written or tested for it)")
    _settings["floatx"] = np.dtype(value).name


def epsilon():
    """The fuzz factor added to denominators (Keras: 1e-7)."""
    return _settings["epsilon"]


def set_epsilon(value):
    value = float(value)
    if not value > 0:
        raise ValueError(f"set_epsilon: the fuzz factor must be positive, got {value!r}")
    _settings["epsilon"] = value


def image_data_format():
    """``"channels_last"`` (NHWC, the default) or ``"channels_first"``: what convolution and
    pooling layers use when their ``data_format`` is None."""
    return _settings["image_data_format"]


def set_image_data_format(data_format):
    value = str(data_format).lower()
    if value not in ("channels_last", "channels_first"):
        raise ValueError(f"set_image_data_format: expected 'channels_last' or "
                         f"'channels_first', got {data_format!r}")
    _settings["image_data_format"] = value


def enable_traceback_filtering():
    """Kept for Keras scripts: hiapi's tracebacks are never filtered, so this only records the
    setting that ``is_traceback_filtering_enabled`` reports."""
    _settings["traceback_filtering"] = True


def disable_traceback_filtering():
    _settings["traceback_filtering"] = False


def is_traceback_filtering_enabled():
    return _settings["traceback_filtering"]


def enable_unsafe_deserialization():
    """Allow ``load_model`` to rebuild ``Lambda`` layers from saved Python bytecode, which runs
    code from the file: do this only for files you trust (Keras's ``safe_mode=False``)."""
    _settings["unsafe_deserialization"] = True


def unsafe_deserialization_enabled():
    return _settings["unsafe_deserialization"]

