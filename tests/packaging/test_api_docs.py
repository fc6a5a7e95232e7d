"""The pdoc API reference builds over the whole hiapi namespace (docs/build_api.py)."""
import importlib
import pathlib
import subprocess
import sys

import pytest

pytest.importorskip("pdoc", reason="the docs extra (pdoc) is not installed")

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "docs"))
import build_api  # noqa: E402


def test_api_reference_covers_every_folder_of_the_namespace(tmp_path):
    result = subprocess.run([sys.executable, str(ROOT / "docs" / "build_api.py"), "-o",
                             str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    pages = {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.html")}
    # the four folders installed through package-dir, and modules deep inside them
    for page in ("hiapi.html", "hiapi/layers.html", "hiapi/layers/dense.html",
                 "hiapi/optimizers/adam.html", "hiapi/backends/numpy_backend.html",
                 "hiapi/distribute/strategy.html", "hiapi/graph/memory/planner.html",
                 "hiapi/models/trainer.html"):
        assert page in pages, f"{page} missing from the API reference"
    assert not any(p.startswith("hiapi/_") for p in pages)       # private modules left out
    dense = (tmp_path / "hiapi/layers/dense.html").read_text()
    assert "kernel has shape" in dense and "units" in dense      # docstring and signature
    left_out = {line.split()[2] for line in result.stdout.splitlines()
                if line.startswith("left out ")}
    for module_name in ("hiapi.backends.numba_backend", "hiapi.backends.cupy_backend"):
        page = module_name.replace(".", "/") + ".html"
        assert (page in pages) != (module_name in left_out), module_name
        if module_name in left_out:                               # only for a missing package
            with pytest.raises((ImportError, RuntimeError)):
                importlib.import_module(module_name)

def test_a_module_that_fails_to_import_fails_the_build(tmp_path, monkeypatch):
    """Without the exclusion of a backend whose package is missing, the build must fail naming
    the module, not quietly drop it."""
    missing = build_api.unavailable_backends()
    if not missing:
        pytest.skip("every backend imports here (cupy and a GPU present)")
    monkeypatch.setattr(build_api, "unavailable_backends", lambda: {})
    with pytest.raises(RuntimeError, match=next(iter(missing)).replace(".", r"\.")):
        build_api.build(tmp_path)
