"""The coordinate rule of each game's `where`, as a checkable pattern (game.toml states it in prose).

`where_error(definition, type, where)` returns None when `where` fits the game's rule for that event
type, else a one-line reason. Types in `types_without_where` must have `where == ""`. Matching is
case-insensitive (the judge compares lower-cased labels); the value is stored as given.

A game that is not in WHERE_RULES may declare its own rule in game.toml, `[events] where_pattern`:
one regular expression for every type with a where, or a table type -> regular expression.
"""
from __future__ import annotations

import re
from typing import Any

from video_arena.core.tasks import GameDefinition

_SQUARE8 = r"[a-h][1-8]"
_DOUDIZHU_ORDER = "3456789tjqka2br"

#: game -> {type or "*": regular expression the whole where must match}
WHERE_RULES: dict[str, dict[str, str]] = {
    "chess": {"*": _SQUARE8, "castle": r"[gc][18]"},
    "go": {"*": r"[a-hj-t](?:1[0-9]|[1-9])"},
    "gomoku": {"*": r"[a-hj-p](?:1[0-5]|[1-9])"},
    "doudizhu": {"*": r"[3-9tjqka2br]+"},  # plus the rank order and counts, checked below
    "cs2": {"*": r"[ab]"},
    "dota2": {"tower": r"(?:top|mid|bot)_t[123]|base_t4", "barracks": r"(?:top|mid|bot)_(?:melee|ranged)"},
    "sc2": {"*": _SQUARE8},
    "gfootball": {"*": r"[1-6][a-c]"},
    "badminton": {"winner": r"front|mid|back", "error": r"net|out"},
}


class NoWhereRule(LookupError):
    pass


def rule_for(definition: GameDefinition, etype: str) -> str:
    rules = WHERE_RULES.get(definition.name)
    if rules is None:
        declared: Any = definition.raw.get("events", {}).get("where_pattern")
        if isinstance(declared, str):
            rules = {"*": declared}
        elif isinstance(declared, dict):
            rules = {str(k): str(v) for k, v in declared.items()}
        else:
            raise NoWhereRule(f"game {definition.name!r} has no coordinate rule the importer can check: "
                              f"add `where_pattern` to [events] in its game.toml (docs/IMPORTING.md)")
    pattern = rules.get(etype, rules.get("*"))
    if pattern is None:
        raise NoWhereRule(f"game {definition.name!r}: no coordinate rule for type {etype!r}")
    return pattern


def where_error(definition: GameDefinition, etype: str, where: str) -> str | None:
    if etype in definition.types_without_where:
        return None if where == "" else f"type {etype!r} has no where (it must be empty), got {where!r}"
    if where == "":
        return f"type {etype!r} needs a where ({' '.join(definition.where_convention.split())})"
    pattern = rule_for(definition, etype)
    w = where.lower()
    if not re.fullmatch(pattern, w):
        return f"where {where!r} does not fit the {definition.name} rule for {etype!r} (pattern {pattern})"
    if definition.name == "doudizhu":
        return _doudizhu_error(w)
    return None


def _doudizhu_error(w: str) -> str | None:
    ranks = [_DOUDIZHU_ORDER.index(c) for c in w]
    if ranks != sorted(ranks):
        return f"where {w.upper()!r}: ranks must run from low to high (3..9 T J Q K A 2 B R)"
    for c in set(w):
        limit = 1 if c in "br" else 4
        if w.count(c) > limit:
            return f"where {w.upper()!r}: more than {limit} card(s) of rank {c.upper()!r}"
    return None
