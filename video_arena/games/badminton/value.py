"""V_t for badminton: player_a's probability of winning the match, from what a spectator knows at that moment.

Each player's serve-win rate (the probability of winning a rally the player serves) has a Beta prior fitted on
the other matches of the collections (prior.py; never this match).  After each rally the prior is updated by the
rallies of this match played so far, the conjugate Beta-Binomial update: with s rallies served and w of them won,

    Beta(alpha, beta)  ->  Beta(alpha + w, beta + s - w),    rate = (alpha + w) / (alpha + beta + s)

(the posterior mean).  V is then exact for those two rates: a Markov chain of rally scoring over the rest of the
match, 21 points a game, two clear, capped at 30 (29-29: the next point wins); best of three; the rally winner
serves the next rally and the game winner the first rally of the next game.  A game's table (the probability of
winning it from every score and server) is solved backwards from its ends and the match from the games' starts:
no simulation.  The rallies after a row never enter its V.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable

GAME_POINTS, CAP, GAMES_TO_WIN = 21, 30, 2


def game_over(a: int, b: int) -> bool:
    return (max(a, b) >= GAME_POINTS and abs(a - b) >= 2) or max(a, b) == CAP


@lru_cache(maxsize=4096)
def _game_table(p_a: float, p_b: float) -> dict[tuple[int, int, str], float]:
    """(points_a, points_b, server) -> P(player_a wins the game), for every score of a game that is not over."""
    g: dict[tuple[int, int, str], float] = {}
    for total in range(2 * (CAP - 1), -1, -1):
        for pa in range(max(0, total - (CAP - 1)), min(CAP - 1, total) + 1):
            pb = total - pa
            if game_over(pa, pb):
                continue
            win = 1.0 if game_over(pa + 1, pb) else g[(pa + 1, pb, "a")]
            lose = 0.0 if game_over(pa, pb + 1) else g[(pa, pb + 1, "b")]
            for server in ("a", "b"):
                q = p_a if server == "a" else 1.0 - p_b   # P(player_a wins this rally)
                g[(pa, pb, server)] = q * win + (1.0 - q) * lose
    return g


def match_win_probability(p_a: float, p_b: float) -> Callable[[int, int, int, int, str], float]:
    """f(games_a, games_b, points_a, points_b, server) = P(player_a wins the match) from that state, with
    p_a = P(player_a wins a rally it serves) and p_b = P(player_b wins a rally it serves)."""
    g = _game_table(p_a, p_b)

    def at_game_start(ga: int, gb: int, server: str) -> float:
        if ga == GAMES_TO_WIN:
            return 1.0
        if gb == GAMES_TO_WIN:
            return 0.0
        return v(ga, gb, 0, 0, server)

    def v(ga: int, gb: int, pa: int, pb: int, server: str) -> float:
        if ga == GAMES_TO_WIN:
            return 1.0
        if gb == GAMES_TO_WIN:
            return 0.0
        q = g[(pa, pb, server)]
        return q * at_game_start(ga + 1, gb, "a") + (1.0 - q) * at_game_start(ga, gb + 1, "b")

    return v


def posterior_rates(prior_a: tuple[float, float], prior_b: tuple[float, float], servers: list[str],
                    winners: list[str]) -> list[tuple[float, float]]:
    """(rate_a, rate_b) before the first rally and after each rally: each player's Beta(alpha, beta) prior updated
    by the rallies served so far (posterior mean), rally i's own outcome included from the row after it on."""
    ab = {"a": list(prior_a), "b": list(prior_b)}
    out = []
    for i in range(len(winners) + 1):
        if i:
            s = servers[i - 1]
            ab[s][0 if winners[i - 1] == s else 1] += 1
        out.append(tuple(x / (x + y) for x, y in (ab["a"], ab["b"])))
    return out


def values(servers: list[str], winners: list[str], games: list[int], rates: list[tuple[float, float]]) -> list[float]:
    """V before the first rally and after each rally (one value per rally, in order), V at position k from the
    chain with the serve-win rates rates[k] (posterior_rates: what is known after the first k rallies)."""
    if len(rates) != len(winners) + 1:
        raise ValueError(f"{len(rates)} rate pairs for {len(winners)} rallies (need one more)")
    ga = gb = pa = pb = 0
    out = [match_win_probability(*rates[0])(0, 0, 0, 0, servers[0])]
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
        out.append(match_win_probability(*rates[i + 1])(ga, gb, pa, pb, w))
    return out


def describe() -> dict[str, Any]:
    return {"method": "exact Markov chain over score states (each game's table solved backwards), no simulation",
            "rules": "21 points, two clear, capped at 30; best of three; rally winner serves next; game winner "
                     "serves first in the next game",
            "rates": "each player's serve-win rate: a Beta prior fitted on the other matches of both collections "
                     "(record.value_model; never this match), updated by this match's rallies played so far "
                     "(Beta-Binomial, posterior mean)"}
