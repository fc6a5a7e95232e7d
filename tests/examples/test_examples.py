"""Every example runs end to end at tiny size on real data (the full runs are in the README)."""
import importlib.util
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"


def load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name, args, floor", [
    ("mnist_mlp", ["--epochs", "1", "--train-samples", "2000"], 0.80),
    ("mnist_convnet", ["--epochs", "1", "--train-samples", "1000"], 0.50),
    ("mnist_lstm", ["--epochs", "1", "--train-samples", "1000", "--units", "32"], 0.15),  # chance: 0.10
])
def test_example_runs(name, args, floor, capsys):
    accuracy = load(name).main(args + ["--verbose", "0"])
    assert accuracy >= floor
    assert "test accuracy" in capsys.readouterr().out


def test_fashion_example(monkeypatch, capsys):
    if not (SHARED_DATA / "fashion-mnist").is_dir():
        pytest.skip(f"Fashion-MNIST not found at {SHARED_DATA} (it is not bundled)")
    monkeypatch.setenv("HIAPI_DATA_DIR", str(SHARED_DATA))
    accuracy = load("fashion_mnist_cnn").main(["--epochs", "1", "--train-samples", "1000",
                                               "--verbose", "0"])
    assert accuracy >= 0.5
