"""The package's import rules (issue 9), read from the installed package's source with ``ast``.

* The library (the top-level modules: session, message, envelope, ...,
  ``_core``) imports nothing from the read model or a front end.
* The read model (``inspect``) imports the library and itself, never a front end.
* A front end (every other sub-package: ``cli``, ``demo``, ``bench``, and the
  ones to come) imports its own modules, the library's public API (the names in
  ``agent_transcript.__all__``), ``inspect`` and other front ends by their
  public names only: never a name or a module that starts with ``_`` in
  another package.
* No import cycle: none between modules, none between packages.

Every import counts, inside functions too, and so does ``importlib.import_module``
of a literal name.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

import agent_transcript

ROOT = "agent_transcript"
PACKAGE_DIR = Path(agent_transcript.__file__).resolve().parent
READ_MODEL = "inspect"


@dataclass(frozen=True)
class Edge:
    source: str  # the importing module
    target: str  # the module imported (a package means its __init__)
    name: str | None  # the name taken from it (from X import name), else None
    line: int


def module_names() -> dict[str, Path]:
    """Every module of the package, by dotted name (a package by its own name)."""
    out = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE_DIR).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join([ROOT, *parts])] = path
    return out


MODULES = module_names()
KNOWN = set(MODULES) | {f"{ROOT}._core"}


def _resolve(source: str, is_package: bool, level: int, module: str | None) -> str:
    base = source.split(".") if is_package else source.split(".")[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def edges_of(name: str, path: Path) -> list[Edge]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    is_package = path.name == "__init__.py"
    out: list[Edge] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                out.append(Edge(name, alias.name, None, node.lineno))
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(name, is_package, node.level, node.module) if node.level else (node.module or "")
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if sub in KNOWN:  # from package import submodule
                    out.append(Edge(name, sub, None, node.lineno))
                else:
                    out.append(Edge(name, target, alias.name, node.lineno))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            out.append(Edge(name, node.args[0].value, None, node.lineno))
    return [e for e in out if e.target == ROOT or e.target.startswith(ROOT + ".")]


def all_edges() -> list[Edge]:
    return [e for name, path in MODULES.items() for e in edges_of(name, path)]


def unit(module: str) -> str:
    """The package a module belongs to: ``library``, ``inspect`` or a front end's name.

    ``__main__`` (``python -m agent_transcript``) is a front end of its own: it runs ``cli``.
    """
    parts = module.split(".")
    if module == f"{ROOT}.__main__":
        return "__main__"
    if len(parts) == 1 or f"{ROOT}.{parts[1]}" not in MODULES or not MODULES[f"{ROOT}.{parts[1]}"].name == "__init__.py":
        return "library"
    return parts[1]


def private(name: str) -> bool:
    """``_name`` is private; a dunder such as ``__version__`` is not."""
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def violations(edges: list[Edge]) -> list[str]:
    """Every edge that breaks a layer rule, as ``source:line -> target[.name]: why``."""
    public = set(agent_transcript.__all__)
    bad = []
    for e in edges:
        src, dst = unit(e.source), unit(e.target)
        where = f"{e.source}:{e.line} -> {e.target}" + (f" ({e.name})" if e.name else "")
        if e.target not in KNOWN:
            bad.append(f"{where}: no such module")
        elif src == dst:
            continue
        elif src == "library":
            bad.append(f"{where}: the library imports nothing from the read model or a front end")
        elif src == READ_MODEL and dst != "library":
            bad.append(f"{where}: the read model imports only the library")
        elif src == READ_MODEL:
            continue
        elif any(private(part) for part in e.target.split(".")[1:] + ([e.name] if e.name else [])):
            bad.append(f"{where}: another package's private name")
        elif dst == "library":
            if e.target != ROOT and e.name is None:
                bad.append(f"{where}: a front end imports the library's public API, not its modules")
            elif e.name is not None and e.name not in public:
                bad.append(f"{where}: {e.name} is not in agent_transcript.__all__")
    return bad


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node, or with a self-loop (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
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
            if len(comp) > 1 or v in graph.get(v, ()):
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def module_graph(edges: list[Edge]) -> dict[str, set[str]]:
    """Module -> modules it imports. Importing ``a.b.c`` runs ``a.b``'s ``__init__`` too, unless
    the importer is inside ``a.b`` (its package is already being imported)."""
    graph: dict[str, set[str]] = {m: set() for m in KNOWN}
    for e in edges:
        parts = e.target.split(".")
        for k in range(2, len(parts) + 1):
            target = ".".join(parts[:k])
            inside = e.source == target or e.source.startswith(target + ".")
            if target in KNOWN and (k == len(parts) or not inside) and target != e.source:
                graph[e.source].add(target)
    return graph


def package_graph(edges: list[Edge]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for e in edges:
        src, dst = unit(e.source), unit(e.target)
        graph.setdefault(src, set())
        if src != dst:
            graph[src].add(dst)
    return graph


def test_the_walk_sees_every_package() -> None:
    units = {unit(m) for m in MODULES}
    assert {"library", "inspect", "cli", "demo", "bench"} <= units
    assert len(all_edges()) > 50


def test_no_module_breaks_a_layer_rule() -> None:
    assert violations(all_edges()) == []


def test_no_import_cycle_between_modules() -> None:
    graph = module_graph(all_edges())
    assert cycles({k: v for k, v in graph.items() if unit(k) != "library"}) == []
    # The library's modules import each other through the root only from __init__.
    assert [c for c in cycles(graph) if any(unit(m) != "library" for m in c)] == []


def test_no_import_cycle_between_packages() -> None:
    assert cycles(package_graph(all_edges())) == []


@pytest.mark.parametrize(
    "source, code, why",
    [
        ("agent_transcript.session", "from .cli import main", "the library imports nothing"),
        ("agent_transcript.inspect.stats", "from ..cli.style import plural", "the read model imports only"),
        ("agent_transcript.demo.story", "from ..cli.render import Renderer", None),
        ("agent_transcript.cli.show", "from .. import _core", "private name"),
        ("agent_transcript.cli.show", "from ..inspect.reader import _pread_all", "private name"),
        ("agent_transcript.bench.command", "import agent_transcript.peek", "not its modules"),
        ("agent_transcript.bench.command", "from ..peek import judge", "not in agent_transcript.__all__"),
        ("agent_transcript.cli.show", "from ..session import pending_operations", "not in agent_transcript.__all__"),
    ],
)
def test_the_rules_catch_a_bad_edge(tmp_path: Path, source: str, code: str, why: str | None) -> None:
    """Each rule fails on the edge that breaks it (a cycle, for demo -> cli)."""
    path = tmp_path / "m.py"
    path.write_text(code + "\n")
    edges = all_edges() + edges_of(source, path)
    if why is None:
        assert cycles(package_graph(edges)) != []
        assert violations(edges) == []
    else:
        assert any(why in v for v in violations(edges)), violations(edges)
