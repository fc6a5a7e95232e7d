"""Build hiapi's API reference (HTML, from the docstrings) with pdoc.

    .venv/bin/pip install -e '.[docs]' && .venv/bin/python docs/build_api.py   # -> docs/api/

It documents the whole ``hiapi`` namespace, including ``hiapi.layers``, ``hiapi.optimizers``,
``hiapi.backends`` and ``hiapi.distribute``, which are installed from their own folders (pdoc
walks the imported package, so the package-dir mapping needs nothing special). Nothing here needs
MPI, a GPU or cupy: ``hiapi.distribute`` imports mpi4py only when a Strategy starts, and a backend
whose package is missing (cupy, numba) is left out with a note, read from the same table
``hiapi.backends.set_backend`` uses. Any other module that fails to import is an error (exit
status 1), so a new module that imports something optional at the top is caught by
tests/packaging/test_api_docs.py rather than silently missing from the reference.
"""
import argparse
import importlib
import os
import re
import sys
import warnings
from pathlib import Path

# Private modules (``hiapi._version``) are implementation detail; pdoc skips ``_`` submodules it
# finds itself, but one imported by ``hiapi/__init__`` is walked all the same. pdoc reads "!" specs
# as regular expressions matched at the start of each module name.
EXCLUDED = [r"!hiapi\._"]


def unavailable_backends():
    """{module name: why} for the backends whose package (or device) is missing here."""
    from hiapi import backends
    missing = {}
    for module_name, extra in backends.AVAILABLE.values():
        try:
            importlib.import_module(module_name)
        except (ImportError, RuntimeError) as error:   # RuntimeError: cupy without a GPU
            missing[module_name] = f"{type(error).__name__}: {error}".splitlines()[0]
    return missing


def build(output_directory):
    """Write the HTML reference under ``output_directory``; return the modules left out
    ({name: why}). Raises RuntimeError naming any other module pdoc could not import."""
    import pdoc
    import pdoc.render

    import hiapi
    missing = unavailable_backends()
    pdoc.render.configure(docformat="restructuredtext", footer_text=f"hiapi {hiapi.__version__}")
    specs = ["hiapi", *EXCLUDED, *("!" + re.escape(name) + r"(\.|$)" for name in missing)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            pdoc.pdoc(*specs, output_directory=Path(output_directory))
        except RuntimeError as error:      # a module of the walk itself failed to import
            failed = [f"{error} ({error.__cause__!r})"]
        else:                              # a submodule met while listing a package failed
            failed = [line for line in (str(w.message).splitlines()[0] for w in caught)
                      if "import" in line and not any(name in line for name in missing)]
    if failed:
        raise RuntimeError(_HINT + "\n  ".join(failed))
    return missing


_HINT = ("pdoc could not import these modules (an optional package imported at module level? "
         "import it where it is used, or list the module in docs/build_api.py):\n  ")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    parser.add_argument("-o", "--output-directory", default=os.path.join(here, "api"),
                        help="where to write the HTML (default: docs/api)")
    args = parser.parse_args(argv)
    try:
        missing = build(args.output_directory)
    except RuntimeError as error:
        print(error, file=sys.stderr)
        return 1
    for name, why in sorted(missing.items()):
        print(f"left out {name} ({why})")
    print(f"API reference written to {os.path.join(args.output_directory, 'hiapi.html')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
