"""The coordinate rule of each game's `where`, as a checkable pattern (game.toml states it in prose).

`where_error(definition, type, where)` returns None when `where` fits the game's rule for that event
type, else a one-line reason. Types in `types_without_where` must have `where == ""`. Matching is
case-insensitive (the judge compares lower-cased labels); the value is stored as given.

Every rule is the game's own, declared in its game.toml (docs/ADDING_A_GAME.md): `[events]
where_pattern` (one regular expression for every type with a where, or a table type -> regular
expression), and for a `where` that is a multiset of symbols (cards), `where_order` (the symbols,
low to high: a where lists them in that order) and `where_max_repeats` (symbol or "*" -> how often
one may occur).
"""
from __future__ import annotations

import re

from video_arena.core.tasks import GameDefinition


class NoWhereRule(LookupError):
    pass


def rule_for(definition: GameDefinition, etype: str) -> str:
    if not definition.where_patterns:
        raise NoWhereRule(f"game {definition.name!r} has no coordinate rule the importer can check: "
                          f"add `where_pattern` to [events] in its game.toml (docs/IMPORTING.md)")
    pattern = definition.where_pattern(etype)
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
    return _multiset_error(definition, w)


def _multiset_error(definition: GameDefinition, w: str) -> str | None:
    order = definition.where_order.lower()
    if order:
        ranks = [order.index(c) for c in w if c in order]
        if len(ranks) != len(w) or ranks != sorted(ranks):
            return f"where {w.upper()!r}: symbols must run from low to high ({' '.join(order.upper())})"
    for c in sorted(set(w)):
        limit = definition.where_max_repeat(c)
        if limit is not None and w.count(c) > limit:
            return f"where {w.upper()!r}: more than {limit} of {c.upper()!r}"
    return None
