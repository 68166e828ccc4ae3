"""Google Research Football's V_t model: the goal-rate model fitted by calibrate.py (data/goal_model.json) and
left's expected result when the goals still to come are independent Poisson at its rate."""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

GOAL_MODEL = Path(__file__).resolve().parent / "data" / "goal_model.json"


class GFootballError(RuntimeError):
    """The gfootball engine or its fitted model cannot do what was asked (one line for the user)."""


def load_goal_model() -> dict[str, Any]:
    if not GOAL_MODEL.is_file():
        raise GFootballError(f"{GOAL_MODEL} is missing: run `python -m video_arena.games.gfootball.calibrate`")
    return json.loads(GOAL_MODEL.read_text(encoding="utf-8"))


def equal_rate(model: dict[str, Any]) -> float:
    """Goals per engine step of either team at equal strength: exp(a) of the goal-rate model (V_t's rate for both
    teams: the picture does not show the AI difficulties that b weighs)."""
    return math.exp(float(model["a"]))


def _poisson(mu: float, kmax: int) -> list[float]:
    p = [math.exp(-mu)]
    for k in range(1, kmax + 1):
        p.append(p[-1] * mu / k)
    return p


def expected_result(goal_diff: int, steps_left: int, rate_left: float, rate_right: float) -> float:
    """Left's expected result (win 1, draw 0.5) when the goals still to come are independent Poisson."""
    if steps_left <= 0:
        return 1.0 if goal_diff > 0 else 0.0 if goal_diff < 0 else 0.5
    kmax = 25
    pl, pr = _poisson(rate_left * steps_left, kmax), _poisson(rate_right * steps_left, kmax)
    win = draw = 0.0
    for i, a in enumerate(pl):
        for j, b in enumerate(pr):
            d = goal_diff + i - j
            if d > 0:
                win += a * b
            elif d == 0:
                draw += a * b
    return min(1.0, max(0.0, win + 0.5 * draw))
