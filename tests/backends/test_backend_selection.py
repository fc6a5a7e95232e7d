"""Choosing a backend by name (in code and through ``HIAPI_BACKEND``), the errors for a name
that is not a backend or whose packages are missing, and for an op a backend has no kernel for."""
import os
import subprocess
import sys

import numpy as np
import pytest

from hiapi import backends
from hiapi.graph import Function, Op, placeholder


@pytest.fixture
def restore_backend():
    name = backends.get_backend().name
    yield
    backends.set_backend(name)


def _run(code, backend):
    env = {**os.environ, "HIAPI_BACKEND": backend}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=60)


def test_set_backend_numpy(restore_backend):
    backend = backends.set_backend(" NumPy ")
    assert backend.name == "numpy" and backends.get_backend() is backend
    assert backend.xp is np


def test_set_backend_unknown_lists_valid_names(restore_backend):
    before = backends.get_backend()
    with pytest.raises(ValueError, match=r"Unknown backend 'nosuch': valid backends are "
                                         r".*numpy"):
        backends.set_backend("nosuch")
    assert backends.get_backend() is before


def test_backend_with_missing_package_names_the_extra(restore_backend, monkeypatch):
    monkeypatch.setitem(backends.AVAILABLE, "fake", ("hiapi.backends.no_such_module", "fake"))
    with pytest.raises(ImportError, match=r"backend 'fake' needs a package.*"
                                          r"pip install 'hiapi\[fake\]'"):
        backends.set_backend("fake")


def test_environment_variable_selects_numpy():
    result = _run("import hiapi; print(hiapi.backends.get_backend().name)", "numpy")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "numpy"


def test_environment_variable_unknown_name_fails_listing_valid_names():
    result = _run("import hiapi; hiapi.backends.get_backend()", "nosuch")
    assert result.returncode != 0
    assert "ValueError: Unknown backend 'nosuch': valid backends are" in result.stderr
    assert "numpy" in result.stderr.rsplit("valid backends are", 1)[1]


class NoKernelOp(Op):
    """An op no backend registers a kernel for."""
    name = "no_kernel_test_op"

    def infer(self, x):
        return x.shape, x.dtype


def test_missing_kernel_names_op_and_backend():
    x = placeholder((None, 3))
    f = Function([x], NoKernelOp()(x) * 2.0)
    backend = backends.get_backend().name
    with pytest.raises(NotImplementedError, match=rf"backend '{backend}' has no kernel for op "
                                                  r"'no_kernel_test_op' \(NoKernelOp\)"):
        f(np.ones((2, 3)))
