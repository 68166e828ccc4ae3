"""V_t for DOTA 2: radiant's probability of winning from what the map shows, a logistic model fitted on the
committed matches that are not cases.

    python -m video_arena.games.dota2.report fit      # fit on the matches that are not cases, write data/model.json
    python -m video_arena.games.dota2.report table    # held-out calibration (markdown)

The model: P(radiant wins) = sigmoid(beta . d) with the design d (FEATURES) after the events so far:

    1                       radiant's side (the intercept)
    towers                  (radiant towers standing - dire towers standing) / 11
    barracks                (radiant barracks standing - dire barracks standing) / 6
    roshan                  Roshan kills by radiant - by dire, so far

Every input is on the picture (a building standing or an outline, Roshan's disc taking a side's colour), so a
watcher who reads the video computes V_t exactly (`visible_value` on the pixel reader's features).  The
former definition also took radiant's gold and experience leads (WITH_LEADS), which the picture never shows:
a perfect watcher reached T2 0.59 and T3 0.69 of it (docs/CASES.md).

L2-penalised maximum likelihood (games.logistic), each match weighing the same however long it is, on a
row at every minute mark of every fitting match before its Ancient fell (the state then: what had fallen
up to that second).  After the Ancient falls V_t is the result.

Held out: the calibration table scores (a) the fitting matches by K-fold cross-fitting (each match's
rows predicted by the model fitted on the other folds) and (b) the 20 case matches by the shipped model,
at every minute mark, against a constant 0.5 and the same fit with the gold and experience leads
(WITH_LEADS: what the leads the picture does not show would add).
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from video_arena.digests import sha256_text
from video_arena.games.dota2.match import BUILDING, Match, MatchError
from video_arena.games.logistic import scores
from video_arena.games.logistic import fit

MODEL = Path(__file__).resolve().parent / "data" / "model.json"
FEATURES = ("side", "towers", "barracks", "roshan")
#: The former V_t's design: the visible features and radiant's gold and experience leads (the calibration's comparison).
WITH_LEADS = ("side", "gold", "xp", "gold*phase", "xp*phase", "towers", "barracks", "roshan")
L2 = 1.0
K = 5
PHASE_S = 3600.0
PHASES = ((0, 10), (10, 20), (20, 30), (30, 40), (40, None))   # game minutes
N_TOWERS, N_BARRACKS = 11, 6
#: the `format` of the fitted V_t model file (data/model.json)
MODEL_FORMAT = "video-arena-dota2-model/1"
METHOD = f"logistic regression, L2 {L2}, each match weighing the same, fitted on the committed matches that are not cases"
#: The keys of the visible state after an event (plugin.visible_features, the pixel reader's features).
COUNTS = ("towers_radiant", "towers_dire", "barracks_radiant", "barracks_dire", "roshan_radiant", "roshan_dire")


def state(m: Match, n_events: int) -> dict[str, int]:
    """Towers and barracks standing per side and Roshan kills per side after the first `n_events` events."""
    out = start_state()
    for e in m.events[:n_events]:
        if e.type == "roshan":
            out[f"roshan_{e.actor}"] += 1
        elif e.type in ("tower", "barracks"):
            out[f"{'towers' if e.type == 'tower' else 'barracks'}_{BUILDING[e.building].side}"] -= 1
    return out


def start_state() -> dict[str, int]:
    """The state before anything fell: every building standing, no Roshan kill."""
    return {"towers_radiant": N_TOWERS, "towers_dire": N_TOWERS, "barracks_radiant": N_BARRACKS,
            "barracks_dire": N_BARRACKS, "roshan_radiant": 0, "roshan_dire": 0}


def design(m: Match, t: float, n_events: int, features: tuple[str, ...] = FEATURES) -> list[float]:
    gold, xp = m.lead_at(t)
    return design_of_state(state(m, n_events), t, features, gold, xp)


def design_of_state(s: dict[str, int], t: float, features: tuple[str, ...], gold: float = 0.0,
                    xp: float = 0.0) -> list[float]:
    """The design row of a state (`state`'s keys) at game time t (the leads only where `features` use them)."""
    phase = min(max(t, 0.0) / PHASE_S, 1.0)
    towers = (s["towers_radiant"] - s["towers_dire"]) / N_TOWERS
    barracks = (s["barracks_radiant"] - s["barracks_dire"]) / N_BARRACKS
    roshan = float(s["roshan_radiant"] - s["roshan_dire"])
    values = {"side": 1.0, "gold": gold / 1e4, "xp": xp / 1e4, "gold*phase": gold / 1e4 * phase,
              "xp*phase": xp / 1e4 * phase, "towers": towers, "barracks": barracks, "roshan": roshan}
    return [values[f] for f in features]


def probability(coef: list[float], d: list[float]) -> float:
    z = sum(c * x for c, x in zip(coef, d))
    return 1 / (1 + math.exp(-max(-40.0, min(40.0, z))))


def visible_value(coef: list[float], f: dict[str, Any]) -> float:
    """V_t from a visible state (COUNTS, its video second `t`, the `winner` once an Ancient fell, else "")."""
    if f["winner"]:
        return 1.0 if f["winner"] == "radiant" else 0.0
    return probability(coef, design_of_state({k: f[k] for k in COUNTS}, f["t"], FEATURES))


def value(coef: list[float], m: Match, t: float, n_events: int, features: tuple[str, ...] = FEATURES) -> float:
    """V_t after the first `n_events` events at game time t; after the Ancient, the result."""
    if n_events and m.events[n_events - 1].type == "ancient":
        return 1.0 if m.winner == "radiant" else 0.0
    return probability(coef, design(m, t, n_events, features))


def minute_rows(m: Match) -> list[tuple[float, int]]:
    """(t, events so far) at every minute mark before the Ancient fell."""
    out, k = [], 0
    for minute in range(1, m.end // 60 + 1):
        t = 60.0 * minute
        if t >= m.end:
            break
        while k < len(m.events) and m.events[k].t <= t:
            k += 1
        out.append((t, k))
    return out


def fit_matches(matches: list[Match], features: tuple[str, ...] = FEATURES, l2: float = L2) -> list[float]:
    X, y, w = [], [], []
    for m in matches:
        rows = minute_rows(m)
        won = 1.0 if m.winner == "radiant" else 0.0
        for t, k in rows:
            X.append(design(m, t, k, features))
            y.append(won)
            w.append(1 / len(rows))
    return [round(float(c), 6) for c in fit(np.array(X), np.array(y), np.array(w), l2)]


def folds_of(ids: list[int]) -> dict[int, int]:
    order = sorted(ids, key=lambda i: sha256_text(f"video-arena/dota2/fold/{i}"))
    return {i: k % K for k, i in enumerate(order)}


def fit_model(fitting: dict[int, Match], cases: list[int]) -> dict[str, Any]:
    overlap = set(fitting) & set(cases)
    if overlap:
        raise MatchError(f"the V_t model may not be fitted on a case's match: {sorted(overlap)[:3]}")
    ids = sorted(fitting)
    return {"format": MODEL_FORMAT, "method": METHOD, "features": list(FEATURES),
            "design": "side 1; towers standing difference / 11, barracks / 6, Roshan kills difference",
            "l2": L2, "coef": fit_matches([fitting[i] for i in ids]),
            "fitted_on": {"n_matches": len(ids), "match_ids_sha256": sha256_text(",".join(map(str, ids)))},
            "not_fitted_on": sorted(cases)}


def load_model() -> dict[str, Any]:
    if not MODEL.is_file():
        raise MatchError(f"{MODEL} is missing: run `python -m video_arena.games.dota2.report fit`")
    return json.loads(MODEL.read_text(encoding="utf-8"))


def model_digest(mdl: dict[str, Any]) -> str:
    return sha256_text(json.dumps({k: mdl[k] for k in ("features", "coef")}, sort_keys=True))[:16]


def _phase(t: float) -> str:
    minutes = t / 60
    return next(f"{a}-{b} min" if b else f"{a}+ min" for a, b in PHASES if minutes >= a and (b is None or minutes < b))


def calibration(fitting: dict[int, Match], cases: dict[int, Match], mdl: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """{"fitting matches, K-fold held out": rows, "case matches, shipped model": rows}; a row per phase and
    one for all: Brier and log loss of the model, the same fit with the leads (WITH_LEADS) and a constant 0.5."""

    def table(preds: list[tuple[str, float, float, float, float]]) -> list[dict[str, Any]]:
        out = []
        order = [f"{a}-{b} min" if b else f"{a}+ min" for a, b in PHASES] + ["all"]
        for key in order:
            sel = [p for p in preds if key in ("all", p[0])]
            if not sel:
                continue
            y = [p[1] for p in sel]
            out.append({"phase": key, "n": len(sel), "model": scores([p[2] for p in sel], y),
                        "with the leads": scores([p[3] for p in sel], y), "constant 0.5": scores([p[4] for p in sel], y)})
        return out

    def predictions(m: Match, coef: list[float], leads_coef: list[float]):
        won = 1.0 if m.winner == "radiant" else 0.0
        return [(_phase(t), won, value(coef, m, t, k), value(leads_coef, m, t, k, WITH_LEADS), 0.5)
                for t, k in minute_rows(m)]

    folds = folds_of(sorted(fitting))
    held = []
    for j in range(K):
        train = [fitting[i] for i in sorted(fitting) if folds[i] != j]
        coef, leads_coef = fit_matches(train), fit_matches(train, WITH_LEADS)
        for i in sorted(fitting):
            if folds[i] == j:
                held += predictions(fitting[i], coef, leads_coef)
    leads_all = fit_matches([fitting[i] for i in sorted(fitting)], WITH_LEADS)
    shipped = [p for i in sorted(cases) for p in predictions(cases[i], mdl["coef"], leads_all)]
    return {f"the {len(fitting)} fitting matches, {K}-fold held out": table(held),
            f"the {len(cases)} case matches, the shipped model": table(shipped)}


def markdown(tables: dict[str, list[dict[str, Any]]]) -> str:
    lines = []
    for title, rows in tables.items():
        lines += [f"{title}:", "",
                  "| phase (game time) | minute marks | model Brier | model log loss | with the leads Brier | "
                  "with the leads log loss | 0.5 Brier | 0.5 log loss |", "|---|---|---|---|---|---|---|---|"]
        for r in rows:
            lines.append(f"| {r['phase']} | {r['n']} | {r['model']['brier']} | {r['model']['log_loss']} | "
                         f"{r['with the leads']['brier']} | {r['with the leads']['log_loss']} | "
                         f"{r['constant 0.5']['brier']} | {r['constant 0.5']['log_loss']} |")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
