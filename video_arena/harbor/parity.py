"""Parity as Harbor's adapters mean it: the same agent run through the project's own harness (run-a or
run-b, a native results folder) and through Harbor (a job of the dataset), the scores side by side.

    compare_runs(native_results, harbor_job, tasks_root) -> Parity

Per task: the native cell's reward (the scorer's, `video-arena score`) beside the Harbor trial's reward
(the verifier's reward.json; several attempts of a task are averaged first).  Per game: both means over
the tasks both sides scored, the mean difference Harbor - native and its 95 % percentile bootstrap
interval over those tasks (paired: one resample of tasks for both sides); overall: the mean of the game
means of the difference, games resampled independently.  An agent is parity-matching when the overall
interval holds 0 (a deterministic agent run both ways gives a difference of exactly 0); a task scored on
one side only is counted, never compared.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from video_arena import safe_io
from video_arena.core import results as R
from video_arena.digests import sha256_bytes
from video_arena.harbor_api import trials as TR
from video_arena.scoring import cells as SC
from video_arena.scoring import statistics as SS

N_BOOT = 2000
SEED = 0


class ParityError(ValueError):
    """The two runs cannot be compared (not a results folder, not a job, no task in common)."""


@dataclass
class Parity:
    native: str                       # the results folder's name
    job: str                          # the Harbor job's name
    protocol: str | None
    native_agent: str                 # what the native run records about its agent (model label, command)
    harbor_agent: str                 # the job's agent (name or import path) and model
    per_task: list[dict[str, Any]] = field(default_factory=list)
    per_game: dict[str, dict[str, Any]] = field(default_factory=dict)
    mean_native: float | None = None
    mean_harbor: float | None = None
    mean_difference: float | None = None
    difference_ci95: list[float] | None = None
    n_paired: int = 0
    n_native_only: int = 0
    n_harbor_only: int = 0
    #: paired tasks whose collected answer.json is byte for byte the native one (a deterministic agent)
    n_same_answer: int = 0

    @property
    def matching(self) -> bool:
        ci = self.difference_ci95
        return self.n_paired > 0 and ci is not None and ci[0] <= 1e-9 and ci[1] >= -1e-9

    def to_doc(self) -> dict[str, Any]:
        return {"native": self.native, "job": self.job, "protocol": self.protocol,
                "native_agent": self.native_agent, "harbor_agent": self.harbor_agent,
                "n_paired_tasks": self.n_paired, "n_native_only": self.n_native_only,
                "n_harbor_only": self.n_harbor_only, "n_same_answer": self.n_same_answer,
                "mean_native": self.mean_native,
                "mean_harbor": self.mean_harbor, "mean_difference_harbor_minus_native": self.mean_difference,
                "difference_ci95": self.difference_ci95, "matching": self.matching,
                "rule": "matching when the 95 % bootstrap interval of the mean difference (Harbor - native, "
                        "paired over tasks, games resampled independently) holds 0",
                "per_game": self.per_game, "per_task": self.per_task}


def _native_rewards(system: SS.SystemScore) -> dict[tuple[str, str], float]:
    out = {}
    for c in system.cells():
        v = c.metric("reward")
        if v is not None:
            out[(c.game, c.case_id)] = v
    return out


def _harbor_rewards(system: SS.SystemScore) -> dict[tuple[str, str], float]:
    """Per task, the mean of Harbor's own reward over its scored trials (a trial without a finite reward
    in its reward.json is not Harbor's score of anything)."""
    acc: dict[tuple[str, str], list[float]] = {}
    for c in system.cells():
        if c.status != SC.STATUS_SCORED:
            continue
        v = safe_io.finite_number((getattr(c, "harbor_rewards", None) or {}).get("reward"), 0.0, 1.0)
        if v is not None:
            acc.setdefault((c.game, c.case_id), []).append(v)
    return {k: sum(v) / len(v) for k, v in acc.items()}


def _answer_digests(system: SS.SystemScore, harbor: bool) -> dict[tuple[str, str], set[str]]:
    """Per task, the SHA-256 of the answer.json each scored cell left (read bounded, never through a link)."""
    out: dict[tuple[str, str], set[str]] = {}
    for c in system.cells():
        if c.status != SC.STATUS_SCORED:
            continue
        path = (system.results / c.trial / TR.ANSWER_ARTIFACT if harbor and getattr(c, "trial", "")
                else R.cell_dir(system.results, c.game, c.case_id) / R.ANSWER_FILE)
        try:
            data, size = safe_io.read_bounded(path, safe_io.MAX_RECORD_BYTES)
        except OSError:
            continue
        if size <= safe_io.MAX_RECORD_BYTES:
            out.setdefault((c.game, c.case_id), set()).add(sha256_bytes(data))
    return out


def _agent_of_native(system: SS.SystemScore) -> str:
    seen: dict[str, int] = {}
    for c in system.cells():
        rec = R.read_run(R.cell_dir(system.results, c.game, c.case_id))[0]
        if rec is None:
            continue
        cmd = rec.extras.get("agent_cmd") or rec.extras.get("runner")
        label = f"{rec.model}" + (f" ({cmd})" if isinstance(cmd, str) and cmd else "")
        seen[label] = seen.get(label, 0) + 1
    return "; ".join(seen) or "-"


def _agent_of_job(system: SS.SystemScore) -> str:
    models = sorted({str(c.model) for c in system.cells() if c.model})  # "<agent>:<model>" as the trials name it
    return ", ".join(models) or ", ".join((system.harbor or {}).get("agents") or []) or "-"


def compare_systems(native: SS.SystemScore, harbor: SS.SystemScore, n_boot: int = N_BOOT,
                    seed: int = SEED) -> Parity:
    protocols = {c.protocol for c in native.cells() if c.protocol} | \
        {c.protocol for c in harbor.cells() if c.protocol}
    if len(protocols) > 1:
        raise ParityError(f"{native.results.name} and {harbor.results.name} ran different protocols "
                          f"({', '.join(sorted(protocols))}): not the same agent")
    nat, har = _native_rewards(native), _harbor_rewards(harbor)
    paired = sorted(set(nat) & set(har))
    if not paired:
        raise ParityError(f"{native.results.name} and {harbor.results.name} scored no task in common")
    p = Parity(native=native.results.name, job=harbor.results.name, protocol=next(iter(protocols), None),
               native_agent=_agent_of_native(native), harbor_agent=_agent_of_job(harbor),
               n_paired=len(paired), n_native_only=len(set(nat) - set(har)),
               n_harbor_only=len(set(har) - set(nat)))
    nd, hd = _answer_digests(native, False), _answer_digests(harbor, True)
    p.n_same_answer = sum(1 for k in paired if nd.get(k) and nd.get(k) == hd.get(k))
    games: dict[str, list[tuple[str, float, float]]] = {}
    for g, cid in paired:
        games.setdefault(g, []).append((cid, nat[(g, cid)], har[(g, cid)]))
        p.per_task.append({"task": f"{g}-{cid}", "game": g, "case_id": cid, "native": round(nat[(g, cid)], 6),
                           "harbor": round(har[(g, cid)], 6), "difference": round(har[(g, cid)] - nat[(g, cid)], 6),
                           "same_answer": bool(nd.get((g, cid))) and nd.get((g, cid)) == hd.get((g, cid))})
    reps = []
    for g, rows in sorted(games.items()):
        d = [h - n for _, n, h in rows]
        r = SS.bootstrap_means(d, n_boot, seed, g, "parity")
        ci = SS.percentile_ci(r)
        reps.append(r)
        p.per_game[g] = {"n_tasks": len(rows), "native": round(float(np.mean([n for _, n, _ in rows])), 6),
                         "harbor": round(float(np.mean([h for _, _, h in rows])), 6),
                         "mean_difference": round(float(np.mean(d)), 6),
                         "difference_ci95": [round(ci[0], 6), round(ci[1], 6)] if ci else None}
    gm = list(p.per_game.values())
    p.mean_native = round(float(np.mean([x["native"] for x in gm])), 6)
    p.mean_harbor = round(float(np.mean([x["harbor"] for x in gm])), 6)
    p.mean_difference = round(float(np.mean([x["mean_difference"] for x in gm])), 6)
    if reps and all(r is not None for r in reps):
        ci = SS.percentile_ci(np.mean(np.vstack(reps), axis=0))
        p.difference_ci95 = [round(ci[0], 6), round(ci[1], 6)] if ci else None
    return p


def compare_runs(native: Path, job: Path, tasks_root: Path | None, n_boot: int = N_BOOT,
                 seed: int = SEED) -> Parity:
    """Score both sides with the project's scorer and compare them task by task."""
    # deferred: the scoring modules (about 0.2 s of CPU): publish reads this module's Parity and sem_str without them
    from video_arena.scoring import harbor_jobs as HJ
    from video_arena.scoring.scorer import score_results

    if HJ.is_harbor_job(native):
        raise ParityError(f"--parity {native} is a Harbor job; it takes the native results folder (run-a / run-b)")
    try:
        ns = score_results(native, tasks_root, n_boot=0, progress=False)
        hs = HJ.score_job(job, tasks_root, n_boot=0, progress=False)
    except SC.ScoringInputError as exc:
        raise ParityError(str(exc)) from None
    return compare_systems(ns, hs, n_boot=n_boot, seed=seed)


def sem_str(values: list[float]) -> str | None:
    """Harbor's `mean +/- sample SEM` (SEM undefined for one run: said so)."""
    vals = [v for v in values if v is not None]
    if not vals:
        return None
    m = sum(vals) / len(vals)
    if len(vals) < 2:
        return f"{m:.4f} (1 run; SEM undefined)"
    sem = (sum((v - m) ** 2 for v in vals) / (len(vals) * (len(vals) - 1))) ** 0.5
    return f"{m:.4f} +/- {sem:.4f}"
