"""Datasets with Keras's ``load_data()`` signature, read from the authors' original IDX files.

``mnist`` is bundled (works offline); ``fashion_mnist`` is found through ``HIAPI_DATA_DIR``, a
``path=`` folder, the user cache, or a verified download. ``fetch`` documents the search order.
"""
from . import fashion_mnist, mnist  # noqa: F401
