"""``torch.utils.data.DataLoader`` as ``x`` (torch_data_loader_cases.py), run in a process of
its own where torch is installed (``pip install 'hiapi[torch]'``; CI installs the CPU wheel),
skipped where it is not."""
import importlib.util
import pathlib
import subprocess
import sys

import pytest

CASES = pathlib.Path(__file__).with_name("torch_data_loader_cases.py")


@pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                    reason="torch is not installed (pip install 'hiapi[torch]')")
def test_torch_data_loader_cases():
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             str(CASES)], capture_output=True, text=True, timeout=600,
                            cwd=CASES.parent)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert " passed" in result.stdout and "skipped" not in result.stdout


def test_without_torch_nothing_imports_it():
    code = ("import sys, numpy as np, hiapi; m = hiapi.Sequential([hiapi.Input((2,)), "
            "hiapi.layers.Dense(1)]); m.compile(optimizer='sgd', loss='mse'); "
            "m.fit(np.ones((4, 2)), np.ones((4, 1)), verbose=0); "
            "assert 'torch' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)
