import pathlib
import sys

# tests/graph/check_op.py is the op-test helper every backend's tests import as ``check_op``
sys.path.insert(0, str(pathlib.Path(__file__).parent / "graph"))
