"""Type-check hiapi's public API with mypy, as the installed package lays it out.

    .venv/bin/pip install -e '.[dev]' && .venv/bin/python tools/typecheck.py [FILE ...]

mypy cannot import through the import hook of an editable install, and it cannot map a folder
to another package name: ``layers/`` is ``hiapi.layers`` only because of
``[tool.setuptools.package-dir]``. So this script lays the package out as a wheel installs it,
as a tree of symbolic links in a temporary folder (``hiapi/`` holds links to every entry of the
source ``hiapi/`` plus ``layers``, ``optimizers``, ``backends`` and ``distribute``), runs
``python -m mypy`` there with the ``[tool.mypy]`` table of pyproject.toml (which names the
modules checked), and prints mypy's report with the paths turned back into the repository's.
The tree is rebuilt on every run, so it never goes stale when modules are added; mypy's cache
lives in it too and goes with it (a cold run takes seconds; see tests/packaging/test_types.py).

FILE arguments (a user script, say) are checked instead, against hiapi's hints; the exit
status is mypy's (0: no errors, 1: errors, 2: a usage error).
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Sequence

ROOT = Path(__file__).resolve().parents[1]
#: folders installed as ``hiapi.<name>`` (pyproject.toml [tool.setuptools.package-dir])
MAPPED = ("layers", "optimizers", "backends", "distribute")


def link_tree(into: Path) -> Path:
    """Lay out the ``hiapi`` package under ``into`` as links to the sources; return
    ``into``. Raises FileExistsError if a source ``hiapi/<name>`` shadows a mapped folder."""
    package = into / "hiapi"
    package.mkdir(parents=True)
    for entry in (ROOT / "hiapi").iterdir():
        if entry.name != "__pycache__":
            (package / entry.name).symlink_to(entry)
    for name in MAPPED:
        (package / name).symlink_to(ROOT / name, target_is_directory=True)
    return into


def repository_paths(report: str) -> str:
    """mypy's report with the link-tree paths (``hiapi/layers/dense.py``) written as the
    repository's (``layers/dense.py``), so an editor can jump to them."""
    lines = []
    for line in report.splitlines(keepends=True):
        for name in MAPPED:
            prefix = f"hiapi/{name}/"
            if line.startswith(prefix):
                line = line[len("hiapi/"):]
        lines.append(line)
    return "".join(lines)


def run(files: Sequence[str] = (), *mypy_args: str,
        scratch: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run mypy on the modules pyproject.toml names, or on ``files`` instead (hiapi is then read
    for its types only); returns the finished process with the report (repository paths) as
    ``stdout``. ``scratch``: a folder kept between runs (link tree and mypy cache), so a second
    run is incremental; by default a temporary one."""
    if scratch is None:
        with tempfile.TemporaryDirectory(prefix="hiapi-typecheck-") as temporary:
            return run(files, *mypy_args, scratch=Path(temporary))
    tree = scratch / "tree"
    if not tree.exists():
        link_tree(tree)
    command = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
               "--cache-dir", str(scratch / "cache"), *mypy_args,
               *(str(Path(f).resolve()) for f in files)]
    env = {key: value for key, value in os.environ.items() if key != "MYPYPATH"}
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True)
    return subprocess.CompletedProcess(done.args, done.returncode,
                                       repository_paths(done.stdout), done.stderr)


def main(argv: list[str]) -> int:
    done = run(argv)
    sys.stdout.write(done.stdout)
    sys.stderr.write(done.stderr)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
