"""Datasets with Keras's ``load_data()`` signature, read from the authors' original files.

``mnist`` is bundled (works offline); ``fashion_mnist`` and ``cifar10`` are found through
``HIAPI_DATA_DIR``, a ``path=`` folder, the user cache, or a verified download. ``fetch``
documents the search order.
"""
from . import cifar10, fashion_mnist, mnist  # noqa: F401
