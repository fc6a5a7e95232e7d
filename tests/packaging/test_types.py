"""The type hints of the public API: mypy (pinned in the dev extra) passes on the packages that
pyproject.toml's [tool.mypy] names, catches the mistakes a user script makes, and a wheel ships
the PEP 561 ``py.typed`` markers so the hints reach users at all."""
import pathlib
import re
import shutil
import subprocess
import sys
import zipfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import typecheck  # noqa: E402

USER_SCRIPT = pathlib.Path(__file__).with_name("typed_usage.py")
MAPPED = ("layers", "optimizers", "backends", "distribute")


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """One link tree and mypy cache for the module's runs: the second run is incremental."""
    pytest.importorskip("mypy", reason="mypy (the dev extra) is not installed")
    return tmp_path_factory.mktemp("typecheck")


def test_public_api_passes_mypy(scratch):
    done = typecheck.run(scratch=scratch)
    assert done.returncode == 0, done.stdout + done.stderr
    checked = re.search(r"Success: no issues found in (\d+) source files", done.stdout)
    assert checked and int(checked.group(1)) >= 100, done.stdout   # the packages, not a stray file


def _expected_errors():
    """{line: fragment} from the ``mypy: <fragment>`` comments of the user script."""
    expected = {}
    for number, line in enumerate(USER_SCRIPT.read_text().splitlines(), 1):
        if "# mypy: " in line:
            expected[number] = line.split("# mypy: ", 1)[1].strip()
    return expected


def test_hints_catch_the_mistakes_of_a_user_script(scratch):
    """Every line marked ``# mypy: ...`` is reported with that text, and nothing else is: the
    correct calls (Sequential, compile, fit, evaluate, predict, callbacks, save) type-check."""
    expected = _expected_errors()
    assert len(expected) >= 4
    done = typecheck.run([str(USER_SCRIPT)], scratch=scratch)
    assert done.returncode == 1, done.stdout + done.stderr
    errors = {}
    for line in done.stdout.splitlines():
        match = re.match(rf".*{USER_SCRIPT.name}:(\d+): error: (.*)", line)
        if match:
            errors.setdefault(int(match.group(1)), []).append(match.group(2))
    assert set(errors) == set(expected), done.stdout
    for number, fragment in expected.items():
        assert any(fragment in message for message in errors[number]), (number, errors[number])


def test_link_tree_lays_out_the_installed_package(tmp_path):
    tree = typecheck.link_tree(tmp_path)
    for name in MAPPED:
        assert (tree / "hiapi" / name / "__init__.py").resolve() == ROOT / name / "__init__.py"
    assert (tree / "hiapi" / "models" / "trainer.py").is_file()
    assert typecheck.repository_paths("hiapi/layers/dense.py:3: error: x\nhiapi/models/a.py:1:") \
        == "layers/dense.py:3: error: x\nhiapi/models/a.py:1:"


def test_wheel_ships_the_py_typed_markers(tmp_path):
    """Build a wheel from a copy of the sources (no build folder in the shared checkout) with
    the project's own build backend, and look inside."""
    source = tmp_path / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.nbi", "*.nbc")
    for name in ("hiapi", *MAPPED):
        shutil.copytree(ROOT / name, source / name, ignore=ignore)
    for name in ("pyproject.toml", "setup.py", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source / name)
    code = ("import sys; from setuptools import build_meta; "
            "print(build_meta.build_wheel(sys.argv[1]))")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "dist")], cwd=source,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    wheel = tmp_path / "dist" / done.stdout.strip().splitlines()[-1]
    names = set(zipfile.ZipFile(wheel).namelist())
    for package in ("hiapi", *(f"hiapi/{name}" for name in MAPPED)):
        assert f"{package}/py.typed" in names, f"{package}/py.typed missing from {wheel.name}"
    assert "hiapi/layers/dense.py" in names            # the package-dir mapping itself
