"""Contamination, said out loud: which cases are public matches and which are a user's own.

The built-in cases are famous public matches a model trained on the web may have seen move by move; a
case a user imports from a record of their own is private.  Three rules, the same for every game (the
game's plugin only says what a match's identity is, `match_key`, and which matches its V_t model was
fitted on, `fitting_keys`):

- a record whose match key is a built-in case's (the keys of the project's own tasks/<game>/gt/*.json
  records, through the same `match_key`) is imported but flagged: its manifest entry says
  `"public_match": "<built-in case id>"`, and `validate` and `score` name it;
- a record whose match key is in the game's `fitting_keys()` is refused (a model is not scored on its own
  training data);
- `score` says per game whether a table's cases are built-in (public), imported (private) or mixed
  (video_arena/core/case_origins.py, which the readers use: no reader imports this module).
"""
from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from video_arena import paths
from video_arena.core.case_origins import IMPORTED, PUBLIC_MATCH
from video_arena.core.tasks import MAX_GT_BYTES, TasksTree, read_tree_json
from video_arena.games.base import game_files, game_names, load_plugin
from video_arena.digests import sha256_file, sha256_text
from video_arena.safe_io import read_json_object, write_json_atomic

#: The built-in cases' match keys, computed once per state of their ground truth and the game's code:
#: <checkout>/.cache/contamination/<game>.json, {"stamp": ..., "keys": {key: case id}} (a key can take a
#: plugin a few seconds over 20 cases: gfootball decodes every recorded state).
MAX_KEYS_CACHE_BYTES = 1 << 20


def keys_cache_path(game: str):
    return paths.REPO_ROOT / ".cache" / "contamination" / f"{game}.json"



@lru_cache(maxsize=16)
def builtin_match_keys(game: str) -> dict[str, str]:
    """{match key: built-in case id} of the game's built-in cases (the project's tasks/<game>/: every case its
    cases.json lists that is not itself imported), through the plugin's `match_key`; {} for a game without a
    plugin or without built-in cases.  Kept in the checkout's cache under a stamp of every listed case's ground
    truth (its SHA-256) and the game's code and data (`game_files`): any change there computes them again."""

    if game not in game_names():
        return {}
    plugin = load_plugin(game)
    tree = TasksTree(paths.default_tasks_root())
    if plugin is None or not tree.cases_path(game).is_file():
        return {}
    ids = tree.listed_case_ids(game)
    gts = {cid: tree.gt(game, cid) for cid in ids}
    stamp = sha256_text(json.dumps({"cases": {cid: sha256_file(p) if p.is_file() else None for cid, p in gts.items()},
                                    "code": [sha256_file(f) for f in game_files(game)]}, sort_keys=True))
    cache = keys_cache_path(game)
    cached = _read_keys_cache(cache)
    if cached is not None and cached.get("stamp") == stamp:
        return dict(cached["keys"])
    out: dict[str, str] = {}
    for cid, path in gts.items():
        gt = read_tree_json(path, None, MAX_GT_BYTES)
        record = gt.get("record") if isinstance(gt, dict) else None
        if not isinstance(record, dict) or record.get("source", {}).get("collection") == IMPORTED:
            continue
        out.setdefault(plugin.match_key(record), cid)
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(cache, {"stamp": stamp, "keys": out})
    except OSError:
        pass        # a read-only checkout computes them each time
    return out


def _read_keys_cache(path) -> dict[str, Any] | None:
    """The cache file when it is a bounded JSON object of the right shape, read through no link, else None
    (computed again)."""
    doc, _ = read_json_object(path, MAX_KEYS_CACHE_BYTES)
    keys = doc.get("keys") if doc is not None else None
    if not isinstance(keys, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in keys.items()):
        return None
    return doc


def fitting_refusal(plugin: Any, record: dict[str, Any], key: str | None = None) -> str:
    """One line when the record is a match the game's shipped V_t model was fitted on, else ""."""
    key = plugin.match_key(record) if key is None else key
    if key in plugin.fitting_keys():
        return (f"{record_label(record)}: the match is in the V_t model's fitting set ({plugin.name}'s shipped model): "
                "a model is not scored on its own training data")
    return ""


def public_match(plugin: Any, record: dict[str, Any], key: str | None = None) -> str | None:
    """The id of the built-in case that is the same match as the record, or None."""
    key = plugin.match_key(record) if key is None else key
    return builtin_match_keys(plugin.name).get(key)


def record_label(record: dict[str, Any]) -> str:
    """How a one-line message names a record: its file (and game number in a file of many), else its id."""
    src = record.get("source", {}) if isinstance(record, dict) else {}
    name = src.get("file") or ", ".join(f.get("name", "") for f in src.get("record_files", []) if isinstance(f, dict))
    name = name or src.get("folder") or src.get("id") or "the record"
    return f"{name} game {src['game']}" if "game" in src else str(name)
