"""Harbor's environment registry and what each environment class declares it can run (read, not
constructed: the vendors' SDKs are not installed here).

Harbor lists its environments in `harbor.environments.factory._ENVIRONMENT_REGISTRY`, and each class
declares `capabilities` (an `EnvironmentCapabilities`) as a property of an instance, often depending
on the task (a compose task sets `_compose_mode`) or the host (Docker's egress-control sidecar).  Every
`EnvironmentCapabilities(...)` (or `.model_copy(update={...})`) in the class and its Harbor bases is
evaluated keyword by keyword with the task form's facts (`_compose_mode`/`_uses_compose` true for a
task with a compose file, Windows false); a value that depends on anything else is conditional
("if enable egress control" for Docker's egress-control sidecar).

The registry and the facts are private names of Harbor's: the facts are assumed only with the pinned
Harbor (version.is_pinned_release()); with another release none is assumed and every capability that
depends on one reads as conditional.  `registry_rows()` is what `video-arena harbor-envs` tabulates.
"""
from __future__ import annotations

import ast
import functools
import importlib.util
from dataclasses import dataclass, field
from pathlib import Path

from harbor.environments.factory import _ENVIRONMENT_REGISTRY

from video_arena.harbor_api import version


def task_form_facts(compose: bool) -> dict[str, bool]:
    """What a task form fixes of an environment instance, by the private attribute names of the pinned
    Harbor; {} with any other release (nothing assumed: conditional)."""
    if not version.is_pinned_release():
        return {}
    return {"_compose_mode": compose, "_uses_compose": compose, "_is_windows": False,
            "_is_windows_container": False}


class _Unknown(Exception):
    pass


class _Self:
    """`self` while evaluating a capability expression: only the facts a task form fixes."""

    def __init__(self, env_type: str, compose: bool):
        self._facts = task_form_facts(compose)
        self._type = env_type

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if name in self._facts:
            return self._facts[name]
        raise _Unknown(name)

    def type(self):
        return self._type


class _EnvType:
    def __getattr__(self, name):
        return name.lower().replace("_", "-")


@dataclass
class EnvRow:
    name: str
    cls: str
    module: str
    found: bool = True
    #: capability -> {"dockerfile": value, "compose": value}; value True/False or a string (conditional)
    caps: dict[str, dict[str, object]] = field(default_factory=dict)
    note: str = ""


def _module_source(module: str) -> tuple[Path | None, str | None]:
    """A harbor module's file, found without importing it (a vendor package's __init__ imports its SDK)."""
    spec = importlib.util.find_spec("harbor")
    if spec is None or not spec.origin or not module.startswith("harbor."):
        return None, None
    base = Path(spec.origin).parent.joinpath(*module.split(".")[1:])
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path, path.read_text(encoding="utf-8")
    return None, None


def _find_class(tree: ast.Module, name: str) -> ast.ClassDef | None:
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node
    return None


def _imports(tree: ast.Module, module: str, is_package: bool) -> dict[str, str]:
    """name -> module for `from harbor.x import Name` and relative `from .x import Name` lines."""
    out = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            parts = module.split(".")
            base = parts if is_package else parts[:-1]
            base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
            target = ".".join(base + ([node.module] if node.module else []))
        elif node.module and node.module.startswith("harbor"):
            target = node.module
        else:
            continue
        for a in node.names:
            out[a.asname or a.name] = target
    return out


def _cap_calls(cls: ast.ClassDef) -> list[dict[str, ast.expr]]:
    calls = []
    for node in ast.walk(cls):
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name) and f.id == "EnvironmentCapabilities":
                calls.append({k.arg: k.value for k in node.keywords if k.arg})
            elif isinstance(f, ast.Attribute) and f.attr == "model_copy":
                for k in node.keywords:
                    if k.arg == "update" and isinstance(k.value, ast.Dict):
                        calls.append({ast.literal_eval(kk): vv for kk, vv in zip(k.value.keys, k.value.values)
                                      if isinstance(kk, ast.Constant)})
    return calls


def _eval(expr: ast.expr, env_type: str, compose: bool) -> object:
    try:
        value = eval(compile(ast.Expression(expr), "<cap>", "eval"),  # noqa: S307 - Harbor's own literal
                     {"__builtins__": {}, "EnvironmentType": _EnvType()},
                     {"self": _Self(env_type, compose)})
        return bool(value)
    except _Unknown as exc:
        return f"if {str(exc).lstrip('_').replace('_', ' ')}"
    except Exception:  # noqa: BLE001 - an expression we cannot evaluate is shown as conditional
        return "conditional"


def declared(name: str, module: str, class_name: str, depth: int = 0) -> EnvRow:
    row = EnvRow(name=name, cls=class_name, module=module)
    path, src = _module_source(module)
    if src is None:
        row.found, row.note = False, "module not found"
        return row
    tree = ast.parse(src)
    cls = _find_class(tree, class_name)
    imports = _imports(tree, module, path.name == "__init__.py")
    if cls is None:
        if class_name in imports and imports[class_name] != module and depth < 5:
            return declared(name, imports[class_name], class_name, depth + 1)
        row.found, row.note = False, f"class {class_name} not found"
        return row
    merged: dict[str, dict[str, object]] = {}
    # the Harbor base class first (a subclass's model_copy updates it)
    for base in cls.bases:
        bname = base.id if isinstance(base, ast.Name) else None
        if bname and bname != "BaseEnvironment" and depth < 5:
            bmod = imports.get(bname, module)
            parent = declared(name, bmod, bname, depth + 1)
            merged.update(parent.caps)
    for call in _cap_calls(cls):
        for key, expr in call.items():
            merged[key] = {"dockerfile": _eval(expr, name, False), "compose": _eval(expr, name, True)}
    row.caps = merged
    return row


@functools.cache
def _registry_rows() -> tuple[EnvRow, ...]:
    return tuple(declared(t.value, e.module, e.class_name) for t, e in sorted(_ENVIRONMENT_REGISTRY.items(),
                                                                          key=lambda kv: kv[0].value))


def registry_rows() -> list[EnvRow]:
    """Every environment of Harbor's registry with what it declares (read once per process)."""
    return list(_registry_rows())
