"""Every ```python block of the documentation site (every page under docs/) runs.

A page's blocks run in order in one fresh interpreter, sharing their names as the cells of a
notebook do, so a page sets up its model and data once and later blocks use them. Each block
is compiled under its page's path and line numbers, so a traceback points at the page line.
The script is a file of its own, so spawned data workers can import it (a page guards what
they must not run with ``if __name__ == "__main__":``).

A block is left out only when its fence says so, visibly: a title starting "Not run", which
the site shows above the block (```` ```python title="Not run by the tests: needs a GPU" ````).
Those are listed here as skipped tests with the page's reason. A block that imports torch or
selects the cupy backend (extras) is left out the same way where that package is not installed,
so the GPU pages run where cupy is.
"""
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
FENCE = re.compile(r"^( *)```python([^\n]*)\n(.*?)^\1```", re.S | re.M)
NOT_RUN = re.compile(r'title="(Not run[^"]*)"')
#: (what a block says, the package it then needs): left out where the package is missing
EXTRAS = [("import torch", "torch"), ('set_backend("cupy")', "cupy"), ("import cupy", "cupy")]
RUNNER = """import json, pathlib
for _page, _line, _source in json.loads(pathlib.Path(__file__).with_name("blocks.json").read_text()):
    exec(compile("\\n" * (_line - 1) + _source, _page, "exec"))
"""


def page_blocks(page):
    """[(line, source, reason not run or None)] of one page's python blocks, dedented."""
    text = page.read_text()
    found = []
    for match in FENCE.finditer(text):
        indent, info, body = match.groups()
        line = text.count("\n", 0, match.start(3)) + 1
        source = "".join(row[len(indent):] for row in body.splitlines(keepends=True))
        skip = NOT_RUN.search(info)
        reason = skip.group(1) if skip else None
        for says, package in EXTRAS:
            if reason is None and says in source and importlib.util.find_spec(package) is None:
                reason = f"{package} is not installed (an extra)"
        found.append((line, source, reason))
    return found


def pages():
    return sorted(p for p in DOCS.rglob("*.md") if page_blocks(p))


def name(page):
    return page.relative_to(DOCS).as_posix()


@pytest.mark.parametrize("page", pages(), ids=name)
def test_page_examples_run(tmp_path, page):
    blocks = [(f"docs/{name(page)}", line, source)
              for line, source, reason in page_blocks(page) if reason is None]
    if not blocks:
        pytest.skip("no block of this page runs here (each is listed with its reason)")
    (tmp_path / "blocks.json").write_text(json.dumps(blocks))
    (tmp_path / "page.py").write_text(RUNNER)
    result = subprocess.run([sys.executable, "page.py"], cwd=tmp_path, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-4000:]


NOT_RUN_BLOCKS = [pytest.param(reason, id=f"{name(page)}:{line}")
                  for page in pages() for line, _, reason in page_blocks(page) if reason]


@pytest.mark.parametrize("reason", NOT_RUN_BLOCKS)
def test_block_marked_not_run(reason):
    pytest.skip(reason)


def test_not_run_blocks_are_found_and_runnable_ones_kept(tmp_path):
    """The fence parser finds indented blocks (inside list items) and reads the marker."""
    page = tmp_path / "page.md"
    page.write_text('text\n\n- item\n\n    ```python\n    x = 1\n    ```\n\n'
                    '```python title="Not run by the tests: needs mpiexec"\nboom()\n```\n')
    assert page_blocks(page) == [(6, "x = 1\n", None),
                                 (10, "boom()\n", "Not run by the tests: needs mpiexec")]


def test_launch_guide_script_restarts_under_the_launcher(tmp_path):
    text = (DOCS / "launch.md").read_text()
    script = re.findall(r"```python\n(.*?)```", text, re.S)[-1]
    command = re.findall(r"```bash\n(.*?)```", text, re.S)[-1].split()
    assert command[:3] == ["python", "-m", "hiapi.run"] and command[-1] == "train.py"
    (tmp_path / "train.py").write_text(script)
    # a collective that stalls (it hung once to the timeout on a machine at load 4) ends the
    # job with the report of which ranks did not arrive, well before the test's own timeout
    env = dict(os.environ, HIAPI_COLLECTIVE_TIMEOUT="60")
    result = subprocess.run([sys.executable, *command[1:]], cwd=tmp_path, capture_output=True,
                            text=True, timeout=300, stdin=subprocess.DEVNULL, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "rank 1 was killed by SIGKILL" in result.stderr
    assert "[rank 0] trained" in result.stdout
