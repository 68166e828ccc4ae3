"""Held-out calibration of badminton's pre-rally win probability (the numbers docs/CASES.md gives for V_t).

Every match of data/rallies.csv whose rallies all have a winner and whose games all end at a legal score is held
out in turn; everything fitted for it (the hyperparameters kappa and tau, the players' priors, their raw rates) is
fitted on the other matches only.  Before each of its rallies each model gives

- the match: P(player_a wins the match) from the score so far (V_t before the rally), scored against the match's
  winner;
- the rally: P(player_a wins this rally) (player_a's serve-win rate when player_a serves, else one minus
  player_b's), scored against the rally's winner;

by the Brier score and the log loss (mean over the rows; lower is better).  The models:

- `V_t: prior + update` (value.py, what the cases use): the Beta priors of prior.py updated by the rallies so far;
- `watcher: unnamed players' prior + update` (the plugin's visible_values): the same with V_t's prior for a player
  with no other match for both (what a watcher of the video, which names nobody, can know);
- `fixed rates from other matches`: the rule the cases used before, made honest: each player's serve-win rate
  over the player's other matches (the pool's when there are none), fixed for the whole match;
- `score only`: both rates 0.5 (every rally a coin flip, the chain still counts the score);
- `constant 0.5`;
- `fixed rates fitted on this match`: the rule the cases used before as it was (rates from every rally of the
  match, its future included): not held out, printed to show what it knew.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

from video_arena.games.badminton import prior as PR
from video_arena.games.badminton import records as R
from video_arena.games.badminton import value as V

MODELS = ("V_t: prior + update", "watcher: unnamed players' prior + update", "fixed rates from other matches",
          "score only", "constant 0.5", "fixed rates fitted on this match")
HELD_OUT = MODELS[:5]
CONSTANT = "constant 0.5"
EPS = 1e-12


@dataclass
class Scores:
    """Brier and log loss sums of one model on one kind of row, and how often it names the outcome (beyond the
    band on the side of the result)."""
    band: float
    n: int = 0
    brier: float = 0.0
    log_loss: float = 0.0
    named: int = 0

    def add(self, p: float, y: float) -> None:
        self.n += 1
        self.brier += (p - y) ** 2
        self.named += (p > 0.5 + self.band) if y else (p < 0.5 - self.band)
        q = min(1 - EPS, max(EPS, p))
        self.log_loss -= math.log(q) if y else math.log(1 - q)

    def mean(self) -> tuple[float, float]:
        return self.brier / self.n, self.log_loss / self.n


@dataclass
class Calibration:
    band: float
    matches: int = 0
    rows: dict[str, dict[str, Scores]] = field(default_factory=dict)
    hypers: dict[tuple[int, int], int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.rows = {kind: {m: Scores(self.band) for m in MODELS} for kind in ("match", "first rally", "rally")}


def complete(m: R.MatchRallies) -> bool:
    """Every rally has a winner, every game ends at a legal score and the match when a player has two."""
    _, winners = m.serve_outcomes()
    if not winners or "" in winners:
        return False
    ga = gb = 0
    for i, (g, (a, b)) in enumerate(zip(m.games, m.scores)):
        last = i + 1 == len(m.games) or m.games[i + 1] != g
        if V.game_over(a, b) != last:
            return False
        if last:
            ga, gb = ga + (a > b), gb + (b > a)
    return max(ga, gb) == V.GAMES_TO_WIN and ga + gb == len(set(m.games))


def _fitted_on_match(servers: list[str], winners: list[str]) -> tuple[float, float]:
    out = []
    for side in ("a", "b"):
        served = [w for s, w in zip(servers, winners) if s == side]
        out.append(served.count(side) / len(served) if served else 0.5)
    return out[0], out[1]


def calibrate(band: float, progress: Callable[[], None] | None = None) -> Calibration:
    """`band`: the game's dead band, for how often a model's match probability names the winner."""
    rallies = R.read_rallies()
    table = PR.table(rallies)
    out = Calibration(band)
    for m in rallies:
        if not complete(m):
            continue
        rest = PR.others(table, m.key)
        hyper = PR.fit(rest)
        out.hypers[(hyper.kappa, hyper.tau)] = out.hypers.get((hyper.kappa, hyper.tau), 0) + 1
        tot = PR.Totals(rest)
        servers, winners = m.serve_outcomes()
        n = len(winners)
        unnamed = tot.prior("", hyper)      # "": nobody's name, so the pool's rate
        rates = {
            MODELS[0]: V.posterior_rates(tot.prior(m.player_a, hyper), tot.prior(m.player_b, hyper), servers, winners),
            MODELS[1]: V.posterior_rates(unnamed, unnamed, servers, winners),
            MODELS[2]: [(tot.rate(m.player_a), tot.rate(m.player_b))] * (n + 1),
            MODELS[3]: [(0.5, 0.5)] * (n + 1),
            MODELS[5]: [_fitted_on_match(servers, winners)] * (n + 1),
        }
        y_match = 1.0 if winners[-1] == "a" else 0.0   # the last rally's winner wins the match
        for model in MODELS:
            if model == CONSTANT:
                match_p = rally_p = [0.5] * n
            else:
                r = rates[model]
                match_p = V.values(servers, winners, list(m.games), r)[:n]
                rally_p = [r[i][0] if servers[i] == "a" else 1.0 - r[i][1] for i in range(n)]
            for i in range(n):
                out.rows["match"][model].add(match_p[i], y_match)
                out.rows["rally"][model].add(rally_p[i], 1.0 if winners[i] == "a" else 0.0)
            out.rows["first rally"][model].add(match_p[0], y_match)
        out.matches += 1
        if progress:
            progress()
    return out


def markdown(c: Calibration) -> str:
    lines = [f"held out: {c.matches} matches of data/rallies.csv (all rallies with a winner, legal game ends), "
             f"{c.rows['match'][MODELS[0]].n} pre-rally rows; hyperparameters fitted per held-out match (kappa, tau): "
             + ", ".join(f"({k}, {t}) {n}x" for (k, t), n in sorted(c.hypers.items())),
             "",
             f"| model | match: Brier | match: log loss | names the winner (band {c.band:g}) | first rally only: Brier "
             "| log loss | rally: Brier | log loss |",
             "|---|---|---|---|---|---|---|---|"]
    for model in MODELS:
        cells = []
        for kind in ("match", "first rally", "rally"):
            sc = c.rows[kind][model]
            b, ll = sc.mean()
            cells += [f"{b:.4f}", f"{ll:.4f}"] + ([f"{100 * sc.named / sc.n:.1f} %"] if kind == "match" else [])
        note = " (not held out: sees the match's future)" if model not in HELD_OUT else ""
        lines.append(f"| {model}{note} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
