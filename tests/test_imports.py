"""The package's imports point one way (docs/architecture.md#import-rules) and never go round in a circle.

Every import counts, function-level ones included (read with `ast`, nothing is
imported). The rules live in `NEVER`, here and nowhere else in the tests.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("conway", "training")

# (importer prefix, imported prefix, why): a module under the first never imports one under the second
NEVER = [
    ("conway.policies", "conway.tools", "a model adapter never knows how actions are executed"),
    ("conway.tools", "conway.policies", "a tool never knows which model chose the action"),
    ("conway.policies", "conway.observe", "adapters receive images; they do not take screenshots"),
    ("conway.tools", "conway.observe", "a tool acts; it does not look"),
    ("conway.runtime", "conway.policies", "the runtime starts servers; it does not know adapters"),
    ("conway.loop.cycle", "conway.cli.main", "the loop knows no command line"),
    ("conway.loop.cycle", "conway.cli.commands", "the loop knows no command line"),
    ("conway.actions", "conway.loop.cycle", "the action schema is a leaf"),
    ("conway.geometry", "conway.loop.cycle", "geometry is a leaf"),
    ("conway.evals", "conway.cli.main", "evals know no command line"),
    ("conway.evals", "conway.cli.commands", "evals know no command line"),
    ("training", "conway.loop.cycle", "training reads exported data, never the live loop"),
    ("conway.readiness.checks", "conway.evals", "readiness checks sit below the commands and reports that select them"),
    ("conway.readiness.checks", "conway.cli.commands", "readiness checks know no command line"),
    ("conway.readiness.checks", "conway.cli.main", "readiness checks know no command line"),
]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _graph() -> dict[str, set[str]]:
    files = {_module_name(p): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}
    known = set(files)
    graph: dict[str, set[str]] = {}
    for mod, path in files.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join(up + ([base] if base else []))
                names = [f"{base}.{a.name}" for a in node.names] + [base]
            else:
                continue
            for name in names:  # the longest known module the name starts with
                while name and name not in known:
                    name = name.rpartition(".")[0]
                if name and name != mod:
                    found.add(name)
        graph[mod] = found
    return graph


GRAPH = _graph()


def _under(mod: str, prefix: str) -> bool:
    return mod == prefix or mod.startswith(prefix + ".")


def test_the_walk_sees_function_level_imports() -> None:
    # conway.cli.main imports conway.cli.commands at module level; conway.cli.commands imports conway.session.app inside functions
    assert "conway.cli.commands" in GRAPH["conway.cli.main"]
    assert "conway.session.app" in GRAPH["conway.cli.commands"]


@pytest.mark.parametrize("src,dst,why", NEVER)
def test_one_way_rule(src: str, dst: str, why: str) -> None:
    broken = sorted(f"{m} imports {t}" for m, targets in GRAPH.items() if _under(m, src)
                    for t in targets if _under(t, dst))
    assert not broken, f"{why}: " + "; ".join(broken)


def test_no_import_cycles() -> None:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in GRAPH.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    assert not cycles, "import cycles: " + " | ".join(" <-> ".join(c) for c in cycles)
