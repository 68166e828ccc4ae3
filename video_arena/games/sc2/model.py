"""V_t for StarCraft II: red's probability of winning from the player stats, a logistic model cross-fitted
on the committed replays.

    python -m video_arena.games.sc2.report fit          # fit the K fold models, write data/model.json
    python -m video_arena.games.sc2.report table        # the held-out calibration table (markdown)
    python -m video_arena.games.sc2.report compare      # held-out scores of other feature sets (the choice of USED)
    python -m video_arena.games.sc2.report cases        # the built cases: selection, events, class shares, bands

Model: P(red wins) = sigmoid(w . [f, f * phase]) with f the USED entries of match.features (red minus blue) and
phase = min(real minutes / PHASE_MIN, 1); no intercept, and every training row is also given mirrored (sides swapped,
f negated, label flipped), so the model has no side bias and V(swapped) = 1 - V.  L2-penalised maximum
likelihood (Newton), each replay weighing the same whatever its length.

Cross-fitting: every usable replay (the cases and the fitting set) goes to one of K folds (ordered by SHA-256
of its content); fold j's model is fitted on the replays of the other folds, and a replay's V_t always comes
from its own fold's model, one that never saw it.  The calibration table scores those held-out predictions at
every stats snapshot (each 10 game seconds) by game phase against a constant 0.5 and against the army-value
ratio rule (red's share of the two armies' value).  A match from outside the committed replays (a user's
replay, `import-cases --sc2replay`) takes the fold model its match key's digest names (`fold_of_key`).

data/model.json also lists, per replay file (SHA-256), its match key (match.match_key) and length in game
loops (`replays`): what the plugin needs to name the fitting set without reading a replay.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from video_arena.digests import derived_int, sha256_text
from video_arena.games.logistic import fit as _fit, scores
from video_arena.games.sc2 import match as M

MODEL = Path(__file__).resolve().parent / "data" / "model.json"

K = 5
L2 = 1.0
#: The features the model uses, chosen with `python -m video_arena.games.sc2.report compare` (held-out scores of
#: a few feature sets on the same folds, docs/CASES.md): with every feature of match.FEATURES the fit
#: over-fits these 51 replays (late-game log loss near 1); the log army ratio with its phase interaction
#: scores best.  (The choice itself looked at held-out scores: a mild optimism in the table.)
USED = ("log army ratio",)
PHASE_MIN = 15.0
PHASES = ((0, 5), (5, 10), (10, 15), (15, None))   # real minutes
#: the `format` of the fitted V_t model file (data/model.json)
MODEL_FORMAT = "video-arena-sc2-model/1"
METHOD = f"logistic regression on player-stats differences and their interaction with game phase, L2 {L2}, {K}-fold cross-fitted"


def load_model() -> dict[str, Any]:
    if not MODEL.is_file():
        raise M.SC2Error(f"{MODEL} is missing: run `python -m video_arena.games.sc2.report fit`")
    return json.loads(MODEL.read_text(encoding="utf-8"))


def model_digest(mdl: dict[str, Any]) -> str:
    return sha256_text(json.dumps({k: mdl[k] for k in ("folds", "coef")}, sort_keys=True))[:16]


def coef_for(mdl: dict[str, Any], sha256: str) -> list[float]:
    fold = mdl["folds"].get(sha256)
    if fold is None:
        raise KeyError(f"replay {sha256[:12]} is in no fold of the model: refit it")
    return mdl["coef"][fold]


def fitted_keys(mdl: dict[str, Any]) -> dict[str, str]:
    """{match key (match.match_key): SHA-256 of its file} of every replay the fold models were fitted on."""
    return {r["match_key"]: sha for sha, r in mdl["replays"].items()}


def fold_of_key(mdl: dict[str, Any], key: str) -> int:
    """The fold model a match's V_t comes from: a committed replay's own fold (the model fitted without it,
    whatever file it is read from); any other match, the fold its match key's digest names (each fold model
    was fitted on the other folds' replays, none of them this match)."""
    sha = fitted_keys(mdl).get(key)
    if sha is not None:
        return mdl["folds"][sha]
    return derived_int(f"video-arena/sc2/import-fold/{key}") % mdl["k"]


def design(f: list[float], loop: float, used: tuple[str, ...] = USED) -> list[float]:
    phase = min(M.real_s(loop) / 60 / PHASE_MIN, 1.0)
    g = [f[M.FEATURES.index(name)] for name in used]
    return g + [v * phase for v in g]


def predict(coef: list[float], m: M.Match, loop: float, used: tuple[str, ...] = USED) -> float:
    f = M.features(m, int(loop))
    if f is None:
        return 0.5
    z = sum(c * x for c, x in zip(coef, design(f, loop, used)))
    return 1 / (1 + math.exp(-max(-40.0, min(40.0, z))))


def rows(m: M.Match) -> list[tuple[int, list[float]]]:
    """(loop, features) at every stats snapshot both players have."""
    out = []
    for loop in sorted({s[0] for s in m.stats}):
        f = M.features(m, loop)
        if f is not None and loop > 0:
            out.append((loop, f))
    return out


def folds_of(shas: list[str]) -> dict[str, int]:
    order = sorted(shas, key=lambda s: sha256_text(f"video-arena/sc2/fold/{s}"))
    return {s: k % K for k, s in enumerate(order)}


def fit_all(records: dict[str, dict[str, Any]], used: tuple[str, ...] = USED, l2: float = L2) -> dict[str, Any]:
    data = {}
    for rec in records.values():
        m = M.decode(rec)
        data[rec["source"]["sha256"]] = (m, rows(m))
    folds = folds_of(sorted(data))
    coefs = []
    for j in range(K):
        X, y, w = [], [], []
        for sha, (m, rs) in data.items():
            if folds[sha] == j or not rs:
                continue
            red_won = 1.0 if m.winner == 0 else 0.0
            for loop, f in rs:
                d = design(f, loop, used)
                X += [d, [-v for v in d]]
                y += [red_won, 1 - red_won]
                w += [1 / len(rs)] * 2
        coefs.append([round(float(c), 6) for c in _fit(np.array(X), np.array(y), np.array(w), l2)])
    replays = {rec["source"]["sha256"]: {"match_key": M.match_key(rec), "end_loop": int(rec["match"]["end_loop"])}
               for rec in sorted(records.values(), key=lambda r: r["source"]["sha256"])}
    return {"format": MODEL_FORMAT, "method": METHOD, "features": list(used),
            "design": "features, then features x phase (phase = min(real minutes / %g, 1))" % PHASE_MIN,
            "k": K, "l2": L2, "folds": folds, "coef": coefs,
            "fitted_on": f"{len(data)} usable replays (the cases and the fitting set), cross-fitted",
            "replays": replays}


def calibration(records: dict[str, dict[str, Any]], mdl: dict[str, Any]) -> list[dict[str, Any]]:
    """Held-out Brier and log loss by phase: model, constant 0.5, army-value ratio."""
    acc: dict[str, dict[str, list[float]]] = {}
    for rec in records.values():
        m = M.decode(rec)
        coef = coef_for(mdl, rec["source"]["sha256"])
        y = 1.0 if m.winner == 0 else 0.0
        for loop, _ in rows(m):
            minutes = M.real_s(loop) / 60
            ph = next(f"{a}-{b} min" if b else f"{a}+ min" for a, b in PHASES if minutes >= a and (b is None or minutes < b))
            for name, p in (("model", predict(coef, m, loop, tuple(mdl["features"]))), ("constant 0.5", 0.5), ("army ratio", M.army_ratio(m, loop))):
                for key in (ph, "all"):
                    acc.setdefault(key, {}).setdefault(name, []).append(p)
            for key in (ph, "all"):
                acc[key].setdefault("y", []).append(y)
    out = []
    order = [f"{a}-{b} min" if b else f"{a}+ min" for a, b in PHASES] + ["all"]
    for key in order:
        if key not in acc:
            continue
        y = np.array(acc[key]["y"])
        row = {"phase": key, "n": int(len(y))}
        for name in ("model", "army ratio", "constant 0.5"):
            row[name] = scores(acc[key][name], y)
        out.append(row)
    return out


def markdown(table: list[dict[str, Any]]) -> str:
    lines = ["| phase (real time) | snapshots | model Brier | model log loss | army ratio Brier | army ratio log loss | 0.5 Brier | 0.5 log loss |",
             "|---|---|---|---|---|---|---|---|"]
    for r in table:
        lines.append(f"| {r['phase']} | {r['n']} | {r['model']['brier']} | {r['model']['log_loss']} | "
                     f"{r['army ratio']['brier']} | {r['army ratio']['log_loss']} | {r['constant 0.5']['brier']} | "
                     f"{r['constant 0.5']['log_loss']} |")
    return "\n".join(lines)


# -- the visible V_t: what a watcher of the picture can compute ---------------------------------------------

VISIBLE_MODEL = MODEL.parent / "visible_model.json"
#: visible_model.json's `format` key: the visible-feature V_t a perfect watcher could compute (docs/CASES.md)
VISIBLE_MODEL_FORMAT = "video-arena-sc2-visible-model/1"
#: The visible features' keys (plugin.visible_features, the pixel reader's states): the town halls standing
#: (rings) and the supply of the army units (non-worker discs) on the map, each side.
VISIBLE = ("bases_red", "bases_blue", "army_red", "army_blue")


def visible_state(m: M.Match, loop: float) -> dict[str, Any]:
    """What the picture shows at `loop`: town halls standing (a ring, built or not) and army supply per side."""
    out: dict[str, Any] = {}
    for s, name in enumerate(M.SIDES):
        out[f"bases_{name}"] = sum(1 for b in m.buildings if b.town and b.side == s and b.alive(loop))
    for s, name in enumerate(M.SIDES):
        out[f"army_{name}"] = round(sum(u.supply for u in m.units if u.side == s and not u.worker
                                        and u.born <= loop and (u.died is None or loop < u.died)), 1)
    return out


def visible_design(f: dict[str, Any]) -> list[float]:
    phase = min(float(f["t"]) / 60 / PHASE_MIN, 1.0)
    g = [math.log((float(f["army_red"]) + 4) / (float(f["army_blue"]) + 4)), float(f["bases_red"]) - float(f["bases_blue"])]
    return g + [v * phase for v in g]


def fit_visible(records: dict[str, dict[str, Any]], keys: frozenset[str], l2: float = L2) -> dict[str, Any]:
    """One model on the replays whose match key is in `keys` (the fitting set: no built-in case), at every
    stats snapshot's moment, from the visible state there."""
    X, y, w = [], [], []
    n = 0
    for rec in sorted(records.values(), key=lambda r: r["source"]["sha256"]):
        if M.match_key(rec) not in keys:
            continue
        m = M.decode(rec)
        loops = [loop for loop in sorted({s[0] for s in m.stats}) if loop > 0]
        if not loops:
            continue
        n += 1
        red_won = 1.0 if m.winner == 0 else 0.0
        for loop in loops:
            d = visible_design({"t": M.real_s(loop), **visible_state(m, loop)})
            X += [d, [-v for v in d]]
            y += [red_won, 1 - red_won]
            w += [1 / len(loops)] * 2
    coef = [round(float(c), 6) for c in _fit(np.array(X), np.array(y), np.array(w), l2)]
    return {"format": VISIBLE_MODEL_FORMAT, "features": list(VISIBLE),
            "design": "log((army_red + 4) / (army_blue + 4)), bases_red - bases_blue, then both x phase "
                      "(phase = min(real minutes / %g, 1)); no intercept, mirrored rows" % PHASE_MIN,
            "l2": l2, "coef": coef, "fitted_on": f"{n} replays of the fitting set (no built-in case)"}


def load_visible_model() -> dict[str, Any]:
    if not VISIBLE_MODEL.is_file():
        raise M.SC2Error(f"{VISIBLE_MODEL} is missing: run `python -m video_arena.games.sc2.report fit-visible`")
    doc = json.loads(VISIBLE_MODEL.read_text(encoding="utf-8"))
    if not isinstance(doc, dict) or doc.get("format") != VISIBLE_MODEL_FORMAT:
        raise M.SC2Error(f"{VISIBLE_MODEL} is not {VISIBLE_MODEL_FORMAT}: run "
                         "`python -m video_arena.games.sc2.report fit-visible`")
    return doc


def visible_value(coef: list[float], f: dict[str, Any]) -> float:
    """V_t from a visible state (its video second `t`, `winner` once the match ended, else "")."""
    if f.get("winner"):
        return 1.0 if f["winner"] == "red" else 0.0
    z = sum(c * x for c, x in zip(coef, visible_design(f)))
    return 1 / (1 + math.exp(-max(-40.0, min(40.0, z))))
