"""The package's structure: no import cycle among grokverify's modules, and a claim schema that
loads without the heavy numeric packages."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "grokverify"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(name: str, modules: set[str]) -> str | None:
    """The module a dotted name refers to (the longest prefix that is one of ours)."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in modules:
            return ".".join(parts[:end])
    return None


def import_graph() -> dict[str, set[str]]:
    """module -> the grokverify modules it imports, anywhere in its source: at the top, inside
    functions and under TYPE_CHECKING alike (each is a dependency someone has to untangle)."""
    files = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    modules = set(files)
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from the package, `level - 1` packages up
                    anchor = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                    base = ".".join([*anchor, *([base] if base else [])])
                names = [f"{base}.{alias.name}" for alias in node.names]
            else:
                continue
            edges |= {r for name in names if (r := _resolve(name, modules)) and r != module}
        graph[module] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_cycle_finder_finds_cycles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_sees_lazy_and_type_checking_imports() -> None:
    graph = import_graph()
    assert "grokverify.analysis.effective" in graph["grokverify.engine.probes"]  # in a function
    assert "grokverify.run.outcome" in graph["grokverify.cli"]  # under TYPE_CHECKING


def test_no_import_cycle_in_grokverify() -> None:
    graph = import_graph()
    found = cycles(graph)
    lines = []
    for component in found:
        ties = [f"{a} -> {b}" for a in component for b in sorted(graph[a]) if b in component]
        lines.append(f"{', '.join(component)}: " + "; ".join(ties))
    assert not found, "import cycles:\n" + "\n".join(lines)


# modules the claim schema must not need: each takes seconds to import
HEAVY = ("torch", "numpy", "scipy", "statsmodels")
_PROBE = """
import json, sys, traceback
HEAVY, PACKAGE = {heavy!r}, {package!r}
first = {{}}

class Spy:
    def find_spec(self, name, path=None, target=None):
        top = name.partition(".")[0]
        if top in HEAVY and top not in first:
            ours = [f"{{f.filename[len(PACKAGE) + 1:]}}:{{f.lineno}}"
                    for f in traceback.extract_stack() if f.filename.startswith(PACKAGE)]
            first[top] = " <- ".join(reversed(ours)) or "outside grokverify"
        return None

sys.meta_path.insert(0, Spy())
import grokverify.claim.load
print(json.dumps({{m: first.get(m, "?") for m in HEAVY if m in sys.modules}}))
"""


def test_the_claim_schema_imports_no_heavy_package() -> None:
    """`grokverify validate` stays fast: importing the schema loads neither the statistics
    (scipy, statsmodels, numpy) nor torch. The message names who imported one first."""
    code = _PROBE.format(heavy=HEAVY, package=str(PACKAGE))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)
    loaded = json.loads(proc.stdout.strip().splitlines()[-1])
    assert loaded == {}, "import grokverify.claim.load loads " + "; ".join(
        f"{m} (first from {who})" for m, who in loaded.items())
