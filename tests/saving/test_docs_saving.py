"""The Python example of docs/saving.md runs as written."""
import pathlib
import re

DOC = pathlib.Path(__file__).parents[2] / "docs" / "saving.md"


def test_docs_saving_example_runs(tmp_path, monkeypatch):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    assert blocks
    monkeypatch.chdir(tmp_path)
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), {"__name__": "docs_saving"})
