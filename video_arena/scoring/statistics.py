"""Per-game means with n, bootstrap intervals, the overall mean of game means, and the comparison of
two systems on the games both scored (the rules: docs/SCORING.md, "Aggregation" and "Comparing").
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from video_arena.core.results import REASONING_EFFORT
from video_arena.scoring import caveats as CV
from video_arena.scoring.cells import (ALL_METRICS, METRICS, BENCHMARK_TOLERANCE_S, CAVEATS, EXCLUDED, NO_ANSWER_STATES, REWARD,
                                       STATUS_CORRUPT, STATUS_FLAGGED, STATUS_MISSING, STATUS_SCORED, STATUSES,
                                       ZERO_FILLED, Cell, GroundTruthCheck, ScoringInputError)


@dataclass
class GameScore:
    game: str
    n_cases: int
    cells: list[Cell]
    means: dict[str, float | None]
    n: dict[str, int]
    ci: dict[str, tuple[float, float] | None]
    replicates: dict[str, np.ndarray | None]
    counts: dict[str, int]
    extra_case_dirs: list[str]
    #: per metric: the number of cells (trials) behind the case means in `n` (equal to `n` with one
    #: cell per case)
    n_trials: dict[str, int] = field(default_factory=dict)

    @property
    def n_scored(self) -> int:
        """Scored cells (with several attempts per case: scored trials)."""
        return self.counts[STATUS_SCORED]

    @property
    def n_scored_cases(self) -> int:
        """Cases with at least one scored cell (= n_scored with one cell per case)."""
        return len({c.case_id for c in self.cells if c.status == STATUS_SCORED})

    @property
    def multi_attempt(self) -> bool:
        """More than one cell for some case (a Harbor job run with -k N)."""
        return len(self.cells) > len({c.case_id for c in self.cells})

    @property
    def scored(self) -> bool:
        return self.n_scored > 0

    def summary(self) -> dict[str, Any]:
        return {
            "game": self.game, "n_cases": self.n_cases, "n_scored": self.n_scored,
            "n_scored_cases": self.n_scored_cases, "n_cells": len(self.cells), "n_trials": dict(self.n_trials),
            "scored": self.scored,
            "counts": dict(self.counts),
            "means": dict(self.means), "n": dict(self.n),
            "ci95": {k: (list(v) if v is not None else None) for k, v in self.ci.items()},
            "harbor_means": self.harbor_means(),
            "caveats": self.caveats(),
            "answer_states": count_values(c.answer_state for c in self.cells if c.status == STATUS_SCORED),
            "stop_reasons": count_values(c.stop_reason for c in self.cells if c.protocol or c.stop_reason),
            "extra_case_dirs": list(self.extra_case_dirs),
        }

    def harbor_means(self) -> dict[str, float | None]:
        """Means with a missing tier as 0.0, as Harbor's reward.json has them (the zero-filled column)."""
        zero_filled = {tier: zf for zf, tier in ZERO_FILLED.items()}
        return {m: self.means[zero_filled.get(m, m)] for m in METRICS}

    def recall_ceiling(self) -> float | None:
        v = [c.recall_ceiling for c in self.cells if c.status == STATUS_SCORED and c.recall_ceiling is not None]
        return float(np.mean(v)) if v else None

    def efforts(self) -> dict[str, int]:
        return count_values(c.reasoning_effort for c in self.cells if c.status == STATUS_SCORED)

    def caveats(self) -> dict[str, Any]:
        return {"n_scored": self.n_scored_cases, "n_cases": self.n_cases, "zero_rows": self.counts["zero_rows"],
                **{cv: self.counts[cv] for cv in CAVEATS}, "t1_recall_ceiling_mean": self.recall_ceiling(),
                REASONING_EFFORT: self.efforts(),
                "answer_check": count_values(c.answer_check for c in self.cells if c.status == STATUS_SCORED),
                "audit_verdicts": count_values(c.audit_verdict for c in self.cells
                                         if c.status in (STATUS_SCORED, STATUS_FLAGGED) and c.audit_verdict)}


def count_values(values: Iterable[str | None]) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        k = "none" if v is None else str(v)
        out[k] = out.get(k, 0) + 1
    return dict(sorted(out.items()))


def _rng(seed: int, game: str, metric: str) -> np.random.Generator:
    # One stream per (seed, game, metric): adding a game never moves another game's interval, and
    # two systems that scored the same cases get the same resampling indices (a paired bootstrap).
    return np.random.default_rng([seed, zlib.crc32(game.encode()), zlib.crc32(metric.encode())])


def bootstrap_means(values: list[float], n_boot: int, seed: int, game: str, metric: str) -> np.ndarray | None:
    """n_boot bootstrap replicates of the mean of `values` (None when there are no values)."""
    if not values or n_boot <= 0:
        return None
    x = np.asarray(values, dtype=float)
    idx = _rng(seed, game, metric).integers(0, len(x), size=(n_boot, len(x)))
    return x[idx].mean(axis=1)


def percentile_ci(replicates: np.ndarray | None, level: float = 0.95) -> tuple[float, float] | None:
    if replicates is None or len(replicates) == 0:
        return None
    lo, hi = np.percentile(replicates, [100 * (1 - level) / 2, 100 * (1 + level) / 2])
    return float(lo), float(hi)


def case_values(cells: Iterable[Cell], metric: str) -> dict[str, list[float]]:
    """{case_id: the metric of each of its scored cells (attempts)}, in the cells' order."""
    by_case: dict[str, list[float]] = {}
    for c in cells:
        v = c.metric(metric)
        if v is not None:
            by_case.setdefault(c.case_id, []).append(v)
    return by_case


def case_means(by_case: dict[str, list[float]]) -> dict[str, float]:
    """Mean per case over its attempts (one cell per case: the cell's own value, exactly).  A game
    mean is the mean of these: every case weighs the same however many attempts scored."""
    return {k: x[0] if len(x) == 1 else float(np.mean(x)) for k, x in by_case.items()}


def aggregate_game(game: str, n_cases: int, cells: list[Cell], n_boot: int, seed: int,
                   extra_case_dirs: list[str] | None = None) -> GameScore:
    counts = {s: 0 for s in STATUSES}
    for c in cells:
        counts[c.status] += 1
    counts["excluded"] = sum(counts[s] for s in EXCLUDED)
    scored = [c for c in cells if c.status == STATUS_SCORED]
    for cv in CAVEATS:
        counts[cv] = sum(c.caveat(cv) for c in scored)
    counts["zero_rows"] = sum(c.zero_rows for c in scored)
    counts["format_error"] = sum(bool((c.record or {}).get("format_error")) for c in scored
                                 if c.answer_state not in NO_ANSWER_STATES and not c.context_overflow)
    counts["no_answer"] = sum(c.answer_state in NO_ANSWER_STATES for c in scored)
    means: dict[str, float | None] = {}
    n: dict[str, int] = {}
    ci: dict[str, tuple[float, float] | None] = {}
    reps: dict[str, np.ndarray | None] = {}
    n_trials: dict[str, int] = {}
    for m in ALL_METRICS:
        by_case = case_values(scored, m)
        vals = list(case_means(by_case).values())
        n[m] = len(vals)
        n_trials[m] = sum(len(x) for x in by_case.values())
        means[m] = float(np.mean(vals)) if vals else None
        reps[m] = bootstrap_means(vals, n_boot, seed, game, m)
        ci[m] = percentile_ci(reps[m])
    return GameScore(game=game, n_cases=n_cases, cells=cells, means=means, n=n, ci=ci,
                     replicates=reps, counts=counts, extra_case_dirs=list(extra_case_dirs or []),
                     n_trials=n_trials)


@dataclass
class SystemScore:
    results: Path
    tasks_root: Path
    tolerance_s: float
    games: dict[str, GameScore]
    no_case_games: list[str]
    judge_version: str | None
    n_boot: int
    seed: int
    warnings: list[str]
    label: str = ""
    #: a Harbor job's facts (video_arena/scoring/harbor_jobs.py): job, agents, attempts, missing
    #: trials with their exception types, reward mismatches; None for a native results folder
    harbor: dict[str, Any] | None = None
    exclude_flagged: bool = False
    #: what differs among the cells (caveats.mixing): non-empty means the table is not one measurement
    mixed: list[str] = field(default_factory=list)
    #: games whose ground truth could not be checked (no manifest.json)
    gt_unchecked: list[str] = field(default_factory=list)
    #: False when scored with --no-verify-requests: Protocol A requests were not rebuilt (a caveat)
    requests_verified: bool = True

    @property
    def diagnostic(self) -> bool:
        return abs(self.tolerance_s - BENCHMARK_TOLERANCE_S) > 1e-9 or bool(self.mixed)

    @property
    def tolerance_diagnostic(self) -> bool:
        return abs(self.tolerance_s - BENCHMARK_TOLERANCE_S) > 1e-9

    def integrity_errors(self) -> list[Cell]:
        return [c for c in self.cells() if c.status == STATUS_CORRUPT]

    def nothing_measured(self) -> str:
        """'' when some cell ran, else why the system measured nothing: no agent ever started (its
        cells say so), or no cell ran at all.  `video-arena score` exits 1 on it."""
        cells = self.cells()
        if any(c.status != STATUS_MISSING for c in cells):
            return ""
        unstarted = [c for c in cells if c.agent_not_started]
        if unstarted:
            c = unstarted[0]
            return (f"no agent ever started: {len(unstarted)} cell(s) could not start the agent command (first "
                    f"{c.game}/{c.case_id}: {c.reason}); nothing was measured")
        return "no cell ran (every cell is missing); nothing was measured"

    def caveats(self) -> dict[str, Any]:
        """The caveat counts over every game (sums), the mean of the game recall ceilings, the efforts."""
        games = list(self.games.values())
        ceil = [gs.recall_ceiling() for gs in games if gs.recall_ceiling() is not None]
        return {"n_scored": sum(gs.n_scored_cases for gs in games), "n_cases": sum(gs.n_cases for gs in games),
                "zero_rows": sum(gs.counts["zero_rows"] for gs in games),
                **{cv: sum(gs.counts[cv] for gs in games) for cv in CAVEATS},
                "t1_recall_ceiling_mean": float(np.mean(ceil)) if ceil else None,
                REASONING_EFFORT: count_values(c.reasoning_effort for c in self.cells() if c.status == STATUS_SCORED),
                "excluded_flagged": sum(gs.counts[STATUS_FLAGGED] for gs in games)}

    def conditions(self) -> dict[str, dict[str, int]]:
        """What the scored cells ran under, per mixing dimension (value -> cells)."""
        scored = [c for c in self.cells() if c.status == STATUS_SCORED]
        return {d: {("(not recorded)" if v is None else str(v)): n for v, n in CV.tally(scored, d).items()}
                for d in CV.MIX_DIMENSIONS + ("toolkit",)}

    def scored_games(self) -> list[str]:
        return [g for g, gs in self.games.items() if gs.scored]

    def dropped_games(self) -> dict[str, str]:
        """Games with cases but no scored cell: why each one drops out of the overall mean."""
        out = {}
        for g, gs in self.games.items():
            if not gs.scored:
                parts = [f"{gs.counts[s]} {s}" for s in STATUSES[1:] if gs.counts[s]]
                out[g] = f"0/{gs.n_cases} scored ({', '.join(parts)})"
        return out

    def overall(self, games: list[str] | None = None) -> dict[str, Any]:
        return overall_of(self, games)

    def models(self) -> dict[str, int]:
        return count_values(c.model for c in self.cells() if c.protocol or c.model)

    def protocols(self) -> dict[str, int]:
        return count_values(c.protocol for c in self.cells() if c.protocol or c.model)

    def cells(self) -> list[Cell]:
        return [c for gs in self.games.values() for c in gs.cells]

    def summary(self) -> dict[str, Any]:
        return {
            "label": self.label, "results": str(self.results), "models": self.models(),
            "protocols": self.protocols(), "diagnostic": self.diagnostic, "mixed": list(self.mixed),
            "caveats": self.caveats(), "conditions": self.conditions(),
            "exclude_flagged": self.exclude_flagged, "ground_truth_unchecked": list(self.gt_unchecked),
            "requests_verified": self.requests_verified,
            "context_overflow": sum(gs.counts["context_overflow"] for gs in self.games.values()),
            "integrity_errors": [{"game": c.game, "case_id": c.case_id, "reason": c.reason}
                                 for c in self.integrity_errors()],
            "games": {g: gs.summary() for g, gs in self.games.items()},
            "games_without_cases": list(self.no_case_games),
            "dropped_games": self.dropped_games(),
            "overall": self.overall(),
            "warnings": list(self.warnings),
            **({"harbor": self.harbor} if self.harbor is not None else {}),
        }


def overall_of(system: SystemScore, games: list[str] | None = None) -> dict[str, Any]:
    """Mean of game means over `games` (default: every game the system scored), per metric, with a
    stratified bootstrap interval (each game resampled on its own, replicate game means averaged)."""
    names = system.scored_games() if games is None else list(games)
    out: dict[str, Any] = {"games": names, "means": {}, "n_games": {}, "ci95": {}, "replicates": {}}
    for m in ALL_METRICS:
        gm = [(g, system.games[g]) for g in names if g in system.games and system.games[g].means[m] is not None]
        out["n_games"][m] = len(gm)
        if not gm:
            out["means"][m], out["ci95"][m], out["replicates"][m] = None, None, None
            continue
        out["means"][m] = float(np.mean([gs.means[m] for _, gs in gm]))
        reps = [gs.replicates[m] for _, gs in gm]
        if all(r is not None for r in reps):
            stacked = np.mean(np.vstack(reps), axis=0)
            out["replicates"][m] = stacked
            out["ci95"][m] = percentile_ci(stacked)
        else:
            out["replicates"][m], out["ci95"][m] = None, None
    return out


def public_overall(o: dict[str, Any]) -> dict[str, Any]:
    return {"games": o["games"], "means": o["means"], "n_games": o["n_games"],
            "ci95": {k: (list(v) if v is not None else None) for k, v in o["ci95"].items()}}


class MixedError(ScoringInputError):
    """Cells of more than one condition, model, protocol, tolerance or reasoning effort in one table
    (or two systems of different conditions in one comparison)."""

    def __init__(self, what: str, differences: list[str]):
        self.what, self.differences = what, differences
        super().__init__(f"{what}: " + "; ".join(differences))


def paired_metric(a_cells: list[Cell], b_cells: list[Cell], metric: str, n_boot: int, seed: int,
                  game: str) -> dict[str, Any]:
    """A against B on one metric over the cases both scored (each case's mean over its attempts):
    both means, A-B with a paired bootstrap interval (the same resampled cases for both), A/B."""
    pa, pb = case_means(case_values(a_cells, metric)), case_means(case_values(b_cells, metric))
    cases = sorted(set(pa) & set(pb))
    xa = np.asarray([pa[c] for c in cases], dtype=float)
    xb = np.asarray([pb[c] for c in cases], dtype=float)
    ma = float(xa.mean()) if cases else None
    mb = float(xb.mean()) if cases else None
    ra = rb = None
    if cases and n_boot > 0:
        idx = _rng(seed, game, metric).integers(0, len(cases), size=(n_boot, len(cases)))
        ra, rb = xa[idx].mean(axis=1), xb[idx].mean(axis=1)
    dci = percentile_ci(ra - rb) if ra is not None else None
    return {"a": ma, "b": mb, "diff": None if ma is None or mb is None else ma - mb,
            "diff_ci95": list(dci) if dci else None, "ratio": (ma / mb) if (ma is not None and mb) else None,
            "n_paired": len(cases), "replicates": (ra, rb)}


def compare(a: SystemScore, b: SystemScore, allow_mixed: bool = False) -> dict[str, Any]:
    """Diff two systems on the cases both scored, paired (docs/SCORING.md, "Two systems"): per game the
    cases scored by both, per case the mean over its attempts, both means over those cases and a paired
    bootstrap of A-B; the overall is the mean of the paired game means over the games with a paired
    case.  Names the games dropped and the cases left out.  Two systems whose cells on the shared games
    ran under different conditions are refused (MixedError) unless allow_mixed, and the comparison is
    then marked diagnostic."""
    if abs(a.tolerance_s - b.tolerance_s) > 1e-9:
        raise ScoringInputError(f"cannot compare results scored at {a.tolerance_s:g} s and {b.tolerance_s:g} s")
    all_games = sorted(set(a.games) | set(b.games) | set(a.no_case_games) | set(b.no_case_games))
    shared, dropped = [], {}
    scored_of = {}
    for g in all_games:
        ga, gb = a.games.get(g), b.games.get(g)
        why = []
        for name, gs in (("A", ga), ("B", gb)):
            if gs is None:
                why.append(f"{name}: no cases")
            elif not gs.scored:
                why.append(f"{name}: 0/{gs.n_cases} scored")
        if not why:
            sa = [c for c in ga.cells if c.status == STATUS_SCORED]
            sb = [c for c in gb.cells if c.status == STATUS_SCORED]
            if not {c.case_id for c in sa} & {c.case_id for c in sb}:
                why.append(f"no case scored by both (A {ga.n_scored_cases}, B {gb.n_scored_cases})")
            scored_of[g] = (sa, sb)
        if why:
            dropped[g] = ", ".join(why)
        else:
            shared.append(g)
    differences = CV.compare_mixing([c for g in shared for c in scored_of[g][0]],
                                    [c for g in shared for c in scored_of[g][1]])
    if differences and not allow_mixed:
        raise MixedError("cannot compare: the two systems ran under different conditions on the shared games "
                         "(--allow-mixed shows it as a DIAGNOSTIC)", differences)
    n_boot, seed = min(a.n_boot, b.n_boot), a.seed
    per_game: dict[str, Any] = {}
    reps: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {m: [] for m in ALL_METRICS}
    means: dict[str, list[tuple[float, float]]] = {m: [] for m in ALL_METRICS}
    for g in shared:
        ga, gb = a.games[g], b.games[g]
        sa, sb = scored_of[g]
        ca, cb = {c.case_id for c in sa}, {c.case_id for c in sb}
        entry: dict[str, Any] = {"n_scored": [ga.n_scored_cases, gb.n_scored_cases],
                                 "n_cases": [ga.n_cases, gb.n_cases], "n_scored_trials": [ga.n_scored, gb.n_scored],
                                 "n_paired": len(ca & cb), "n_a_only": len(ca - cb), "n_b_only": len(cb - ca)}
        for m in ALL_METRICS:
            pm = paired_metric(sa, sb, m, n_boot, seed, g)
            ra, rb = pm.pop("replicates")
            entry[m] = pm
            if pm["a"] is not None:
                means[m].append((pm["a"], pm["b"]))
                if ra is not None:
                    reps[m].append((ra, rb))
        per_game[g] = entry
    overall: dict[str, Any] = {}
    for m in ALL_METRICS:
        if not means[m]:
            overall[m] = {"a": None, "b": None, "diff": None, "diff_ci95": None, "ratio": None,
                          "n_games": [0, 0]}
            continue
        ma = float(np.mean([x for x, _ in means[m]]))
        mb = float(np.mean([y for _, y in means[m]]))
        dci = None
        if reps[m] and len(reps[m]) == len(means[m]):  # every game resampled on its own, then averaged
            ra = np.mean(np.vstack([x for x, _ in reps[m]]), axis=0)
            rb = np.mean(np.vstack([y for _, y in reps[m]]), axis=0)
            dci = percentile_ci(ra - rb)
        overall[m] = {"a": ma, "b": mb, "diff": ma - mb, "diff_ci95": list(dci) if dci else None,
                      "ratio": (ma / mb) if mb else None, "n_games": [len(means[m]), len(means[m])]}
    own_a, own_b = a.overall(), b.overall()
    return {
        "a": {"label": a.label, "results": str(a.results)},
        "b": {"label": b.label, "results": str(b.results)},
        "paired": True,
        "n_paired_cases": sum(per_game[g]["n_paired"] for g in shared),
        "n_a_only": sum(per_game[g]["n_a_only"] for g in shared),
        "n_b_only": sum(per_game[g]["n_b_only"] for g in shared),
        "shared_games": shared, "dropped_games": dropped, "games": per_game, "overall_shared": overall,
        "diagnostic": bool(differences) or a.diagnostic or b.diagnostic, "mixed": differences,
        "own_overall_not_comparable": {
            "a": {REWARD: own_a["means"][REWARD], "games": own_a["games"]},
            "b": {REWARD: own_b["means"][REWARD], "games": own_b["games"]},
        },
    }


def mixing_cells(system: "SystemScore") -> list[Cell]:
    """The cells a mixing check looks at: every cell that ran and reached the judge's gates (scored,
    excluded or corrupt), not the missing ones (they add nothing to a number), nor a corrupt one without a
    run record (it records no condition) or whose record lacks a digest its runner writes (nothing it
    records is trusted: its integrity error is what is reported)."""
    return [c for c in system.cells() if c.status != STATUS_MISSING and not c.no_run_record
            and not c.record_incomplete]


def finish_system(system: "SystemScore", gt_check: "GroundTruthCheck | None" = None) -> None:
    """What every scored source gets after its cells: the mixing check, the unchecked ground truths."""
    system.mixed = CV.mixing(mixing_cells(system))
    if gt_check is not None and gt_check.unchecked_games:
        system.gt_unchecked = sorted(g for g in gt_check.unchecked_games if g in system.games)
        if system.gt_unchecked:
            system.warnings.append(f"ground truth not checked against a manifest (no manifest.json): "
                                   f"{', '.join(system.gt_unchecked)}")
