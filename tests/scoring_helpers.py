"""Shared data of the scorer tests (native results folders and Harbor jobs): four chess truth
events and the answers built from them, whose scores are known exactly."""
from __future__ import annotations

import json
from pathlib import Path

from video_arena.paths import REPO_ROOT

SPEC = {"game": "chess", "sides": ["white", "black"],
        "event_types": ["move", "capture", "castle", "promotion", "check", "checkmate"],
        "delta_labels": ["up", "down", "flat"], "state_labels": ["white", "black", "even"], "band": 0.05}
GAME_TOML = (REPO_ROOT / "video_arena" / "games" / "chess" / "game.toml").read_text(encoding="utf-8")

EVENTS = [
    {"t": 10.0, "type": "move", "actor": "white", "where": "e4", "delta": "flat", "state": "even", "v_before": 0.5, "v_after": 0.52},
    {"t": 20.0, "type": "move", "actor": "black", "where": "e5", "delta": "flat", "state": "even", "v_before": 0.52, "v_after": 0.5},
    {"t": 30.0, "type": "capture", "actor": "white", "where": "d5", "delta": "up", "state": "white", "v_before": 0.5, "v_after": 0.7},
    {"t": 40.0, "type": "check", "actor": "black", "where": "b4", "delta": "down", "state": "black", "v_before": 0.7, "v_after": 0.3},
]
FIELDS = ("t", "type", "actor", "where", "delta", "state")


def gt_doc(game: str, case_id: str) -> dict:
    return {"format": "video-arena-gt/1", "game": game, "case_id": case_id, "spec": dict(SPEC, game=game),
            "duration_s": 50.0, "events": EVENTS, "v_series": [[0.0, 0.5]] + [[e["t"], e["v_after"]] for e in EVENTS],
            "v_definition": "test", "record": {}}


def make_tasks(root: Path, games: dict[str, int]) -> dict[str, list[str]]:
    """A tasks tree with `n` cases per game (ids like ChCase00), each with the four-event ground truth."""
    ids = {}
    for game, n in games.items():
        d = root / game
        (d / "gt").mkdir(parents=True)
        (d / "game.toml").write_text(GAME_TOML.replace('name = "chess"', f'name = "{game}"'), encoding="utf-8")
        ids[game] = [f"{game[:2].title()}Case{i:02d}"[:8].ljust(8, "x") for i in range(n)]
        (d / "cases.json").write_text(json.dumps({"game": game, "cases": [{"case_id": c} for c in ids[game]]}))
        for c in ids[game]:
            (d / "gt" / f"{c}.json").write_text(json.dumps(gt_doc(game, c)))
    return ids
