"""The ops namespace as the lowest graph modules see it: ``ops.add``, ``ops.sum``, ...

Var's operators (``x + y``) and the gradient rules of every op family build ops of other
families (the gradient of ``add`` sums with ``reduce``'s op, that of ``mean`` divides with
``elementwise``'s). The families sit below the package that gathers them
(``hiapi.graph.ops``), so importing it from them would be an import circle. This module is
below all of them and owns the table: the package fills it once every family has loaded
(``fill``), which is before any graph is built or any gradient taken.
"""
import types

ops = types.SimpleNamespace()


def fill(namespace):
    """Publish the package's public functions (``namespace``: its globals)."""
    ops.__dict__.update({name: value for name, value in namespace.items()
                         if not name.startswith("_") and callable(value)})
