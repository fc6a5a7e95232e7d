"""A numpy array or scalar on the left of an operator with a Var builds a graph op (numpy defers
to the Var), instead of an object array of Vars that fails far from the cause."""
import numpy as np

from hiapi.graph import Function, placeholder


def test_numpy_left_operands_build_ops():
    x = placeholder((None, 3))
    mean = np.array([1.0, 2.0, 3.0], np.float32)
    f = Function([x], [mean + x * 2.0, np.float32(3) * x, mean - x, mean / (x + 10.0),
                       mean < x])
    values = np.arange(6, dtype=np.float32).reshape(2, 3)
    got = f(values)
    expected = [mean + values * 2, 3 * values, mean - values, mean / (values + 10),
                mean < values]
    for g, e in zip(got, expected):
        assert isinstance(g, np.ndarray) and g.dtype == e.dtype
        np.testing.assert_allclose(g, e, rtol=1e-6)
