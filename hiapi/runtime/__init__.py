"""The runtime floor: what every other part of hiapi may use, and which imports nothing of it.

``environment`` (every ``HIAPI_*`` variable), ``settings`` (Keras's floatx, epsilon, image data
format), ``threads`` (the thread budget) and ``thread_tuner`` (fit's choice of thread count under
load), ``timeline`` (the Chrome trace recorder), ``random_streams`` (the host's random
generators), ``atomic`` (files that a crash never leaves half-written), ``dtypes`` (float types by name,
bfloat16 through ml_dtypes). Kernels and the graph
compiler sit on it; nothing here knows a model, a layer, a kernel or a file format (see
docs/architecture.md, "Floors"). Nothing is imported here: ``threads`` must load before numpy
(it configures OpenBLAS), so ``hiapi/__init__.py`` imports it first.
"""
