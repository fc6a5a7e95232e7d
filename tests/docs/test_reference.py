"""The API reference (docs/reference/*.md, rendered by mkdocstrings) lists every public class
of the packages it covers, so a new layer, optimizer, loss, metric, callback or strategy
cannot be left out of it."""
import importlib
import inspect
import re
from pathlib import Path

import pytest

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "reference"
PACKAGES = ["hiapi.models", "hiapi.layers", "hiapi.optimizers", "hiapi.optimizers.schedules",
            "hiapi.losses", "hiapi.metrics", "hiapi.callbacks", "hiapi.distribute",
            "hiapi.utils", "hiapi.random"]


def documented():
    return {name for page in REFERENCE.glob("*.md")
            for name in re.findall(r"^::: ([\w.]+)", page.read_text(), re.M)}


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_class_is_in_the_reference(package):
    module = importlib.import_module(package)
    entries = documented()
    missing = []
    for name in dir(module):
        value = getattr(module, name)
        if name.startswith("_") or not inspect.isclass(value) \
                or not value.__module__.startswith("hiapi"):
            continue
        if f"{package}.{name}" not in entries and f"hiapi.{name}" not in entries:
            missing.append(name)
    assert not missing, f"add to docs/reference/: {', '.join(f'::: {package}.{n}' for n in missing)}"
