"""Every ```python block of the guides in docs/ runs (each block a script of its own, in a
fresh interpreter, so that spawned data workers can import it); docs/launch.md's training
script also runs under the launcher, as its last ```bash block says."""
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
GUIDES = ["data.md", "guides/training_loop_from_scratch.md", "guides/customizing_fit.md",
          "guides/layer_state_and_random.md", "launch.md", "guides/growing_batches.md"]


TORCH_MISSING = importlib.util.find_spec("torch") is None


def blocks():
    for guide in GUIDES:
        text = (DOCS / guide).read_text()
        for k, block in enumerate(re.findall(r"```python\n(.*?)```", text, re.S)):
            needs_torch = pytest.mark.skipif("import torch" in block and TORCH_MISSING,
                                             reason="torch is not installed (an extra)")
            yield pytest.param(block, id=f"{guide}-{k}", marks=needs_torch)


@pytest.mark.parametrize("code", list(blocks()))
def test_guide_example_runs(tmp_path, code):
    script = tmp_path / "example.py"
    script.write_text(code)
    result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]


def test_launch_guide_script_restarts_under_the_launcher(tmp_path):
    text = (DOCS / "launch.md").read_text()
    script = re.findall(r"```python\n(.*?)```", text, re.S)[-1]
    command = re.findall(r"```bash\n(.*?)```", text, re.S)[-1].split()
    assert command[:3] == ["python", "-m", "hiapi.run"] and command[-1] == "train.py"
    (tmp_path / "train.py").write_text(script)
    result = subprocess.run([sys.executable, *command[1:]], cwd=tmp_path, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "rank 1 was killed by SIGKILL" in result.stderr
    assert "[rank 0] trained" in result.stdout
