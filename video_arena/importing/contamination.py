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
  (`case_origins`).
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from video_arena import paths
from video_arena.core.tasks import MAX_GT_BYTES, TasksTree, TasksTreeError, read_tree_json

#: The manifest entry's key naming the built-in case an imported case is the same match as.
PUBLIC_MATCH = "public_match"
IMPORTED = "imported"

#: What a table's cases are (`origin_summary`): all public matches (built-in cases, or imported records of
#: built-in matches), all private (imported records of no built-in match), or both.
PUBLIC, PRIVATE, MIXED = "public", "private", "mixed"


@lru_cache(maxsize=16)
def builtin_match_keys(game: str) -> dict[str, str]:
    """{match key: built-in case id} of the game's built-in cases (the project's tasks/<game>/: every case its
    cases.json lists that is not itself imported), through the plugin's `match_key`; {} for a game without a
    plugin or without built-in cases."""
    from video_arena.games.base import game_names, load_plugin

    if game not in game_names():
        return {}
    plugin = load_plugin(game)
    tree = TasksTree(paths.default_tasks_root())
    if plugin is None or not tree.cases_path(game).is_file():
        return {}
    out: dict[str, str] = {}
    for cid in tree.listed_case_ids(game):
        gt = read_tree_json(tree.gt(game, cid), None, MAX_GT_BYTES)
        record = gt.get("record") if isinstance(gt, dict) else None
        if not isinstance(record, dict) or record.get("source", {}).get("collection") == IMPORTED:
            continue
        out.setdefault(plugin.match_key(record), cid)
    return out


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


def public_warning(game: str, case_id: str, builtin_id: str) -> str:
    return (f"{game}/{case_id} is the same match as the built-in case {game}/{builtin_id}: a public match a "
            "model may have seen, not a private case")


# -- a tasks tree: which of its cases are public --------------------------------------------------------

def case_origins(tasks_root: Path, game: str) -> dict[str, str]:
    """{case id: "built-in", "imported" or "public:<built-in id>"} for the cases the tree's cases.json of the
    game lists: imported cases are those whose source collection is "imported"; an imported case whose
    manifest entry names a `public_match` is a public one."""
    tree = TasksTree(tasks_root)
    try:
        cases = read_tree_json(tree.cases_path(game), {"cases": []}).get("cases") or []
        entries = tree.manifest_cases(game)
    except (TasksTreeError, ValueError, AttributeError):
        return {}
    out: dict[str, str] = {}
    for c in cases:
        if not isinstance(c, dict) or not isinstance(c.get("case_id"), str):
            continue
        cid = c["case_id"]
        source = c.get("source") if isinstance(c.get("source"), dict) else {}
        public = entries.get(cid, {}).get(PUBLIC_MATCH)
        if source.get("collection") != IMPORTED:
            out[cid] = "built-in"
        elif isinstance(public, str) and public:
            out[cid] = f"public:{public}"
        else:
            out[cid] = "imported"
    return out


def origin_summary(origins: dict[str, str]) -> dict[str, Any]:
    """What a table of these cases is: `kind` public (built-in cases or built-in matches), private (imported,
    no built-in match) or mixed, the counts, and the imported cases that are built-in matches."""
    n_builtin = sum(1 for o in origins.values() if o == "built-in")
    public = {cid: o.split(":", 1)[1] for cid, o in origins.items() if o.startswith("public:")}
    n_private = sum(1 for o in origins.values() if o == "imported")
    n_public = n_builtin + len(public)
    kind = PRIVATE if n_private and not n_public else PUBLIC if n_public and not n_private else MIXED if origins else "-"
    return {"kind": kind, "n_builtin": n_builtin, "n_imported": n_private + len(public),
            "n_public_imported": len(public), "public_matches": public}


def origin_line(game: str, summary: dict[str, Any]) -> str:
    """One line under a score table: what the game's cases are."""
    s = summary
    parts = []
    if s["n_builtin"]:
        parts.append(f"{s['n_builtin']} built-in (public)")
    if s["n_imported"] - s["n_public_imported"]:
        parts.append(f"{s['n_imported'] - s['n_public_imported']} imported (private)")
    if s["n_public_imported"]:
        named = ", ".join(f"{game}/{c} = built-in {game}/{b}" for c, b in sorted(s["public_matches"].items())[:3])
        more = f", {s['n_public_imported'] - 3} more" if s["n_public_imported"] > 3 else ""
        parts.append(f"{s['n_public_imported']} imported but the same match as a built-in case (public: {named}{more})")
    return f"{game}: {s['kind']} ({'; '.join(parts) or 'no cases'})"
