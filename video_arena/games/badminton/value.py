"""V_t for badminton: player_a's probability of winning the match, computed exactly.

A Markov model of rally scoring over the rest of the match: each rally is won by the server with that
player's serve-win rate (fitted on every rally of the match: rallies the player served and won over rallies
the player served); 21 points a game, two clear, capped at 30 (29-29: the next point wins); best of three;
the rally winner serves the next rally and the game winner the first rally of the next game.  The value of a
state (games won, points in the game, server) is a memoised recursion over the score states: no simulation.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable

GAME_POINTS, CAP, GAMES_TO_WIN = 21, 30, 2


def game_over(a: int, b: int) -> bool:
    return (max(a, b) >= GAME_POINTS and abs(a - b) >= 2) or max(a, b) == CAP


def serve_win_rates(servers: list[str], winners: list[str]) -> tuple[float, float]:
    """(P(player_a wins a rally it serves), P(player_b wins a rally it serves)), fitted on the match."""
    rates = []
    for p in ("a", "b"):
        served = [w for s, w in zip(servers, winners) if s == p]
        if not served:
            raise ValueError(f"player_{p} never serves in the record: no serve-win rate to fit")
        rates.append(sum(1 for w in served if w == p) / len(served))
    return rates[0], rates[1]


def match_win_probability(p_a: float, p_b: float) -> Callable[[int, int, int, int, str], float]:
    """f(games_a, games_b, points_a, points_b, server) = P(player_a wins the match) from that state."""

    @lru_cache(maxsize=None)
    def v(ga: int, gb: int, pa: int, pb: int, server: str) -> float:
        if ga == GAMES_TO_WIN:
            return 1.0
        if gb == GAMES_TO_WIN:
            return 0.0
        q = p_a if server == "a" else 1.0 - p_b   # P(player_a wins this rally)
        out = 0.0
        if q > 0:
            out += q * (v(ga + 1, gb, 0, 0, "a") if game_over(pa + 1, pb) else v(ga, gb, pa + 1, pb, "a"))
        if q < 1:
            out += (1 - q) * (v(ga, gb + 1, 0, 0, "b") if game_over(pa, pb + 1) else v(ga, gb, pa, pb + 1, "b"))
        return out

    return v


def values(servers: list[str], winners: list[str], games: list[int], p_a: float, p_b: float) -> list[float]:
    """V before the first rally and after each rally (one value per rally, in order)."""
    v = match_win_probability(p_a, p_b)
    ga = gb = pa = pb = 0
    out = [v(0, 0, 0, 0, servers[0])]
    for i, w in enumerate(winners):
        if w == "a":
            pa += 1
        else:
            pb += 1
        if game_over(pa, pb):
            ga, gb = ga + (pa > pb), gb + (pb > pa)
            pa = pb = 0
            if i + 1 < len(games) and games[i + 1] == games[i]:
                raise ValueError(f"rally {i}: the game is over by the rules but the record goes on")
        out.append(v(ga, gb, pa, pb, w))
    return out


def describe() -> dict[str, Any]:
    return {"method": "exact Markov chain over score states (memoised recursion), no simulation",
            "rules": "21 points, two clear, capped at 30; best of three; rally winner serves next; game winner "
                     "serves first in the next game",
            "rates": "each player's serve-win rate fitted on every rally of the match (record.value_model)"}
