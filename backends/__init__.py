"""Backends execute compiled graphs. Choose one with ``HIAPI_BACKEND`` or in code::

    import hiapi
    hiapi.backends.set_backend("numpy")

Set the backend before building models: Variables are created on the backend current then.
"""
import importlib

from hiapi.runtime import environment

# name -> (module, the pip extra that provides what it needs)
AVAILABLE = {
    "numpy": ("hiapi.backends.numpy_backend", None),
    "numba": ("hiapi.backends.numba_backend", "numba"),
    "cupy": ("hiapi.backends.cupy_backend", "cupy"),
}

_current = None


def set_backend(name):
    """Make ``name`` the backend for new Variables and compiled Functions; returns it."""
    global _current
    key = str(name).strip().lower()
    if key not in AVAILABLE:
        raise ValueError(f"Unknown backend {name!r}: valid backends are "
                         f"{', '.join(sorted(AVAILABLE))} (set HIAPI_BACKEND or call "
                         f"hiapi.backends.set_backend with one of them)")
    module_name, extra = AVAILABLE[key]
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ImportError(f"backend {key!r} needs a package that is not installed "
                          f"({error}); install it with: pip install 'hiapi[{extra}]'") from error
    _current = module.backend
    return _current


def get_backend():
    """The current backend, chosen from ``HIAPI_BACKEND`` on first use."""
    return _current if _current is not None else set_backend(environment.backend_name())
