"""Package list for the fixed layout: ``hiapi/`` plus four top-level folders that install as
``hiapi.<folder>`` (the mapping itself is ``[tool.setuptools.package-dir]`` in pyproject.toml)."""
from setuptools import find_packages, setup

MAPPED = ("layers", "optimizers", "backends", "distribute")

packages = find_packages(include=["hiapi", "hiapi.*"])
for top in MAPPED:
    packages += ["hiapi." + name for name in find_packages(include=[top, top + ".*"])]

setup(packages=packages)
