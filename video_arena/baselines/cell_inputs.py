"""What each baseline cell was made from, so `video-arena baselines` never keeps a stale one.

Every cell of a baseline system records, in its run.json, `baseline_inputs_sha256`: the SHA-256 of
its inputs, which are

* the case's task files: the game's game.toml and instruction.md, the case's entry in cases.json and in
  manifest.json (the media's digest is there), its ground truth;
* the system's agent: the source files that make its answers and the parameters they are given (the
  agent command of a run-b system and every file installed with it, mode, seed and tables of a run-a
  one, with run-a's own code: `module_sources("video_arena.protocol_a.runner")`, the runner, its
  engine, prompt, grid and every other package module it imports; for the visible ceiling, per game,
  the game's reader, plugin and engine sources and the evaluator's identity);
* the judge.

Before a system runs, a cell whose recorded digest is not the one its inputs give now (or that records
none: made by an older toolkit, or by hand) is removed, so the runner makes it again; after the run,
every cell that ran is stamped with its digest.  A system that is not re-run (`--skip`) and holds a
stale cell is refused: its numbers would be of other inputs.
"""
from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path
from typing import Any, Iterable

from video_arena import paths
from video_arena.core import results as R
from video_arena.core.tasks import TasksTree
from video_arena.digests import sha256_hasher

#: the run.json key of a baseline cell's inputs digest
KEY = "baseline_inputs_sha256"


def _json_bytes(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _case_entries(path: Path) -> dict[str, Any]:
    doc = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    return {str(c.get("case_id")): c for c in doc.get("cases") or [] if isinstance(c, dict)}


def case_digests(tasks_root: Path, game: str) -> dict[str, str]:
    """{case_id: SHA-256 of the case's task files} for every case of a game."""
    tree = TasksTree(tasks_root)
    gdir = tree.game_dir(game)
    shared = sha256_hasher()
    for name in ("game.toml", "instruction.md"):
        shared.update(name.encode() + b"\0" + sha256_hasher((gdir / name).read_bytes()).digest())
    cases, manifest = _case_entries(tree.cases_path(game)), _case_entries(tree.manifest_path(game))
    out = {}
    for cid, entry in cases.items():
        h = shared.copy()
        h.update(b"case\0" + _json_bytes(entry))
        h.update(b"manifest\0" + _json_bytes(manifest.get(cid)))
        h.update(b"gt\0" + sha256_hasher(tree.gt(game, cid).read_bytes()).digest())
        out[cid] = h.hexdigest()
    return out


def module_sources(module: str, package: Path | None = None) -> list[Path]:
    """The source files of a package module and of every package module it imports, directly or through
    others, at the top or inside a function (read with ast, nothing imported): all the package code a run
    of it can execute, so a change to any of them changes the digest of what it made."""
    pkg = Path(package) if package is not None else paths.REPO_ROOT / "video_arena"
    top = pkg.name

    def file_of(name: str) -> Path | None:
        parts = name.split(".")[1:]
        for cand in (pkg.joinpath(*parts).with_suffix(".py"), pkg.joinpath(*parts, "__init__.py")):
            if parts and cand.is_file() or not parts and cand.name == "__init__.py" and cand.is_file():
                return cand
        return None

    seen: dict[str, Path] = {}
    todo = [module]
    while todo:
        name = todo.pop()
        path = file_of(name)
        if name in seen or path is None:
            continue
        seen[name] = path
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                found = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = name.split(".")[:len(name.split(".")) - node.level + is_pkg] if node.level else []
                mod = ".".join(base + ([node.module] if node.module else [])) if node.level else node.module or ""
                found = [mod] + [f"{mod}.{a.name}" for a in node.names]
            else:
                continue
            for target in found:
                parts = target.split(".")
                while parts and parts[0] == top:  # the module itself, and each package on its way
                    todo.append(".".join(parts))
                    parts = parts[:-1]
    return sorted(set(seen.values()))


def system_digest(files: Iterable[Path], params: Any) -> str:
    """SHA-256 of a system's agent (its source files and parameters) and the judge."""
    h = sha256_hasher()
    for p in (*files, paths.judge_path()):
        h.update(Path(p).name.encode() + b"\0" + sha256_hasher(Path(p).read_bytes()).digest())
    h.update(b"params\0" + _json_bytes(params))
    return h.hexdigest()


def cell_digest(case: str, system: str) -> str:
    return sha256_hasher(f"{case}:{system}".encode()).hexdigest()


def expected(tasks_root: Path, games: Iterable[str], system: str) -> dict[tuple[str, str], str]:
    """{(game, case_id): the digest a fresh cell of this system records} over every case of the games."""
    return {(g, cid): cell_digest(d, system) for g in games for cid, d in case_digests(tasks_root, g).items()}


def expected_per_game(tasks_root: Path, systems: dict[str, str]) -> dict[tuple[str, str], str]:
    """`expected` for a system whose digest is per game ({game: system digest}): a game's own files are
    among its inputs (the visible ceiling's reader and plugin)."""
    out: dict[tuple[str, str], str] = {}
    for game, system in systems.items():
        out.update(expected(tasks_root, [game], system))
    return out


def stale_cells(folder: Path, want: dict[tuple[str, str], str]) -> list[Path]:
    """The cell folders of a system's results folder whose recorded digest is not `want`'s (cells of
    games or cases `want` does not name are not this run's: left alone, and the scorer ignores them
    when the tasks tree has no such case)."""
    out = []
    if not folder.is_dir():
        return out
    for (game, case_id), digest in sorted(want.items()):
        d = R.cell_dir(folder, game, case_id)
        if not d.is_dir():
            continue
        rec, _ = R.read_run(d)
        if rec is None or rec.extras.get(KEY) != digest:
            out.append(d)
    return out


def drop_stale(folder: Path, want: dict[tuple[str, str], str]) -> int:
    """Remove the stale cells (the runner then makes them again); returns how many."""
    stale = stale_cells(folder, want)
    for d in stale:
        shutil.rmtree(d)
    return len(stale)


def stamp(folder: Path, want: dict[tuple[str, str], str]) -> int:
    """Record the digest in every cell that ran and records none (made by this run: every unstamped
    cell was removed before it); returns how many were stamped."""
    n = 0
    for (game, case_id), digest in sorted(want.items()):
        d = R.cell_dir(folder, game, case_id)
        rec, _ = R.read_run(d) if d.is_dir() else (None, "")
        if rec is None or not rec.ran or rec.extras.get(KEY):
            continue
        rec.extras[KEY] = digest
        R.write_run(d, rec)
        n += 1
    return n
