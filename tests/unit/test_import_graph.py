"""The package's layout as an import graph, read from the source with `ast` (nothing is imported).

* `games/` never imports `cases/` (cases/ builds on games/, not the other way round);
* no circle between modules: counting every import, the ones inside functions too (a deferred import
  that closes a circle is still a circle, it only hides it from the interpreter);
* no circle between the subpackages (video_arena/<sub>/ and the top-level modules);
* the layers of docs/ARCHITECTURE.md: no import runs from a layer to one above it, and the readers
  (scoring, explore, publish) reach no runner, not even through other modules;
* no private name (`_x`) of one subpackage is used by another.
Imports under `if TYPE_CHECKING:` do not count: they never run.  A module that imports by name
(`importlib.import_module`, `__import__`) has every string in it that names a package module counted
as an import (a constant prefix of an f-string names its package).
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


def _imports_by_name(tree: ast.AST) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr in ("import_module", "__import__")
               or isinstance(n, ast.Name) and n.id in ("import_module", "__import__") for n in ast.walk(tree))


def _named_modules(tree: ast.AST) -> set[str]:
    """Strings naming a module (`video_arena.x.y`, `video_arena.x.y:func`, f"video_arena.x.{...}")."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value.split(":", 1)[0]
        elif isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
            text = str(node.values[0].value).rstrip(".")
        else:
            continue
        if text.startswith("video_arena.") and text.replace(".", "").replace("_", "").isalnum():
            out.add(text)
    return out


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The package modules `name` (at `path`) imports anywhere in its body, resolved to known modules."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: set[str] = _named_modules(tree) if _imports_by_name(tree) else set()
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


#: The layers of docs/ARCHITECTURE.md, bottom first: a module imports its own layer and those below.
LAYERS: list[tuple[str, set[str]]] = [
    ("foundation", {"paths", "safe_io", "safe_tree", "digests", "progress", "cli_args", "toolkit_info", "media"}),
    ("contract", {"core"}),
    ("adapters and plugins", {"harbor_api", "games", "container_host"}),
    ("runners and writers", {"protocol_a", "protocol_b", "cases", "importing"}),
    ("readers", {"scoring", "explore"}),
    ("the Harbor adapter", {"harbor"}),
    ("baselines", {"baselines"}),
    ("the command", {"cli"}),
]
#: What reads results and tasks, and what runs or writes them: no reader reaches a runner.
READERS = ("video_arena.scoring", "video_arena.explore", "video_arena.harbor.publish",
           "video_arena.harbor.publish_dataset", "video_arena.harbor.publish_adapter",
           "video_arena.harbor.publish_repository")
RUNNERS = ("video_arena.protocol_a", "video_arena.protocol_b", "video_arena.cases", "video_arena.importing",
           "video_arena.baselines")


def layer_of(module: str) -> int:
    part = module.split(".")[1] if module.count(".") else ""
    return next(i for i, (_, names) in enumerate(LAYERS) if part in names)


def _within(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def reached(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for nxt in graph.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


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


def test_every_part_has_a_layer(graph):
    parts = {m.split(".")[1] for m in graph if m.count(".")}
    assert parts == set().union(*(names for _, names in LAYERS))


def test_the_layers_are_the_ones_docs_architecture_writes_down():
    doc = (PKG.parent / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    table = doc.split("### Layers", 1)[1].split("\n\n", 2)[1]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in table.splitlines()[2:]]
    written = [(name, {p.strip("` /").removesuffix(".py") for p in parts.split(",")}) for name, parts, _ in rows]
    assert written == LAYERS


def test_no_import_runs_up_a_layer(graph):
    arrows = sorted(f"{src} -> {dst}" for src, dsts in graph.items() if src != "video_arena"
                    for dst in dsts if dst != "video_arena" and layer_of(dst) > layer_of(src))
    assert arrows == []


def test_readers_reach_no_runner(graph):
    assert all(any(_within(m, (r,)) for m in graph) for r in READERS)  # every reader named is a module
    found = {src: sorted(m for m in reached(graph, src) if _within(m, RUNNERS))
             for src in graph if _within(src, READERS)}
    assert {k: v for k, v in found.items() if v} == {}


def private_uses(pkg: Path = PKG) -> list[str]:
    """`from other.sub import _x` and `alias._x` where alias names a module of another subpackage."""
    files = module_files(pkg)
    out = []
    for name, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        aliases: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").startswith("video_arena"):
                for a in node.names:
                    target = f"{node.module}.{a.name}"
                    if target in files:
                        aliases[a.asname or a.name] = target
                    elif a.name.startswith("_") and not a.name.startswith("__") and part_of(node.module) != part_of(name):
                        out.append(f"{name}: from {node.module} import {a.name}")
            elif isinstance(node, ast.Import):
                aliases.update({a.asname: a.name for a in node.names if a.asname and a.name in files})
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                    and node.attr.startswith("_") and not node.attr.startswith("__")
                    and part_of(aliases[node.value.id]) != part_of(name)):
                out.append(f"{name}: {aliases[node.value.id]}.{node.attr}")
    return sorted(set(out))


def test_no_private_name_crosses_a_subpackage():
    assert private_uses() == []


def made_up_package(tmp_path: Path, files: dict[str, str]) -> Path:
    pkg = tmp_path / "video_arena"
    for rel, text in files.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(text)
    return pkg


def test_layers_readers_and_private_names_are_checked(tmp_path):
    # the checks can fail: a reader that reaches a runner through core, a name imported by string,
    # a private name taken from another subpackage
    pkg = made_up_package(tmp_path, {
        "__init__.py": "",
        "cli.py": "import importlib\nCOMMANDS = {'x': 'video_arena.scoring.s:main'}\nrun = importlib.import_module\n",
        "core/__init__.py": "",
        "core/c.py": "import importlib\ndef f():\n    importlib.import_module(f'video_arena.protocol_a.{1}')\n",
        "protocol_a/__init__.py": "",
        "protocol_a/r.py": "_SECRET = 1\n",
        "scoring/__init__.py": "",
        "scoring/s.py": "from video_arena.core import c\nfrom video_arena.protocol_a import r as R\nx = R._SECRET\n",
    })
    g = module_graph(pkg)
    assert g["video_arena.cli"] == {"video_arena.scoring.s"}
    assert g["video_arena.core.c"] == {"video_arena.protocol_a"}  # runs up: contract -> runners
    assert layer_of("video_arena.protocol_a") > layer_of("video_arena.core.c")
    assert "video_arena.protocol_a.r" in reached(g, "video_arena.scoring.s")
    assert private_uses(pkg) == ["video_arena.scoring.s: video_arena.protocol_a.r._SECRET"]


def test_circles_are_found(tmp_path):
    # the checks can fail: a made-up package with a deferred circle and an upward arrow
    pkg = made_up_package(tmp_path, {
        "__init__.py": "",
        "games/__init__.py": "",
        "games/a.py": "def f():\n    from video_arena.cases import b\n",
        "cases/__init__.py": "",
        "cases/b.py": "from ..games import a\n",
        "cases/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from video_arena.games import a\n",
    })
    g = module_graph(pkg)
    assert g["video_arena.cases.b"] == {"video_arena.games.a"}
    assert g["video_arena.cases.c"] == set()
    assert circles(g) == [["video_arena.cases.b", "video_arena.games.a"]]
    assert circles(subpackage_graph(g)) == [["video_arena.cases", "video_arena.games"]]


# --------------------------------------------------------------------------------------------------
# deferred imports say why
# --------------------------------------------------------------------------------------------------
def deferred_without_reason(pkg: Path = PKG) -> list[str]:
    """Every import inside a function (docs/ARCHITECTURE.md: imports stand at the top of their module) that
    does not say why it is there: a comment naming it `deferred` on its own line(s) or in the comment
    lines right above it or above the block of imports it stands in."""
    out = []
    for name, path in module_files(pkg).items():
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        found: list[ast.AST] = []

        def walk(node: ast.AST, inside: bool) -> None:
            for child in ast.iter_child_nodes(node):
                if inside and isinstance(child, (ast.Import, ast.ImportFrom)):
                    found.append(child)
                walk(child, inside or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

        walk(ast.parse(text, filename=str(path)), False)
        for node in found:
            if any("# deferred" in lines[i - 1] for i in range(node.lineno, node.end_lineno + 1)):
                continue
            i, said = node.lineno - 2, False
            while i >= 0:
                line = lines[i].strip()
                if line.startswith("#") and "deferred" in line:
                    said = True
                    break
                if not (line.startswith(("#", "import ", "from ")) or not line):
                    break
                i -= 1
            if not said:
                out.append(f"{path.relative_to(pkg.parent)}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    return sorted(out)


def test_every_deferred_import_says_why():
    assert deferred_without_reason() == []


def test_a_deferred_import_without_a_reason_is_found(tmp_path):
    pkg = made_up_package(tmp_path, {
        "__init__.py": "",
        "a.py": ("import json\n\n\ndef f():\n    import re\n    return re\n\n\n"
                 "def g():\n    # deferred: costly\n    import csv\n\n    import zlib\n    return csv, zlib\n\n\n"
                 "def h():\n    import ssl  # deferred: costly\n    return ssl\n"),
    })
    assert deferred_without_reason(pkg) == ["video_arena/a.py:5: import re"]
