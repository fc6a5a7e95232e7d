"""MkDocs hook (mkdocs.yml ``hooks:``): lay out the ``hiapi`` package for mkdocstrings.

mkdocstrings reads the sources with griffe, which finds modules by walking folders. hiapi's
``layers/``, ``optimizers/``, ``backends/`` and ``distribute/`` become ``hiapi.layers`` etc.
only through ``[tool.setuptools.package-dir]``, which griffe cannot follow in an editable
install (``::: hiapi.layers.Dense`` is "not found"), nor through links (it resolves a linked
``layers`` to the repository's folder and names its modules ``layers.*``). So before every
build this copies the ``.py`` files into the tree a wheel installs, under
``build/docs-package`` (about 1 MB; the folder mkdocs.yml gives mkdocstrings as ``paths``).
It is rebuilt on every build, so it never goes stale.

It also gives ``docs/changelog.md`` the text of ``CHANGELOG.md``, with the links that file
writes from the repository root (``docs/async.md``) made relative to the site's pages.
"""
import re
import shutil
from pathlib import Path

from mkdocs.plugins import event_priority

ROOT = Path(__file__).resolve().parents[1]
TREE = ROOT / "build" / "docs-package"
#: folders installed as ``hiapi.<name>`` (pyproject.toml [tool.setuptools.package-dir])
MAPPED = ("layers", "optimizers", "backends", "distribute")


def _not_python(folder, names):
    return [name for name in names
            if name == "__pycache__" or (Path(folder, name).is_file() and not name.endswith(".py"))]


# First of all on_config handlers: mkdocstrings' own on_config sets up the Python handler with
# its ``paths``, and a path that does not exist yet is dropped, so the first build of a fresh
# checkout found ``hiapi`` through the editable install instead, where ``hiapi.distribute``
# is no folder ("hiapi.distribute.Strategy could not be found").
@event_priority(100)
def on_config(config):
    shutil.rmtree(TREE, ignore_errors=True)
    shutil.copytree(ROOT / "hiapi", TREE / "hiapi", ignore=_not_python)
    for name in MAPPED:
        shutil.copytree(ROOT / name, TREE / "hiapi" / name, ignore=_not_python)
    return config


def on_page_markdown(markdown, page, config, files):
    if page.file.src_uri != "changelog.md":
        return markdown
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    return re.sub(r"\]\(docs/", "](", changelog)
