"""The package's layout as an import graph, read from the source with `ast` (nothing is imported).

* `games/` never imports `cases/` (cases/ builds on games/, not the other way round);
* no circle between modules: counting every import, the ones inside functions too (a deferred import
  that closes a circle is still a circle, it only hides it from the interpreter);
* no circle between the subpackages (video_arena/<sub>/ and the top-level modules).
Imports under `if TYPE_CHECKING:` do not count: they never run.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[2] / "video_arena"


def module_files(pkg: Path = PKG) -> dict[str, Path]:
    out = {}
    for f in sorted(pkg.rglob("*.py")):
        parts = list(f.relative_to(pkg.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = f
    return out


def _type_checking_only(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"))


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The package modules `name` (at `path`) imports anywhere in its body, resolved to known modules."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: set[str] = set()
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if _type_checking_only(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for a in node.names:  # `from pkg import module` names the module, `from mod import name` the module
                found.add(f"{target}.{a.name}" if f"{target}.{a.name}" in known else target)
        stack.extend(ast.iter_child_nodes(node))
    out = set()
    for target in found:
        while target and target not in known:  # `import a.b.c` names a.b.c; a name inside a module: its module
            target = target.rpartition(".")[0]
        if target and target != name:
            out.add(target)
    return out


def module_graph(pkg: Path = PKG) -> dict[str, set[str]]:
    files = module_files(pkg)
    known = set(files)
    return {name: imports_of(name, path, known) for name, path in files.items()}


def part_of(module: str) -> str:
    """video_arena.<sub> for a module in a subpackage, the module itself for a top-level one."""
    return ".".join(module.split(".")[:2])


def subpackage_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for src, targets in graph.items():
        for dst in targets:
            a, b = part_of(src), part_of(dst)
            if a != b and "video_arena" not in (a, b):  # the package's own __init__ is no layer
                out.setdefault(a, set()).add(b)
    return out


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each sorted."""
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
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return module_graph()


def test_the_reader_sees_the_package(graph):
    # the graph is not empty by accident: known arrows are found, relative and deferred ones included
    assert "video_arena.games.base" in graph
    assert "video_arena.games.base" in graph["video_arena.cases.build"]
    assert "video_arena.container_host.registry" in graph["video_arena.container_host.image_cli"]


def test_games_never_import_cases(graph):
    arrows = sorted(f"{src} -> {dst}" for src, dsts in graph.items() if src.startswith("video_arena.games")
                    for dst in dsts if dst == "video_arena.cases" or dst.startswith("video_arena.cases."))
    assert arrows == []


def test_no_circle_between_modules(graph):
    assert circles(graph) == []


def test_no_circle_between_subpackages(graph):
    assert circles(subpackage_graph(graph)) == []


def test_circles_are_found(tmp_path):
    # the checks can fail: a made-up package with a deferred circle and an upward arrow
    pkg = tmp_path / "video_arena"
    for rel, text in {
        "__init__.py": "",
        "games/__init__.py": "",
        "games/a.py": "def f():\n    from video_arena.cases import b\n",
        "cases/__init__.py": "",
        "cases/b.py": "from ..games import a\n",
        "cases/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from video_arena.games import a\n",
    }.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(text)
    g = module_graph(pkg)
    assert g["video_arena.cases.b"] == {"video_arena.games.a"}
    assert g["video_arena.cases.c"] == set()
    assert circles(g) == [["video_arena.cases.b", "video_arena.games.a"]]
    assert circles(subpackage_graph(g)) == [["video_arena.cases", "video_arena.games"]]
