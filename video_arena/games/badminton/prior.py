"""V_t's prior: each player's serve-win rate before a match, fitted on the other matches of both collections.

Data: data/rallies.csv, every distinct match of ShuttleSet and ShuttleSet22 (94); `records.serve_outcomes` gives
each rally's server and winner (a rally whose winner the score does not show is left out).  For a match m and a
player X, from the matches other than m only:

    mu         = the pool's serve-win rate (serves won over serves, every player)
    n_X, w_X   = X's serves and serves won in those matches (0, 0 when X plays no other match)
    mean_X     = (w_X + tau * mu) / (n_X + tau)         X's own rate, shrunk to the pool (the pool's when n_X = 0)
    prior      = Beta(kappa * mean_X, kappa * (1 - mean_X))      X's serve-win rate in match m

kappa (how much one match's rate varies around the player's) and tau (how far a player's own matches move the
pool's rate) are the grid point (each a power of two, GRID) that maximises the leave-one-match-out predictive
log-likelihood of the serves of those same other matches: each of them predicted from the rest by the
Beta-Binomial probability of its serve sequence, log B(alpha + w, beta + n - w) - log B(alpha, beta), summed
over both players.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from video_arena.games.badminton import records as R
from video_arena.games.base import BUILTIN_CASES, SELECTION_SEED

GRID = tuple(2 ** i for i in range(2, 14))   # 4 .. 8192

#: serves and serves won: (n, w)
Counts = tuple[int, int]


@dataclass(frozen=True)
class MatchServes:
    """One match's serve counts per player (name -> (serves, won)), keyed by records.match_key."""
    key: str
    players: dict[str, Counts]


@dataclass(frozen=True)
class Hyper:
    kappa: int
    tau: int


def serve_counts(m: R.MatchRallies) -> MatchServes:
    servers, winners = m.serve_outcomes()
    players: dict[str, Counts] = {}
    for side, name in (("a", m.player_a), ("b", m.player_b)):
        served = [w for s, w in zip(servers, winners) if s == side and w]
        players[name] = (len(served), sum(1 for w in served if w == side))
    return MatchServes(m.key, players)


def table(matches: list[R.MatchRallies] | None = None) -> list[MatchServes]:
    """The serve counts of every match of data/rallies.csv (or of `matches`)."""
    return [serve_counts(m) for m in (R.read_rallies() if matches is None else matches)]


class Totals:
    """Serve counts summed over a set of matches: the pool's and each player's, with one match taken out in O(1)."""

    def __init__(self, matches: list[MatchServes]):
        self.n = self.w = 0
        self.player: dict[str, list[int]] = {}
        for m in matches:
            for name, (n, w) in m.players.items():
                self.n, self.w = self.n + n, self.w + w
                t = self.player.setdefault(name, [0, 0])
                t[0], t[1] = t[0] + n, t[1] + w
        if self.n == 0:
            raise ValueError("no serve to fit a prior on")

    def prior(self, name: str, hyper: Hyper, without: MatchServes | None = None) -> tuple[float, float]:
        """Beta(alpha, beta) of `name`'s serve-win rate (from these matches, `without` taken out)."""
        n0, w0 = self.n, self.w
        n, w = self.player.get(name, (0, 0))
        if without is not None:
            n0 -= sum(c[0] for c in without.players.values())
            w0 -= sum(c[1] for c in without.players.values())
            out = without.players.get(name, (0, 0))
            n, w = n - out[0], w - out[1]
        mean = (w + hyper.tau * (w0 / n0)) / (n + hyper.tau)
        return hyper.kappa * mean, hyper.kappa * (1.0 - mean)

    def rate(self, name: str) -> float:
        """The player's raw serve-win rate in these matches (the pool's when the player serves in none)."""
        n, w = self.player.get(name, (0, 0))
        return w / n if n else self.w / self.n


def _lbeta(a: float, b: float) -> float:
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


def _held_out_means(matches: list[MatchServes], tau: int) -> list[tuple[float, int, int]]:
    """(prior mean from the other matches, serves, won) of every player of every match."""
    tot = Totals(matches)
    unit = Hyper(1, tau)
    return [(tot.prior(name, unit, without=m)[0], n, w) for m in matches for name, (n, w) in m.players.items()]


def _log_likelihood(rows: list[tuple[float, int, int]], kappa: int) -> float:
    out = 0.0
    for mean, n, w in rows:
        a, b = kappa * mean, kappa * (1.0 - mean)
        out += _lbeta(a + w, b + n - w) - _lbeta(a, b)
    return out


def loo_log_likelihood(matches: list[MatchServes], hyper: Hyper) -> float:
    """Sum over `matches` of the log-probability of each one's serves under the prior from the others."""
    return _log_likelihood(_held_out_means(matches, hyper.tau), hyper.kappa)


def fit(matches: list[MatchServes]) -> Hyper:
    """The grid point of the best leave-one-match-out log-likelihood (ties: the first, smallest kappa then tau)."""
    scores = {}
    for tau in GRID:
        rows = _held_out_means(matches, tau)
        for kappa in GRID:
            scores[Hyper(kappa, tau)] = _log_likelihood(rows, kappa)
    best = max(scores.values())
    return next(h for kappa in GRID for tau in GRID if scores[h := Hyper(kappa, tau)] >= best - 1e-9)


def others(matches: list[MatchServes], key: str, in_table: bool = True) -> list[MatchServes]:
    """Every match but the one with this match key.  The table holds each distinct match once (the pool's
    deduplication), so exactly one goes for a match of the table (none would mean the match is not the one
    the table holds) and none for a match from outside it (one would mean it is not from outside)."""
    rest = [m for m in matches if m.key != key]
    if len(rest) != len(matches) - in_table:
        raise R.RecordError(f"match {key!r} is in data/rallies.csv {len(matches) - len(rest)} times "
                            f"(need {'once' if in_table else 'none'})")
    return rest


def value_model(record: dict[str, Any], matches: list[MatchServes] | None = None,
                in_table: bool = True) -> dict[str, Any]:
    """What the record's V_t starts from: both players' Beta priors, fitted on every match but this one (a
    match of the table, `in_table`; a user's match from outside it: every match of the table)."""
    key = R.match_key(record["source"]["folder"].rsplit("/", 1)[-1])
    rest = others(table() if matches is None else matches, key, in_table)
    hyper = fit(rest)
    tot = Totals(rest)
    out: dict[str, Any] = {}
    for side in ("a", "b"):
        name = record["match"][f"player_{side}"]
        alpha, beta = tot.prior(name, hyper)
        n, w = tot.player.get(name, (0, 0))
        out[f"prior_{side}"] = {"alpha": round(alpha, 6), "beta": round(beta, 6),
                                "other_matches": sum(1 for m in rest if name in m.players),
                                "other_serves": n, "other_serves_won": w}
    out |= {"pool_rate": round(tot.w / tot.n, 6), "kappa": hyper.kappa, "tau": hyper.tau,
            "fitted_on": f"the {len(rest)} other matches of data/rallies.csv (not this one): {tot.n} serves",
            "update": "Beta-Binomial by this match's rallies played so far; the chain uses the posterior means"}
    return out


@lru_cache(maxsize=1)
def watcher_prior() -> dict[str, Any]:
    """The prior a watcher of the video gives both players, who sees no name: V_t's own prior (kappa and tau fitted
    the same way) for a player with no other match, fitted on the matches that are not built-in cases."""

    cases = {R.match_key(e.folder.rsplit("/", 1)[-1]) for e in R.select(R.read_pool(), BUILTIN_CASES, SELECTION_SEED)}
    fitting = [m for m in table() if m.key not in cases]
    hyper = fit(fitting)
    alpha, beta = Totals(fitting).prior("", hyper)     # "": nobody's name, so the pool's rate
    return {"alpha": alpha, "beta": beta, "kappa": hyper.kappa, "tau": hyper.tau, "matches": len(fitting)}
