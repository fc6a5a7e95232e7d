"""The import floors (docs/architecture.md): lint-imports keeps pyproject's contracts and no
modules import one another around a circle, on the package as a wheel lays it out; and both
checks fail when a floor imports one above it or two modules form a circle."""
import sys
from pathlib import Path

import pytest

pytest.importorskip("importlinter", reason="the dev extra (import-linter) is not installed")

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import import_floors  # noqa: E402
from typecheck import link_tree  # noqa: E402


def test_the_floors_hold_and_no_modules_import_one_another_in_a_circle(tmp_path):
    status, report = import_floors.check(link_tree(tmp_path))
    assert status == 0, report
    assert "import circles: 0" in report and "2 kept, 0 broken" in report


def test_the_mapped_folders_are_seen_as_hiapi_packages(tmp_path):
    """layers/, optimizers/, backends/ and distribute/ install as hiapi.layers, ...: the
    checks must read them there, or they would pass without looking."""
    modules = import_floors.modules(link_tree(tmp_path))
    for name in ("hiapi.layers.dense", "hiapi.optimizers.adam",
                 "hiapi.backends.numpy_backend.kernels", "hiapi.distribute.strategy",
                 "hiapi.runtime.threads"):
        assert name in modules


def _loosen(tree, folder):
    """Replace the link to ``hiapi/<folder>`` by a folder of links to its files, so probe
    modules can be added to the tree without touching the sources."""
    package = tree / "hiapi" / folder
    source = package.resolve()
    package.unlink()
    package.mkdir()
    for entry in source.iterdir():
        if entry.name != "__pycache__":
            (package / entry.name).symlink_to(entry)
    return package


def test_an_upward_import_breaks_the_floors(tmp_path):
    runtime = _loosen(link_tree(tmp_path), "runtime")
    (runtime / "probe.py").write_text("def save(model):\n"
                                      "    from hiapi.saving import save_model\n"
                                      "    save_model(model, 'm.hiapi')\n")
    status, report = import_floors.check(tmp_path)
    assert status != 0
    assert "hiapi.runtime.probe -> hiapi.saving" in report


def test_a_circle_inside_one_floor_is_found(tmp_path):
    graph = _loosen(link_tree(tmp_path), "graph")
    (graph / "probe_a.py").write_text("from hiapi.graph import probe_b\n")
    (graph / "probe_b.py").write_text("def f():\n    from hiapi.graph import probe_a\n")
    status, report = import_floors.check(tmp_path)
    assert status != 0
    assert "import circles: 1" in report and "hiapi.graph.probe_a hiapi.graph.probe_b" in report
