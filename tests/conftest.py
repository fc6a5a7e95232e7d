import pathlib
import sys

# tests/graph/check_op.py is the op-test helper every backend's tests import as ``check_op``
sys.path.insert(0, str(pathlib.Path(__file__).parent / "graph"))
# tests/distribute/mpi.py runs worker scripts under a real mpiexec
sys.path.insert(0, str(pathlib.Path(__file__).parent / "distribute"))
