"""Shared data of the scorer tests (native results folders and Harbor jobs): four chess truth
events and the answers built from them, whose scores are known exactly."""
from __future__ import annotations

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
