import pathlib
import sys

# tests/graph/check_op.py is the op-test helper every backend's tests import as ``check_op``
sys.path.insert(0, str(pathlib.Path(__file__).parent / "graph"))
# tests/distribute/mpi.py runs worker scripts under a real mpiexec
sys.path.insert(0, str(pathlib.Path(__file__).parent / "distribute"))

import pytest  # noqa: E402

import hiapi  # noqa: E402


@pytest.fixture(params=["numpy", "numba"])
def cpu_backend(request):
    """Run the test once on each CPU backend CI has (the backend set back afterwards)."""
    previous = hiapi.backends.get_backend().name
    hiapi.backends.set_backend(request.param)
    yield request.param
    hiapi.backends.set_backend(previous)
