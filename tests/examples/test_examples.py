"""Every example runs end to end at tiny size on real data (the full runs are in docs/examples.md);
``--help`` and the docstrings' command lines work as written."""
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
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
    ("async_mnist", ["--method", "easgd", "--epochs", "1", "--train-samples", "1000"], 0.6),
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


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.py")), ids=lambda path: path.stem)
def test_example_help_shows_every_default_and_choice(path):
    """``--help`` run as the docstrings say (from the repository root) lists each option with
    its default, and the closed sets (verbosity, dataset, compression) as choices."""
    result = subprocess.run([sys.executable, str(path.relative_to(ROOT)), "--help"],
                            capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    options = re.split(r"\n  (?=--)", result.stdout.split("options:", 1)[1])[1:]
    names = {block.split()[0] for block in options}
    assert {"--epochs", "--train-samples", "--verbose"} <= names, result.stdout
    for block in options:
        assert "(default: " in block, block
    assert "--verbose {0,1,2}" in result.stdout


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.py")), ids=lambda path: path.stem)
def test_example_docstring_commands_use_the_venv(path):
    """The command lines in each docstring run after the README's set-up as written: the
    venv's python and mpiexec, paths from the repository root."""
    commands = [line.strip() for line in load_docstring(path).splitlines()
                if "examples/" in line and line.startswith("    ")]
    assert commands, f"{path.name}: no command line in its docstring"
    for command in commands:
        words = [word for word in command.split() if "=" not in word or word.startswith("--")]
        assert words[0] in (".venv/bin/python", ".venv/bin/mpiexec"), command
        assert f"examples/{path.name}" in words and (ROOT / f"examples/{path.name}").is_file()
        if words[0] == ".venv/bin/mpiexec":
            assert words[3] == ".venv/bin/python", command


def load_docstring(path):
    import ast
    return ast.get_docstring(ast.parse(path.read_text()), clean=False)
