"""An OpenDota match file as a DOTA 2 case's record (`video-arena import-cases --game dota2 --opendota MATCH.json`).

A file is one OpenDota match object, as `https://api.opendota.com/api/matches/<id>` returns it for a parsed
match.  It may also come in parts (odota/core keeps a match's parser output, `<id>_parsed.json`, apart from
the match result the Steam API gave, `<id>_api.json`): several files are merged key by key, the players by
`player_slot`, and a key two files both give must have the same value.  The merged object is taken to the
subset the cases use (match.subset), or refused with one line naming what is missing.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from video_arena.digests import sha256_bytes
from video_arena.games.dota2.match import MatchError, record_of, subset
from video_arena.safe_io import JSONLimitError, loads_bounded, read_bounded

#: Largest match file read (a whole parsed match is a few MB).
MAX_BYTES = 64 * 1024 * 1024
COLLECTION = "opendota"


def read_json_file(path: Path) -> tuple[Any, str]:
    """(the JSON value, its SHA-256) of a regular file of at most MAX_BYTES reached through no symbolic link,
    nested and numbered within safe_io's JSON bounds; never blocks on a FIFO or reads a device."""
    try:
        data, size = read_bounded(path, MAX_BYTES)
    except OSError as exc:
        why = ("a symbolic link (a match file is read as a regular file only)" if Path(path).is_symlink()
               else exc.strerror or str(exc))
        raise MatchError(f"{path}: cannot be read ({why})") from None
    if size > MAX_BYTES:
        raise MatchError(f"{path}: {size} bytes, more than the {MAX_BYTES} a match file may have")
    try:
        return loads_bounded(data), sha256_bytes(data)
    except JSONLimitError as exc:
        raise MatchError(f"{path}: {exc}") from None


def merged(parts: list[tuple[str, Any]]) -> dict[str, Any]:
    """One match object from its parts (name, object): keys merged, players by player_slot."""
    out: dict[str, Any] = {}
    players: dict[Any, dict[str, Any]] = {}
    seen: dict[str, str] = {}
    for name, obj in parts:
        if not isinstance(obj, dict):
            raise MatchError(f"{name}: an OpenDota match is a JSON object")
        for key, value in obj.items():
            if key == "players" and isinstance(value, list):
                for k, p in enumerate(value):
                    if not isinstance(p, dict) or "player_slot" not in p:
                        raise MatchError(f"{name}: players[{k}] has no player_slot")
                    mine = players.setdefault(json.dumps(p["player_slot"]), {})
                    for pk, pv in p.items():
                        if pk in mine and mine[pk] != pv:
                            raise MatchError(f"{name} and the file before disagree on players[{k}].{pk}")
                        mine[pk] = pv
                continue
            if key in out and out[key] != value:
                raise MatchError(f"{name} and {seen[key]} disagree on {key!r}")
            out[key], seen[key] = value, name
    if players:
        out["players"] = list(players.values())
    return out


def record_from_files(paths: list[Path]) -> dict[str, Any]:
    """The case record (match.record_of) of one OpenDota match given as one file or its parts."""
    read = [(Path(p), *read_json_file(Path(p))) for p in paths]
    try:
        match = subset(merged([(p.name, obj) for p, obj, _ in read]))
    except MatchError as exc:
        names = " + ".join(p.name for p, _, _ in read)
        raise MatchError(f"{names}: {exc}") from None
    source = {"collection": COLLECTION, "id": f"opendota-{match['match_id']}", "match_id": match["match_id"],
              "record_files": [{"name": p.name, "sha256": sha} for p, _, sha in read]}
    return record_of(match, source)
