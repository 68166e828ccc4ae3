"""V_t for StarCraft II: red's probability of winning from the player stats, a logistic model cross-fitted
on the committed replays.

    python -m video_arena.games.sc2.model fit          # fit the K fold models, write data/model.json
    python -m video_arena.games.sc2.model table        # the held-out calibration table (markdown)
    python -m video_arena.games.sc2.model compare      # held-out scores of other feature sets (the choice of USED)
    python -m video_arena.games.sc2.model cases        # the built cases: selection, events, class shares, bands

Model: P(red wins) = sigmoid(w . [f, f * phase]) with f the USED entries of match.features (red minus blue) and
phase = min(real minutes / PHASE_MIN, 1); no intercept, and every training row is also given mirrored (sides swapped,
f negated, label flipped), so the model has no side bias and V(swapped) = 1 - V.  L2-penalised maximum
likelihood (Newton), each replay weighing the same whatever its length.

Cross-fitting: every usable replay (the cases and the fitting set) goes to one of K folds (ordered by SHA-256
of its content); fold j's model is fitted on the replays of the other folds, and a replay's V_t always comes
from its own fold's model, one that never saw it.  The calibration table scores those held-out predictions at
every stats snapshot (each 10 game seconds) by game phase against a constant 0.5 and against the army-value
ratio rule (red's share of the two armies' value).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
from typing import Any

import numpy as np

from video_arena.games.sc2 import match as M

K = 5
L2 = 1.0
#: The features the model uses, chosen with `python -m video_arena.games.sc2.model compare` (held-out scores of
#: a few feature sets on the same folds, docs/CASES.md): with every feature of match.FEATURES the fit
#: over-fits these 51 replays (late-game log loss near 1); the log army ratio with its phase interaction
#: scores best.  (The choice itself looked at held-out scores: a mild optimism in the table.)
USED = ("log army ratio",)
PHASE_MIN = 15.0
PHASES = ((0, 5), (5, 10), (10, 15), (15, None))   # real minutes
METHOD = f"logistic regression on player-stats differences and their interaction with game phase, L2 {L2}, {K}-fold cross-fitted"


def load_model() -> dict[str, Any]:
    from video_arena.games.sc2.plugin import MODEL, SC2Error

    if not MODEL.is_file():
        raise SC2Error(f"{MODEL} is missing: run `python -m video_arena.games.sc2.model fit`")
    return json.loads(MODEL.read_text(encoding="utf-8"))


def model_digest(mdl: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps({k: mdl[k] for k in ("folds", "coef")}, sort_keys=True).encode()).hexdigest()[:16]


def coef_for(mdl: dict[str, Any], sha256: str) -> list[float]:
    fold = mdl["folds"].get(sha256)
    if fold is None:
        raise KeyError(f"replay {sha256[:12]} is in no fold of the model: refit it")
    return mdl["coef"][fold]


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


def fit(X: np.ndarray, y: np.ndarray, w: np.ndarray, l2: float = L2) -> np.ndarray:
    beta = np.zeros(X.shape[1])
    for _ in range(50):
        p = 1 / (1 + np.exp(-np.clip(X @ beta, -40, 40)))
        g = X.T @ (w * (p - y)) + l2 * beta
        Hm = (X * (w * p * (1 - p))[:, None]).T @ X + l2 * np.eye(X.shape[1])
        step = np.linalg.solve(Hm, g)
        beta -= step
        if np.abs(step).max() < 1e-10:
            break
    return beta


def folds_of(shas: list[str]) -> dict[str, int]:
    order = sorted(shas, key=lambda s: hashlib.sha256(f"video-arena/sc2/fold/{s}".encode()).hexdigest())
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
        coefs.append([round(float(c), 6) for c in fit(np.array(X), np.array(y), np.array(w), l2)])
    return {"format": "video-arena-sc2-model/1", "method": METHOD, "features": list(used),
            "design": "features, then features x phase (phase = min(real minutes / %g, 1))" % PHASE_MIN,
            "k": K, "l2": L2, "folds": folds, "coef": coefs,
            "fitted_on": f"{len(data)} usable replays (the cases and the fitting set), cross-fitted"}


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
            p = np.clip(np.array(acc[key][name]), 0.01, 0.99)
            row[name] = {"brier": round(float(np.mean((p - y) ** 2)), 4),
                         "log_loss": round(float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p))), 4)}
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


def cases_report() -> int:
    """What the built cases hold (tasks/sc2): read from the committed ground truth only."""
    from collections import Counter

    from video_arena import paths
    from video_arena.core.tasks import load_game
    from video_arena.games.sc2 import plugin as P

    root = paths.default_tasks_root() / "sc2"
    ids = [c["case_id"] for c in json.loads((root / "cases.json").read_text(encoding="utf-8"))["cases"]]
    if not ids:
        print("tasks/sc2 has no cases", file=sys.stderr)
        return 1
    d = load_game("sc2", paths.default_tasks_root())
    types, shift, n = Counter(), [], 0
    pairs, last_ok, dur = [], 0, []
    print("| case | replay (test_replays/...) | release | real minutes | events |")
    print("|---|---|---|---|---|")
    for cid in ids:
        gt = json.loads((root / "gt" / f"{cid}.json").read_text(encoding="utf-8"))
        rec = gt["record"]
        evs = P.events(rec)
        print(f"| {cid} | {rec['source']['path'][len('test_replays/'):]} | {rec['match']['release']} | "
              f"{P.duration_s(rec) / 60:.1f} | {len(gt['events'])} |")
        dur.append(P.duration_s(rec))
        for e, row in zip(evs, gt["events"]):
            types[row["type"]] += 1
            shift.append(row["t"] - M.real_s(e.loop))
            pairs.append((row["v_before"], row["v_after"]))
        n += len(gt["events"])
        v_last_model = gt["events"][-1]["v_before"]          # the model's V at the last event before `win`
        last_ok += d.state_of(v_last_model) == gt["events"][-1]["actor"]
    print(f"\n{len(ids)} cases, {sum(dur) / 60:.0f} real minutes ({min(dur) / 60:.1f}-{max(dur) / 60:.1f} each); "
          f"{n} events: " + ", ".join(f"{k} {v}" for k, v in types.most_common()))
    print(f"event t minus the event's moment: {min(shift):.2f}-{max(shift):.2f} s "
          f"({sum(1 for s in shift if s >= 1 - 1e-9)} events moved past their first frame by an earlier one)")
    print(f"the model's V before the `win` row is on the winner's side of the band in {last_ok} of {len(ids)} cases "
          "(V after it is the result)")
    print("\n| band | delta up | down | flat | state red | blue | even |\n|---|---|---|---|---|---|---|")
    for band in (0.03, 0.05, 0.08, 0.10):
        dc, sc = Counter(), Counter()
        for vb, va in pairs:
            dc["up" if va - vb > band else "down" if vb - va > band else "flat"] += 1
            sc["red" if va > 0.5 + band else "blue" if va < 0.5 - band else "even"] += 1
        f = lambda c, k: f"{100 * c[k] / len(pairs):.1f} %"  # noqa: E731
        mark = " (game.toml)" if abs(band - d.band) < 1e-9 else ""
        print(f"| {band:g}{mark} | {f(dc, 'up')} | {f(dc, 'down')} | {f(dc, 'flat')} | {f(sc, 'red')} | {f(sc, 'blue')} | {f(sc, 'even')} |")
    return 0


def main(argv: list[str] | None = None) -> int:
    from video_arena.games.sc2 import plugin as P
    from video_arena.progress import bar as progress_bar

    ap = argparse.ArgumentParser(prog="python -m video_arena.games.sc2.model", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["fit", "table", "compare", "cases"])
    a = ap.parse_args(argv)
    if a.command == "cases":
        return cases_report()
    with progress_bar(len(P.replay_files()), "sc2 replays", "replay") as bar:
        records, excluded = P.all_replays(progress=lambda done, total: bar.update(1))
    if a.command == "compare":
        print("| features (each with its phase interaction) | L2 | held-out Brier | held-out log loss | 15+ min log loss |")
        print("|---|---|---|---|---|")
        for used in (USED, ("log army ratio", "workers/10"), ("log army ratio", "workers/10", "bases"),
                     ("log army ratio", "killed-lost/1000"), tuple(M.FEATURES)):
            for l2 in (L2, 10.0):
                t = calibration(records, fit_all(records, used, l2))
                al, late = t[-1]["model"], next(r for r in t if r["phase"].startswith("15"))["model"]
                print(f"| {', '.join(used)} | {l2:g} | {al['brier']} | {al['log_loss']} | {late['log_loss']} |")
        return 0
    if a.command == "fit":
        mdl = fit_all(records)
        P.MODEL.write_text(json.dumps(mdl, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {P.MODEL.relative_to(P.paths.REPO_ROOT)}: {K} fold models on {len(records)} replays")
    else:
        mdl = load_model()
    print(markdown(calibration(records, mdl)))
    for name, why in sorted(excluded.items()):
        print(f"excluded: {P.upstream_path(P.REPLAYS / name)}: {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
