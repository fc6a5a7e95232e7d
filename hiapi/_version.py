"""hiapi's version, from one source of truth: the ``version`` field of pyproject.toml.

An installed hiapi (``pip install -e .`` included) reports what pip recorded in its metadata, so
``hiapi.__version__`` always agrees with ``pip show hiapi``. A source tree used without installing
(``PYTHONPATH=.``) has no metadata; it then reads pyproject.toml beside the package rather than
repeat the number here, where it would go stale at the next release.

    >>> import hiapi
    >>> hiapi.__version__, hiapi.version()        # Keras has both too
    ('0.1.0', '0.1.0')

The module is private (``_version``) so that ``hiapi.version`` stays Keras's function.
"""
import os
import re
from importlib import metadata

UNKNOWN = "0+unknown"


def pyproject_version(path=None):
    """The ``[project]`` version in pyproject.toml (default: the one beside this package), or
    ``"0+unknown"`` when there is none, as in a wheel copied without its source tree."""
    if path is None:
        path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                            "pyproject.toml")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return UNKNOWN
    # tomllib is Python 3.11+, and hiapi supports 3.10: the [project] table's own version line
    # (before the next table) is all that is needed.
    project = re.search(r"^\[project\]\s*$(.*?)(?=^\[|\Z)", text, re.M | re.S)
    found = project and re.search(r'^version\s*=\s*"([^"]+)"', project.group(1), re.M)
    return found.group(1) if found else UNKNOWN


def package_version():
    """The installed distribution's version, else pyproject.toml's (see the module docstring)."""
    try:
        return metadata.version("hiapi")
    except metadata.PackageNotFoundError:
        return pyproject_version()


__version__ = package_version()


def version():
    """hiapi's version string, as ``keras.version()``."""
    return __version__
