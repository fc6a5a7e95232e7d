"""hiapi.__version__ comes from the package metadata, with pyproject.toml as the fallback."""
import pathlib
import re
import subprocess
import sys
from importlib import metadata

import hiapi
from hiapi import _version

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_version_is_the_installed_metadata_and_pyproject_version():
    text = (ROOT / "pyproject.toml").read_text()
    declared = re.search(r'^version = "([^"]+)"', text, re.M).group(1)
    assert hiapi.__version__ == metadata.version("hiapi") == declared
    assert hiapi.version() == hiapi.__version__          # keras.version() has this name
    assert re.fullmatch(r"\d+\.\d+\.\d+([.+-]\w+)*", hiapi.__version__)


def test_fallback_reads_the_project_table_of_pyproject(tmp_path):
    path = tmp_path / "pyproject.toml"
    path.write_text('[build-system]\nrequires = ["x"]\n\n[project]\nname = "hiapi"\n'
                    'version = "9.8.7"\n\n[tool.other]\nversion = "1.0"\n')
    assert _version.pyproject_version(str(path)) == "9.8.7"
    path.write_text('[tool.other]\nversion = "1.0"\n\n[project]\nname = "hiapi"\n')
    assert _version.pyproject_version(str(path)) == _version.UNKNOWN
    assert _version.pyproject_version(str(tmp_path / "absent.toml")) == _version.UNKNOWN
    assert _version.pyproject_version() == hiapi.__version__   # this checkout's own file


def test_uninstalled_source_tree_falls_back_to_pyproject():
    """Without metadata (a source tree on PYTHONPATH), the version still comes out right."""
    code = ("from importlib import metadata\n"
            "def missing(name):\n"
            "    raise metadata.PackageNotFoundError(name)\n"
            "metadata.version = missing\n"
            "import hiapi; print(hiapi.__version__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, check=True).stdout.strip()
    assert out == _version.pyproject_version()
