"""The package layering, by import analysis (ast, no imports executed):

    wire, log  ->  core  ->  groups, txn, share, cluster, registry  ->  server  ->  cli          spark_export -> log

`core` holds the broker's services that the coordinators and the cluster build on (configuration,
topics, partition logs, group commit, waiters); `server` is the network layer (connections, router,
handlers, security, metrics) and the composition root. A package may import only itself and the
packages before it, type-only imports (under `if TYPE_CHECKING:`) included: a type named from a
higher layer is a dependency too. No two modules import each other at run time, directly or
through others (no cycles), counting imports anywhere in a module (a function-level import is
still a runtime dependency); type-only imports may (a protocol and its implementation)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "tidelog"

_BELOW_SERVER = {"cluster", "groups", "txn", "share", "registry", "core", "log", "wire"}
ALLOWED = {
    "wire": {"wire"},
    "log": {"log", "wire"},
    "core": {"core", "log", "wire"},
    "groups": {"groups", "core", "log", "wire"},
    "txn": {"txn", "groups", "core", "log", "wire"},
    "share": {"share", "groups", "core", "log", "wire"},
    "cluster": {"cluster", "core", "log", "wire"},
    "registry": {"registry", "core", "log", "wire"},
    "server": {"server"} | _BELOW_SERVER,
    "spark_export": {"spark_export", "log"},
    "cli": {"cli", "server", "spark_export"} | _BELOW_SERVER,
}


def module_name(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _type_checking_block(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and (
        (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
        or (isinstance(node.test, ast.Attribute) and node.test.attr == "TYPE_CHECKING")
    )


def runtime_imports(path: Path, type_only: bool = False) -> set[str]:
    """tidelog modules this file imports at run time (absolute names); with `type_only`, the
    imports under `if TYPE_CHECKING:` too."""
    tree = ast.parse(path.read_text(), str(path))
    me = module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    out: set[str] = set()

    def visit(node: ast.AST) -> None:
        if _type_checking_block(node) and not type_only:
            for child in node.orelse:  # type: ignore[attr-defined]
                visit(child)
            return
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("tidelog"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod.startswith("tidelog"):
                names = [f"{mod}.{a.name}" for a in node.names]
                found = [n for n in names if _exists(n)]
                out.update(found or [mod])
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return {m for m in out if m != me}


def _exists(name: str) -> bool:
    p = SRC.parent / Path(*name.split("."))
    return p.with_suffix(".py").exists() or (p / "__init__.py").exists()


def _top(name: str) -> str | None:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else None


def graph(type_only: bool = False) -> dict[str, set[str]]:
    g: dict[str, set[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        g[module_name(path)] = runtime_imports(path, type_only)
    return g


def test_packages_import_only_downwards():
    wrong = []
    for mod, deps in graph(type_only=True).items():
        top = _top(mod)
        if top not in ALLOWED:
            continue
        for dep in deps:
            dtop = _top(dep)
            if dtop is not None and dtop not in ALLOWED[top]:
                wrong.append(f"{mod} imports {dep}")
    assert not wrong, "\n".join(wrong)


def test_no_import_cycles():
    g = graph()
    # a package's __init__ re-exporting its own modules is not a cycle with them
    edges = {m: {d for d in deps if d in g and not (m.startswith(d + ".") and d != "tidelog")} for m, deps in g.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def strong(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            strong(v)
    assert not cycles, "\n".join(" <-> ".join(c) for c in cycles)


@pytest.mark.parametrize(
    "bad,dep",
    [
        ("wire", "tidelog.log.records"),
        ("log", "tidelog.server.broker"),
        ("core", "tidelog.groups.coordinator"),
        ("groups", "tidelog.txn.service"),
        ("cluster", "tidelog.server.broker"),
        ("txn", "tidelog.server.security"),
    ],
)
def test_the_check_catches_an_upward_import(bad, dep):
    assert _top(dep) not in ALLOWED[bad]


def test_type_only_imports_are_counted():
    f = SRC / "groups" / "coordinator.py"  # names TopicAdmin for its annotations only
    assert "tidelog.core.admin" in runtime_imports(f, type_only=True) - runtime_imports(f)
