"""The tasks tree: games, their definitions and cases, where every file of the tree is (`TasksTree`),
the manifests, and `resolve()` (docs/ARCHITECTURE.md, the layout and the ground truth contract).

    tasks/<game>/game.toml            definition: sides, vocabulary, V_t, band, coordinates, render size
    tasks/<game>/instruction.md       one text, delivery lines marked A-ONLY / B-ONLY
    tasks/<game>/answer_seed.json     {"events": []} as bytes
    tasks/<game>/cases.json           {"game": ..., "cases": [{"case_id": ..., ...}, ...]}
    tasks/<game>/manifest.json        provenance and the SHA-256 of every gt and media file
    tasks/<game>/gt/<case_id>.json    ground truth (scorer only)
    <media root>/<game>/media/<case_id>.mp4   the rendered match (the media root is the tasks root
                                      unless --media-root / $VA_MEDIA_ROOT says otherwise)

Every reader and writer of the tree (the case builder, import-cases, make-harbor, validate, publish,
the scorer, the explorer, the baselines, the game plugins' reports) takes these paths from
`TasksTree`, reads the tree's JSON with a bound (`read_tree_json`, `TasksTree.read_manifest`) and
writes it through `tree_json` + `write_tree_file` (stable bytes, atomic).  `resolve()` is one listed
case; `TasksTree` also knows the files of a case that is not listed yet (a build, an import).
"""
from __future__ import annotations

import json
import math
import os
import re
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from os import PathLike
from pathlib import Path
from typing import Any

from video_arena import paths
from video_arena.safe_io import MAX_RECORD_BYTES, read_json_object

#: Anchored with \A and \Z ("$" also matches before a final newline, so "Fx7kQ2aB\n" would pass):
#: .match() and .fullmatch() both take an id only whole.
CASE_ID_RE = re.compile(r"\A[A-Za-z0-9]{8}\Z")
GAME_RE = re.compile(r"\A[a-z0-9][a-z0-9_]*\Z")
#: The answer file's contract (docs/ARCHITECTURE.md, "Answer file"): its root key, a row's six fields, the
#: delta labels.  The package's owner; the judge (judge/judge.py, standalone: stdlib only, copied into every
#: Harbor task) keeps its own copy as ROOT_KEY, ROW_FIELDS and DELTA_LABELS, held equal by
#: tests/unit/test_contracts.py.
ANSWER_ROOT_KEY = "events"
DELTA_LABELS = ("up", "down", "flat")
ROW_FIELDS = ("t", "type", "actor", "where", "delta", "state")
#: A ground truth's `format` key (tasks/<game>/gt/<case_id>.json, written by the case builder and
#: import-cases); the judge's copy is its GT_FORMAT, held equal by tests/unit/test_contracts.py.
GT_FORMAT = "video-arena-gt/1"
#: The key a game's version goes under in every document that records it (manifest, ground truth, Harbor
#: task metadata, case.json, run record; GameDefinition.version), and the largest version a reader takes.
GAME_VERSION_KEY = "game_version"
MAX_GAME_VERSION = 10 ** 6
#: A ground truth keeps V_t (v_before, v_after, v_series) to this many decimals; delta and state are of those values.
VALUE_DECIMALS = 4


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
    #: `[events] where_pattern`: (type or "*", regular expression a whole `where` of that type matches)
    where_patterns: tuple[tuple[str, str], ...] = ()
    #: `[events] where_order`: a `where` is a multiset of these characters written in this order ("" = no rule)
    where_order: str = ""
    #: `[events] where_max_repeats`: (character or "*", how often it may occur in one `where`)
    where_max_repeats: tuple[tuple[str, int], ...] = ()
    #: `[baselines] events_per_minute`: the chance and majority agents' rows per minute (None = not declared)
    baseline_events_per_minute: float | None = None
    #: `[value] not_in_picture`: what V_t depends on that the video does not show ("" = not stated)
    value_not_in_picture: str = ""
    #: `[baselines] chance_where`: the parts whose product (one string of each, in order) is the chance agent's
    #: `where` table (() = none)
    chance_where: tuple[tuple[str, ...], ...] = ()
    #: `[audit] match_sites`: host names (optionally with a path) where this game's matches can be looked up
    match_sites: tuple[str, ...] = ()
    #: `[import] record_formats`: (format, what such a file is): match files the game's plugin makes a case of
    record_formats: tuple[tuple[str, str], ...] = ()
    #: `version`: the definition's version (an integer >= 1; a game.toml without the key is version 1), raised
    #: whenever a change alters what a case of the game means (vocabulary, V_t, band, `where` rules).  It is
    #: stamped into the game's manifest, every ground truth, every Harbor task's metadata and every run record
    #: (`game_version`), and `video-arena score` refuses a table mixing two versions of one game.
    version: int = 1
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def state_labels(self) -> tuple[str, str, str]:
        return (self.state_above, self.state_below, self.state_even)

    def where_pattern(self, etype: str) -> str | None:
        """The regular expression a whole `where` of type `etype` must match (the type's own, else the
        game's "*"), or None when the definition gives none."""
        rules = dict(self.where_patterns)
        return rules.get(etype, rules.get("*"))

    def where_max_repeat(self, char: str) -> int | None:
        limits = dict(self.where_max_repeats)
        return limits.get(char, limits.get("*"))

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


def _where_patterns(declared: Any) -> tuple[tuple[str, str], ...]:
    if declared is None:
        return ()
    if isinstance(declared, str):
        return (("*", declared),)
    if isinstance(declared, dict) and all(isinstance(v, str) for v in declared.values()):
        return tuple((str(k), v) for k, v in declared.items())
    raise TypeError("[events] where_pattern must be a regular expression or a table type -> regular expression")


def _max_repeats(declared: Any) -> tuple[tuple[str, int], ...]:
    if declared is None:
        return ()
    if isinstance(declared, dict) and all(type(v) is int and v >= 1 for v in declared.values()):
        return tuple((str(k), v) for k, v in declared.items())
    raise TypeError("[events] where_max_repeats must be a table character -> count (an integer >= 1)")


def _rate(declared: Any) -> float | None:
    if declared is None:
        return None
    if type(declared) not in (int, float) or not math.isfinite(declared) or declared < 0:
        raise ValueError(f"[baselines] events_per_minute must be a number >= 0, got {declared!r}")
    return float(declared)


def _text(declared: Any, what: str) -> str:
    if declared is None:
        return ""
    if not isinstance(declared, str):
        raise TypeError(f"{what} must be a text")
    return declared


def _chance_where(declared: Any) -> tuple[tuple[str, ...], ...]:
    if declared is None:
        return ()
    parts = []
    for part in declared if isinstance(declared, list) else [None]:
        values = list(part) if isinstance(part, str) else part
        if not (isinstance(values, list) and values and all(isinstance(v, str) and v and v.strip() == v for v in values)):
            raise TypeError("[baselines] chance_where must be a list of parts, each a string of characters or a list "
                            "of non-empty strings")
        parts.append(tuple(values))
    return tuple(parts)


def _formats(declared: Any) -> tuple[tuple[str, str], ...]:
    if declared is None:
        return ()
    if isinstance(declared, dict) and all(isinstance(v, str) and re.fullmatch(r"[a-z][a-z0-9-]*", str(k))
                                          for k, v in declared.items()):
        return tuple((str(k), " ".join(v.split())) for k, v in declared.items())
    raise TypeError("[import] record_formats must be a table format (lower-case letters, digits, -) -> text")


def _version(declared: Any) -> int:
    if declared is None:
        return 1
    if type(declared) is not int or not 1 <= declared <= MAX_GAME_VERSION:
        raise ValueError(f"version must be an integer from 1 to {MAX_GAME_VERSION}, got {declared!r}")
    return declared


def _strings(declared: Any, what: str) -> tuple[str, ...]:
    if declared is None:
        return ()
    if isinstance(declared, list) and all(isinstance(v, str) and v.strip() == v and v for v in declared):
        return tuple(declared)
    raise TypeError(f"{what} must be a list of non-empty, trimmed strings")


def parse_game_toml(text: str, source: str = "game.toml") -> GameDefinition:
    try:
        raw = tomllib.loads(text)
        ev, val = raw["events"], raw["value"]
        base = raw.get("baselines", {})
        order = ev.get("where_order", "")
        if not isinstance(order, str):
            raise TypeError("[events] where_order must be a string of characters")
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
            where_patterns=_where_patterns(ev.get("where_pattern")),
            where_order=order,
            where_max_repeats=_max_repeats(ev.get("where_max_repeats")),
            baseline_events_per_minute=_rate(base.get("events_per_minute")),
            chance_where=_chance_where(base.get("chance_where")),
            value_not_in_picture=" ".join(_text(val.get("not_in_picture"), "[value] not_in_picture").split()),
            match_sites=_strings(raw.get("audit", {}).get("match_sites"), "[audit] match_sites"),
            record_formats=_formats(raw.get("import", {}).get("record_formats")),
            version=_version(raw.get("version")),
            raw=raw,
        )
    except (KeyError, TypeError, ValueError, AttributeError, tomllib.TOMLDecodeError) as exc:
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
    unknown = {t for t, _ in gd.where_patterns} - set(gd.event_types) - {"*"}
    if unknown:
        raise TasksTreeError(f"{source}: where_pattern names unknown types {sorted(unknown)}")
    for t, pattern in gd.where_patterns:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise TasksTreeError(f"{source}: where_pattern for {t!r} is not a regular expression: {exc}") from None
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
    path = _game_dir(root, game) / CASES_FILE
    if not path.is_file():
        return []
    doc, err = read_json_object(path, MAX_TREE_JSON_BYTES)
    if doc is None:
        raise TasksTreeError(f"{path}: malformed cases file: {err}")
    try:
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
    hand it to a model), `media`, `case` (its cases.json entry), `game`, `case_id`, `tasks_root` and
    `game_version` (the tree's definition's, which a runner records).
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
    tree = TasksTree(root, paths.media_root(root, media_root))
    return {
        "game": game,
        "case_id": case_id,
        GAME_VERSION_KEY: load_game(game, root).version,
        "tasks_root": root,
        "game_dir": gdir,
        "game_toml": gdir / "game.toml",
        "instruction": gdir / "instruction.md",
        "answer_seed": gdir / "answer_seed.json",
        "gt": tree.gt(game, case_id),
        "media": tree.media(game, case_id),
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


# --------------------------------------------------------------------------------------------------
# where the files are, the manifests, how the tree's JSON is read and written
# --------------------------------------------------------------------------------------------------
CASES_FILE = "cases.json"
MANIFEST_FILE = "manifest.json"
MANIFEST_FORMAT = "video-arena-cases-manifest/1"
#: Every JSON file of the tree is read with this bound (the results contract's: far above any real one)
#: but a ground truth, which holds the whole match record: MAX_GT_BYTES.
MAX_TREE_JSON_BYTES = MAX_RECORD_BYTES
MAX_GT_BYTES = 1 << 28


def gt_rel(game: str, case_id: str) -> str:
    """`<game>/gt/<case_id>.json`: a ground truth's name inside a tasks tree (messages, datasets)."""
    return f"{game}/gt/{case_id}.json"


def media_rel(game: str, case_id: str) -> str:
    """`<game>/media/<case_id>.mp4`: a video's name inside a media root (compose mounts, messages)."""
    return f"{game}/media/{case_id}.mp4"


def tree_json(doc: Any) -> bytes:
    """The one serialization of every JSON file the tree holds (ground truth, cases.json, manifests):
    stable bytes for the same document."""
    return (json.dumps(doc, indent=1, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")


def write_tree_file(path: Path, data: bytes) -> bool:
    """Write a file of the tree atomically (a temporary file beside it, then rename), only when its bytes
    change; True when it was written."""
    path = Path(path)
    if path.is_file() and path.read_bytes() == data:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return True


_MISSING = object()


def read_tree_json(path: Path, default: Any = _MISSING, cap: int = MAX_TREE_JSON_BYTES) -> Any:
    """A JSON object of the tree, read with a bound (a FIFO, a device, a symlink or a file larger than
    `cap` is refused, never read whole); `default` when the file does not exist (without one:
    TasksTreeError); TasksTreeError when it is not a JSON object."""
    path = Path(path)
    if default is not _MISSING and not (path.exists() or path.is_symlink()):
        return default
    doc, err = read_json_object(path, cap)
    if doc is None:
        raise TasksTreeError(f"{path}: {err}")
    return doc


@dataclass(frozen=True)
class TasksTree:
    """Where the files of a tasks tree (and its media root: the tree itself unless given) are: the one
    place that spells gt/, media/, cases.json and manifest.json.  A staging copy of a tree has the same
    layout (import-cases)."""

    root: Path
    media_root: Path = None  # type: ignore[assignment]  # the tree itself

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root))
        object.__setattr__(self, "media_root", Path(self.media_root) if self.media_root is not None else self.root)

    @classmethod
    def at(cls, tasks_root: str | PathLike | None = None, media_root: str | PathLike | None = None) -> "TasksTree":
        """The tree an explicit argument, $VA_TASKS_ROOT or the checkout names, and its media root."""
        root = paths.tasks_root(tasks_root)
        return cls(root, paths.media_root(root, media_root))

    def game_dir(self, game: str) -> Path:
        return self.root / game

    def gt_dir(self, game: str) -> Path:
        return self.root / game / "gt"

    def gt(self, game: str, case_id: str) -> Path:
        return self.root / gt_rel(game, case_id)

    def read_gt(self, game: str, case_id: str, default: Any = _MISSING) -> Any:
        """A ground truth as a document (bounded: MAX_GT_BYTES); the judge's load_gt validates one."""
        return read_tree_json(self.gt(game, case_id), default, MAX_GT_BYTES)

    def gt_files(self, game: str) -> list[Path]:
        """The game's ground-truth files, listed or not, in name order."""
        return sorted(self.gt_dir(game).glob("*.json"))

    def media_dir(self, game: str) -> Path:
        return self.media(game, "x").parent

    def media(self, game: str, case_id: str) -> Path:
        return self.media_root / media_rel(game, case_id)

    def cases_path(self, game: str) -> Path:
        return self.root / game / CASES_FILE

    def listed_case_ids(self, game: str) -> list[str]:
        """The case ids the game's cases.json lists, in its order ([] when it has none yet; read with a
        bound; load_cases() checks each entry)."""
        path = self.cases_path(game)
        cases = read_tree_json(path, {"cases": []}).get("cases")
        if not isinstance(cases, list):
            raise TasksTreeError(f"{path}: malformed cases file: 'cases' is not a list")
        return [c.get("case_id") for c in cases if isinstance(c, dict)]

    def manifest_path(self, game: str) -> Path:
        return self.root / game / MANIFEST_FILE

    def read_manifest(self, game: str) -> dict[str, Any] | None:
        """The game's manifest.json (read with a bound), None when it has none; TasksTreeError when it is
        not a manifest (unreadable, too large, not an object, its `cases` not a list of objects)."""
        path = self.manifest_path(game)
        doc = read_tree_json(path, None)
        if doc is None:
            return None
        cases = doc.get("cases") or []
        if not isinstance(cases, list) or not all(isinstance(c, dict) for c in cases):
            raise TasksTreeError(f"{path}: `cases` is not a list of objects")
        return doc

    def manifest_cases(self, game: str) -> dict[str, dict[str, Any]]:
        """The manifest's entries by case id ({} without a manifest)."""
        doc = self.read_manifest(game) or {}
        return {str(c.get("case_id")): c for c in doc.get("cases") or []}

    def write_manifest(self, game: str, doc: dict[str, Any]) -> bool:
        """Write the game's manifest.json (tree_json bytes, atomic, only when they change).  The document
        is the writer's (the case builder's, import-cases'); its format, game and case count must hold."""
        cases = doc.get("cases")
        if doc.get("format") != MANIFEST_FORMAT or doc.get("game") != game or not isinstance(cases, list) \
                or doc.get("n_cases", len(cases)) != len(cases):
            raise TasksTreeError(f"not a {MANIFEST_FORMAT} manifest of {game} with n_cases = its cases")
        return write_tree_file(self.manifest_path(game), tree_json(doc))


def manifest_cases(game: str, tasks_root: str | PathLike | None = None) -> dict[str, dict[str, Any]] | None:
    """{case_id: the manifest's case entry} of tasks/<game>/manifest.json (TasksTree.read_manifest: read
    with a bound, never through a link or blocking); None when the game has no manifest.  A manifest that
    is not one (not a JSON object, `cases` not a list of objects) is a TasksTreeError, never skipped."""
    doc = TasksTree(paths.tasks_root(tasks_root)).read_manifest(str(game))
    return None if doc is None else {str(c.get("case_id")): c for c in doc.get("cases") or []}


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
