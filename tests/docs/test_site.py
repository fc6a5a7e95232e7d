"""The documentation site builds with `mkdocs build --strict` (mkdocs.yml): a broken link or
anchor, a page missing from the nav, or an API entry mkdocstrings cannot find fails it."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

for package in ("mkdocs", "material", "mkdocstrings_handlers.python"):
    pytest.importorskip(package, reason="the docs extra (in dev) is not installed")

ROOT = Path(__file__).resolve().parents[2]


def test_site_builds_strict(tmp_path):
    site = tmp_path / "site"
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                             str(site)], cwd=ROOT, capture_output=True, text=True, timeout=300,
                            env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert result.returncode == 0, result.stderr[-4000:]
    dense = (site / "reference" / "layers" / "index.html").read_text()
    assert "kernel has shape" in dense                    # a docstring of hiapi.layers.Dense
    assert 'id="hiapi.distribute.Strategy' in (site / "reference" / "distribute"
                                                / "index.html").read_text()
    assert (site / "guides" / "training" / "index.html").exists()
