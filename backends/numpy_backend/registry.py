"""The numpy backend's ``Backend`` object, which its kernel modules register into: a module of
its own so that they import it from below the package, which imports them."""
from hiapi.backends.base import Backend

backend = Backend()
backend.name = "numpy"
