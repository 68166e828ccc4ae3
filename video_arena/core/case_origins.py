"""Which cases of a tasks tree are public matches and which are a user's own (the readers' side of
video_arena/importing/contamination.py: `score` and `validate` read it; nothing here runs a plugin).

A case whose cases.json source collection is not "imported" is a built-in case: a famous public match. An
imported case is private unless its manifest entry names `public_match` (the built-in case whose match it
is, found when it was imported).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from video_arena.core.tasks import TasksTree, TasksTreeError, read_tree_json

#: The manifest entry's key naming the built-in case an imported case is the same match as.
PUBLIC_MATCH = "public_match"
IMPORTED = "imported"

#: What a table's cases are (`origin_summary`): all public matches (built-in cases, or imported records of
#: built-in matches), all private (imported records of no built-in match), or both.
PUBLIC, PRIVATE, MIXED = "public", "private", "mixed"


def public_warning(game: str, case_id: str, builtin_id: str) -> str:
    return (f"{game}/{case_id} is the same match as the built-in case {game}/{builtin_id}: a public match a "
            "model may have seen, not a private case")


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
