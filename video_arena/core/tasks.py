"""The tasks tree: games, their definitions and cases, and `resolve()` (docs/ARCHITECTURE.md, the layout and the ground truth contract).

    tasks/<game>/game.toml            definition: sides, vocabulary, V_t, band, coordinates, render size
    tasks/<game>/instruction.md       one text, delivery lines marked A-ONLY / B-ONLY
    tasks/<game>/answer_seed.json     {"events": []} as bytes
    tasks/<game>/cases.json           {"game": ..., "cases": [{"case_id": ..., ...}, ...]}
    tasks/<game>/gt/<case_id>.json    ground truth (scorer only)
    tasks/<game>/media/<case_id>.mp4  the rendered match
    tasks/<game>/manifest.json        provenance and, per case, the SHA-256 of its ground truth and video
"""
from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from os import PathLike
from pathlib import Path
from typing import Any

from video_arena import paths

#: Anchored with \A and \Z ("$" also matches before a final newline, so "Fx7kQ2aB\n" would pass):
#: .match() and .fullmatch() both take an id only whole.
CASE_ID_RE = re.compile(r"\A[A-Za-z0-9]{8}\Z")
GAME_RE = re.compile(r"\A[a-z0-9][a-z0-9_]*\Z")
ANSWER_ROOT_KEY = "events"
DELTA_LABELS = ("up", "down", "flat")
ROW_FIELDS = ("t", "type", "actor", "where", "delta", "state")


class UnknownGame(LookupError):
    pass


class UnknownCase(LookupError):
    pass


class TasksTreeError(ValueError):
    """A tasks tree file is malformed."""


@dataclass(frozen=True)
class GameDefinition:
    """A game's definition as read from game.toml (docs/ADDING_A_GAME.md lists every key)."""

    name: str
    title: str
    family: str
    sides: tuple[str, ...]
    event_types: tuple[str, ...]
    types_without_where: tuple[str, ...]
    where_convention: str
    value_definition: str
    value_neutral: float
    band: float
    state_above: str
    state_below: str
    state_even: str
    render_size: tuple[int, int]
    raw: dict[str, Any] = field(repr=False, compare=False)

    @property
    def state_labels(self) -> tuple[str, str, str]:
        return (self.state_above, self.state_below, self.state_even)

    def delta_of(self, v_before: float, v_after: float) -> str:
        d = v_after - v_before
        return "up" if d > self.band else "down" if d < -self.band else "flat"

    def state_of(self, v_after: float) -> str:
        d = v_after - self.value_neutral
        return self.state_above if d > self.band else self.state_below if d < -self.band else self.state_even

    def judge_spec(self) -> dict[str, Any]:
        """What the judge needs to check an answer's vocabulary; embedded in every ground truth."""
        return {
            "game": self.name,
            "sides": list(self.sides),
            "event_types": list(self.event_types),
            "delta_labels": list(DELTA_LABELS),
            "state_labels": list(self.state_labels),
            "band": self.band,
        }


def parse_game_toml(text: str, source: str = "game.toml") -> GameDefinition:
    try:
        raw = tomllib.loads(text)
        ev, val = raw["events"], raw["value"]
        gd = GameDefinition(
            name=raw["name"],
            title=raw["title"],
            family=raw["family"],
            sides=tuple(raw["sides"]),
            event_types=tuple(ev["types"]),
            types_without_where=tuple(ev.get("types_without_where", [])),
            where_convention=ev["where"],
            value_definition=val["definition"],
            value_neutral=float(val["neutral"]),
            band=float(val["band"]),
            state_above=val["state_above"],
            state_below=val["state_below"],
            state_even=val.get("state_even", "even"),
            render_size=tuple(raw["render_size"]),  # type: ignore[arg-type]
            raw=raw,
        )
    except (KeyError, TypeError, ValueError, tomllib.TOMLDecodeError) as exc:
        raise TasksTreeError(f"{source}: malformed game definition: {exc!r}") from exc
    if not GAME_RE.fullmatch(gd.name):
        raise TasksTreeError(f"{source}: game name {gd.name!r} must be lower-case letters, digits and _ "
                             "(starting with a letter or digit)")
    for label in (*gd.sides, *gd.event_types, *gd.state_labels):
        if label != label.strip().lower() or not label:
            raise TasksTreeError(f"{source}: label {label!r} must be non-empty, trimmed and lower case")
    if len(set(gd.state_labels)) != 3:
        raise TasksTreeError(f"{source}: state labels {gd.state_labels} must be distinct")
    if not gd.band >= 0:
        raise TasksTreeError(f"{source}: band must be >= 0")
    unknown = set(gd.types_without_where) - set(gd.event_types)
    if unknown:
        raise TasksTreeError(f"{source}: types_without_where names unknown types {sorted(unknown)}")
    return gd


def list_games(tasks_root: str | PathLike | None = None) -> list[str]:
    root = paths.tasks_root(tasks_root)
    return sorted(p.name for p in root.iterdir() if (p / "game.toml").is_file())


def load_game(game: str, tasks_root: str | PathLike | None = None) -> GameDefinition:
    root = paths.tasks_root(tasks_root)
    return _load_game_cached(str(_game_dir(root, game) / "game.toml"))


@lru_cache(maxsize=64)
def _load_game_cached(path: str) -> GameDefinition:
    return parse_game_toml(Path(path).read_text(encoding="utf-8"), source=path)


def _game_dir(root: Path, game: str) -> Path:
    d = root / str(game)
    if not GAME_RE.fullmatch(str(game)) or not (d / "game.toml").is_file():
        known = ", ".join(list_games(root)) or "none"
        raise UnknownGame(f"unknown game {game!r} in tasks root {root}; games there: {known}")
    return d


def load_cases(game: str, tasks_root: str | PathLike | None = None) -> list[dict[str, Any]]:
    """The game's cases in file order ([] for a game that has none in this tree)."""
    root = paths.tasks_root(tasks_root)
    path = _game_dir(root, game) / "cases.json"
    if not path.is_file():
        return []
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        cases = doc["cases"]
        if not isinstance(cases, list):
            raise TypeError("'cases' is not a list")
        for c in cases:
            cid = c.get("case_id") if isinstance(c, dict) else None
            if not (isinstance(cid, str) and CASE_ID_RE.fullmatch(cid)):
                raise ValueError(f"bad case id {cid!r} (8 characters of [A-Za-z0-9])")
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise TasksTreeError(f"{path}: malformed cases file: {exc}") from exc
    ids = [c["case_id"] for c in cases]
    if len(ids) != len(set(ids)):
        raise TasksTreeError(f"{path}: duplicate case ids")
    return cases


def resolve(game: str, case_id: str, tasks_root: str | PathLike | None = None,
            media_root: str | PathLike | None = None) -> dict[str, Any]:
    """Paths and metadata of one case.

    Returns a dict with `instruction`, `answer_seed`, `game_toml`, `gt` (the scorer's only: never
    hand it to a model), `media`, `case` (its cases.json entry), `game`, `case_id`, `tasks_root`.
    """
    root = paths.tasks_root(tasks_root)
    gdir = _game_dir(root, game)
    cases = load_cases(game, root)
    entry = next((c for c in cases if c["case_id"] == case_id), None)
    if entry is None:
        if not cases:
            raise UnknownCase(f"game {game!r} has no cases in tasks root {root} "
                              f"(point --tasks-root / ${paths.TASKS_ROOT_ENV} at a tree that has them)")
        sample = ", ".join(c["case_id"] for c in cases[:10])
        more = f" and {len(cases) - 10} more" if len(cases) > 10 else ""
        raise UnknownCase(f"unknown case {case_id!r} for game {game!r} in {root}; cases: {sample}{more}")
    mroot = paths.media_root(root, media_root)
    return {
        "game": game,
        "case_id": case_id,
        "tasks_root": root,
        "game_dir": gdir,
        "game_toml": gdir / "game.toml",
        "instruction": gdir / "instruction.md",
        "answer_seed": gdir / "answer_seed.json",
        "gt": gdir / "gt" / f"{case_id}.json",
        "media": mroot / game / "media" / f"{case_id}.mp4",
        "case": dict(entry),
    }


def iter_cases(tasks_root: str | PathLike | None = None, games: list[str] | None = None,
               limit: int | None = None):
    """(game, case entry) over a tasks tree: every game (or `games`), the first `limit` cases each."""
    root = paths.tasks_root(tasks_root)
    names = list_games(root)
    if games:
        unknown = [g for g in games if g not in names]
        if unknown:
            raise UnknownGame(f"unknown game(s) {unknown} in {root}; games there: {', '.join(names)}")
        names = [g for g in names if g in games]
    if limit is not None and limit < 1:
        raise ValueError("--limit must be >= 1")
    for g in names:
        for c in load_cases(g, root)[:limit]:
            yield g, c


MANIFEST_FILE = "manifest.json"


def manifest_cases(game: str, tasks_root: str | PathLike | None = None) -> dict[str, dict[str, Any]] | None:
    """{case_id: the manifest's case entry} of tasks/<game>/manifest.json (read with a bound, never
    through a link or blocking); None when the game has no manifest.  A manifest that is not one (not a
    JSON object, `cases` not a list of objects) is a TasksTreeError, never skipped."""
    from video_arena.core.results import read_json_object

    path = paths.tasks_root(tasks_root) / str(game) / MANIFEST_FILE
    if not (path.exists() or path.is_symlink()):
        return None
    doc, err = read_json_object(path)
    if doc is None:
        raise TasksTreeError(f"{path}: {err}")
    cases = doc.get("cases", [])
    if not isinstance(cases, list) or not all(isinstance(c, dict) for c in cases):
        raise TasksTreeError(f"{path}: 'cases' is not a list of case entries")
    return {str(c.get("case_id")): c for c in cases}


def media_digest_problem(game: str, case_id: str, sha256: str, tasks_root: str | PathLike | None = None) -> str:
    """'' when a case's video (its SHA-256 given) is the one tasks/<game>/manifest.json records, else why
    not; a game without a manifest is not checked ('')."""
    entries = manifest_cases(game, tasks_root)
    if entries is None:
        return ""
    want = (entries.get(case_id) or {}).get("media_sha256")
    if not isinstance(want, str) or not want:
        return f"{game}/{MANIFEST_FILE} records no media_sha256 for {case_id}: the video cannot be checked"
    if want != sha256:
        return (f"the video of {game}/{case_id} has SHA-256 {sha256[:16]}..., {game}/{MANIFEST_FILE} records "
                f"{want[:16]}...: not the case's video (swapped or re-rendered without its manifest)")
    return ""
