"""Check hiapi's import floors: import-linter's contracts (pyproject.toml) and no import circle.

    .venv/bin/python tools/import_floors.py        # exit status 0: the floors hold

The contracts in ``[tool.importlinter]`` list the floors (runtime, backends, graph, ops, ...,
models and saving, distribute) and the packages that must stay independent; ``lint-imports``
fails on an import from a floor to one above it, however indirect. Circles inside one floor
are not a contract import-linter has, so this script also asks grimp (which import-linter is
built on) for every set of modules that import one another around a circle, counting every
import, those inside functions too (an import inside a function still needs the module).

Both run on the package as a wheel installs it: ``layers/``, ``optimizers/``, ``backends/``
and ``distribute/`` are ``hiapi.layers``, ... only through ``[tool.setuptools.package-dir]``,
which an editable install's import hook applies but grimp's file walk does not see, so the
tree of links that ``tools/typecheck.py`` lays out for mypy is used here too.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from typecheck import ROOT, link_tree  # noqa: E402


def circles(package: str = "hiapi") -> list[list[str]]:
    """Every set of two or more modules of ``package`` that import one another around a
    circle (strongly connected components of grimp's import graph), largest first. Run with
    the package importable from the tree of links."""
    import grimp
    graph = grimp.build_graph(package, cache_dir=None, exclude_type_checking_imports=True)
    imports = {module: graph.find_modules_directly_imported_by(module)
               for module in graph.modules}
    return sorted((sorted(c) for c in _components(imports) if len(c) > 1), key=len,
                  reverse=True)


def _components(imports: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components, without recursion (the graph is deep)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(imports):
        if root in index:
            continue
        work = [(root, iter(sorted(imports[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            module, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(imports[target]))))
                elif target in on_stack:
                    low[module] = min(low[module], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[module])
            if low[module] == index[module]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == module:
                        break
                found.append(component)
    return found


def check(tree: Path) -> tuple[int, str]:
    """(exit status, report) of both checks on the package laid out under ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    found = subprocess.run([sys.executable, __file__, "--circles"], cwd=tree, env=env,
                           capture_output=True, text=True)
    if found.returncode != 0:
        return found.returncode, found.stdout + found.stderr
    components = json.loads(found.stdout)
    lines = [f"import circles: {len(components)}"]
    lines += [f"  {len(c)} modules: {' '.join(c)}" for c in components]
    linter = Path(sys.executable).with_name("lint-imports")
    lint = subprocess.run([str(linter), "--no-cache", str(ROOT / "pyproject.toml")], cwd=tree,
                          env=env, capture_output=True, text=True)
    lines.append(lint.stdout + lint.stderr)
    return (1 if components else 0) or lint.returncode, "\n".join(lines)


def modules(tree: Path) -> set[str]:
    """The modules of ``hiapi`` that grimp reads from the tree (what both checks look at)."""
    listed = subprocess.run([sys.executable, __file__, "--modules"], cwd=tree, check=True,
                            env={**os.environ, "PYTHONPATH": str(tree)}, capture_output=True,
                            text=True)
    return set(json.loads(listed.stdout))


def main(argv: list[str]) -> int:
    if argv == ["--circles"]:
        print(json.dumps(circles()))
        return 0
    if argv == ["--modules"]:
        import grimp
        print(json.dumps(sorted(grimp.build_graph("hiapi", cache_dir=None).modules)))
        return 0
    with tempfile.TemporaryDirectory(prefix="hiapi-floors-") as temporary:
        status, report = check(link_tree(Path(temporary)))
    print(report)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
