"""The package's imports point one way (docs/architecture.md#import-rules) and never go round in a circle.

Every import counts, function-level ones included (read with `ast`, nothing is
imported). The rules live in `NEVER`, here and nowhere else in the tests; the
table in docs/architecture.md#import-rules is held to be the same list.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("conway", "training", "scripts")

# (importer prefix, imported prefix, why): a module under the first never imports one under the second
NEVER = [
    ("conway.policies", "conway.tools", "a model adapter never knows how actions are executed"),
    ("conway.tools", "conway.policies", "a tool never knows which model chose the action"),
    ("conway.policies", "conway.observe", "adapters receive images; they do not take screenshots"),
    ("conway.tools", "conway.observe", "a tool acts; it does not look"),
    ("conway.runtime", "conway.policies", "the runtime starts servers; it does not know adapters"),
    ("conway.loop", "conway.cli", "the loop knows no command line"),
    ("conway.loop", "conway.session", "the loop is handed its parts; it does not wire them"),
    ("conway.loop", "conway.policies", "the loop reaches a model only through the Policy protocol"),
    ("conway.loop", "conway.tools", "the loop acts only through the Actuator protocol"),
    ("conway.prompt", "conway.policies", "what a decision sees is built before any adapter lays it out"),
    ("conway.store", "conway.loop", "files in the home know nothing of who writes them"),
    ("conway.experience", "conway.loop", "experience is read from the journal, never from the live loop"),
    ("conway.evals", "conway.cli", "evals know no command line"),
    ("conway.args", "conway.cli", "what every command's arguments share sits below the command line that assembles them"),
    ("conway.readiness", "conway.cli", "readiness checks and commands know no command line"),
    ("conway.args", "conway.evals", "the suites declare their commands with what every command's arguments share; the "
     "pool those arguments ask for is the suites' (`conway.evals.pool`)"),
    ("conway.readiness.checks", "conway.evals", "readiness checks sit below the commands and reports that select them"),
    ("conway.session", "conway.evals", "a session is run below the suites and reports that run one; `conway start`'s "
     "report is handed in (`conway.evals.session_report`)"),
    ("conway.tasks", "conway.evals", "a task is loaded, checked and scored below the suites and reports that run it"),
    ("conway.tasks", "conway.session", "a task is loaded, checked and scored apart from the session that runs it"),
    ("conway.tasks", "conway.sandbox", "a task sees its machine only through TaskEnv, which the sandbox implements"),
    ("conway.tasks", "conway.cli", "tasks know no command line"),
    ("conway.sandbox", "conway.tools", "the sandbox is where tools run commands; it knows no tool"),
    ("conway.sandbox", "conway.session", "a disposable desktop is handed to a run; it does not wire one"),
    ("conway.sandbox", "conway.evals", "a disposable desktop knows no suite or report"),
    ("training", "conway.loop", "training reads exported data, never the live loop"),
    ("conway", "scripts", "the package never imports a demo, benchmark or builder"),
    ("training", "scripts", "training never imports a demo, benchmark or builder"),
    ("conway.experience", "conway.evals", "experience turns journals into data; the suites and reports that use it sit above"),
    ("conway.readiness", "conway.evals", "readiness checks and commands sit below the suites and reports that run them"),
    ("conway.desktops", "conway.evals", "a desktop provider knows no suite or report that runs tasks on it"),
    ("conway.desktops", "conway.cli", "desktop providers know no command line"),
    ("conway.sandbox", "conway.desktops", "the local desktop is wrapped by its provider; it does not know the seam"),
    ("conway.tasks", "conway.desktops", "a task sees its machine only through TaskEnv, whichever provider gives it"),
]

# modules at the top of the package import only each other: they are what everything else stands on
LEAF_MODULES = {f"conway.{m}" for m in ("actions", "protocols", "geometry", "imaging", "config", "errors", "redact",
                                        "history")}
# packages of leaves: every module under them is a leaf too (grouped so that `conway/` shows its architecture)
LEAF_PACKAGES = {f"conway.{p}" for p in ("cancel", "machine", "text")}
MAX_LOOSE_MODULES = 12
"""`conway/` shows its architecture at the top: packages, and at most this many loose modules (`__init__` too)."""
# the one way out of the leaves: `policy.kind` is checked against the model-family registry
LEAF_EXCEPTIONS = {("conway.config", "conway.policies.families")}


LAYERS: list[tuple[str, ...]] = [
    ("cli",),
    ("session", "evals", "readiness", "experience", "view", "args", "desktops"),
    ("loop",),
    ("policies", "runtime", "tools", "observe", "prompt", "store"),
    ("sandbox",),
    ("tasks",),
]
"""docs/architecture.md#import-rules's diagram, top down (the leaves below them all): a module imports its own
layer and those below, never one above. `NEVER` then forbids pairs inside a layer or across it."""

DOCS = ROOT / "docs" / "architecture.md"
TABLE_HEAD = "| a module under… | never imports… | because |"


def docs_rules() -> list[tuple[str, str, str]]:
    """The import-rule table of docs/architecture.md, one (importer, imported, why) per row."""
    lines = DOCS.read_text(encoding="utf-8").splitlines()
    start = lines.index(TABLE_HEAD) + 2  # past the head and its | --- | line
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        src, dst, why = (cell.strip() for cell in line.strip().strip("|").split(" | "))
        rows.append((src.strip("`"), dst.strip("`"), why))
    return rows


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


def _layer(mod: str) -> int | None:
    """The layer of a conway module, top down (the leaves: below the last); None outside `conway`."""
    for n, names in enumerate(LAYERS):
        if any(_under(mod, f"conway.{name}") for name in names):
            return n
    return len(LAYERS) if mod == "conway" or mod in _leaves() else None


def test_every_module_sits_in_a_layer() -> None:
    lost = sorted(m for m in GRAPH if m.startswith("conway") and _layer(m) is None)
    assert not lost, f"modules in no layer of LAYERS (add their package to the diagram and LAYERS): {lost}"


def test_imports_point_down_the_layers() -> None:
    # the rule list alone let conway.tasks.runnable import conway.readiness (two layers up) unnoticed
    upward = sorted(f"{m} (layer {_layer(m)}) imports {t} (layer {_layer(t)})" for m, targets in GRAPH.items()
                    for t in targets if m.startswith("conway.") and t.startswith("conway.")
                    and (_layer(t) or 0) < (_layer(m) or 0) and (m, t.rpartition(".")[0]) not in LEAF_EXCEPTIONS
                    and (m, t) not in LEAF_EXCEPTIONS)
    assert not upward, "an import up the layers: " + "; ".join(upward)


def test_the_docs_diagram_is_layers() -> None:
    text = DOCS.read_text(encoding="utf-8")
    block = text[text.index("```\ncli\n"):].split("```")[1]
    drawn = []
    for line in block.strip().splitlines()[:len(LAYERS)]:  # `└─ a · b (+ c) · d  what they are`
        pieces = line.replace("└─", "").replace("(+ ", "· ").replace(")", "").split("·")
        drawn.append(tuple(sorted(piece.split()[0] for piece in pieces if piece.split())))
    assert drawn == [tuple(sorted(layer)) for layer in LAYERS]


def test_the_docs_table_is_never() -> None:
    documented, held = docs_rules(), list(NEVER)
    assert [r for r in held if r not in documented] == [], "rules in NEVER missing from docs/architecture.md's table"
    assert [r for r in documented if r not in held] == [], "rows of docs/architecture.md's table that NEVER lacks"


def _leaves() -> set[str]:
    return LEAF_MODULES | {m for m in GRAPH if any(m == p or m.startswith(p + ".") for p in LEAF_PACKAGES)}


def test_the_top_level_modules_are_leaves() -> None:
    top = {m for m in GRAPH if m.count(".") == 1 and m.startswith("conway.")
           and not any(k.startswith(m + ".") for k in GRAPH)}
    assert top == LEAF_MODULES, f"top-level modules that are not declared leaves (or missing): {sorted(top ^ LEAF_MODULES)}"
    leaves = _leaves()
    broken = sorted(f"{m} imports {t}" for m in leaves for t in GRAPH[m]
                    if t not in leaves and t != "conway" and (m, t) not in LEAF_EXCEPTIONS)
    assert not broken, "a leaf imports above itself: " + "; ".join(broken)


def test_conway_shows_its_architecture_at_the_top() -> None:
    loose = sorted(p.name for p in (ROOT / "conway").glob("*.py"))
    assert len(loose) <= MAX_LOOSE_MODULES, f"{len(loose)} loose modules in conway/ (at most {MAX_LOOSE_MODULES}): {loose}"


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
