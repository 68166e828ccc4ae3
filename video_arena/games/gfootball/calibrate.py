"""Engine-side chores of the Google Research Football cases (needs scripts/install-gfootball.sh):

    python -m video_arena.games.gfootball.calibrate simulate [--cases 20] [--seed 20250] [--jobs 2]
        play the selected matches into .cache/gfootball/runs/, in parallel
    python -m video_arena.games.gfootball.calibrate simulate --seed 1
        the held-out calibration matches (selection seed CALIBRATION_SEED, none of them a case)
    python -m video_arena.games.gfootball.calibrate fit [--cases 20] [--seed 1]
        fit the goal-rate model on the calibration matches' final scores -> data/goal_model.json
    python -m video_arena.games.gfootball.calibrate keys [--cases 20] [--seed 1]
        the match_key of every fitting match -> data/fitting_keys.json (an imported dump of one is refused)
    python -m video_arena.games.gfootball.calibrate measure --events N [--rollouts 32] [--max-left 600]
        V_t as built vs the full definition (32 rollouts to the end of the match) at N events

The goal-rate model: each team's goals in a match are Poisson with mean T * exp(a + b * (own difficulty -
opponent's difficulty)), T the match's steps; (a, b) by maximum likelihood (Newton's method).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from video_arena.games.base import BUILTIN_CASES as DEFAULT_CASES, SELECTION_SEED as DEFAULT_SEED
from video_arena.games.gfootball import plugin as P

#: The goal-rate model is fitted on matches of this selection seed, never on the cases' own matches
#: (DEFAULT_SEED): a case's V_t must not depend on how that very match ended.
CALIBRATION_SEED = 1


def fit_poisson(rows: list[tuple[int, float, int]]) -> tuple[float, float]:
    """(a, b) maximising sum_i log Poisson(g_i; T_i exp(a + b x_i)) over rows (g, x, T)."""
    a, b = math.log(max(1e-9, sum(g for g, _, _ in rows) / sum(t for _, _, t in rows))), 0.0
    for _ in range(100):
        ga = gb = haa = hab = hbb = 0.0
        for g, x, t in rows:
            mu = t * math.exp(a + b * x)
            ga += g - mu
            gb += (g - mu) * x
            haa += mu
            hab += mu * x
            hbb += mu * x * x
        det = haa * hbb - hab * hab
        if det <= 0:
            break
        da = (hbb * ga - hab * gb) / det
        db = (haa * gb - hab * ga) / det
        a, b = a + da, b + db
        if abs(da) + abs(db) < 1e-12:
            break
    return a, b


def cmd_simulate(a) -> int:
    specs = P.match_specs(a.cases, a.seed)
    t0 = time.monotonic()

    def one(spec):
        t = time.monotonic()
        run = P.simulate(spec)
        return spec, run, time.monotonic() - t

    with ThreadPoolExecutor(max_workers=a.jobs) as pool:
        for spec, run, dt in pool.map(one, specs):
            print(f"{P.spec_id(spec)} L{spec['left_difficulty']} R{spec['right_difficulty']} "
                  f"score {run['final_score']} events {len(run['events'])} wall {dt:.0f}s engine {run['timing_s']}",
                  flush=True)
    print(f"{len(specs)} matches in {time.monotonic() - t0:.0f}s")
    return 0


def cmd_fit(a) -> int:
    rows, matches = [], []
    case_ids = {P.spec_id(s) for s in P.match_specs(DEFAULT_CASES, DEFAULT_SEED)}
    specs = P.match_specs(a.cases, a.seed)
    shared = sorted(case_ids & {P.spec_id(s) for s in specs})
    if shared:
        print(f"error: fitting on the cases' own matches ({', '.join(shared[:3])}...): use a held-out seed "
              f"(default {CALIBRATION_SEED})", file=sys.stderr)
        return 2
    for spec in specs:
        run = P.simulate(spec)   # cached
        gl, gr = run["final_score"]
        d = spec["left_difficulty"] - spec["right_difficulty"]
        rows += [(gl, d, spec["steps"]), (gr, -d, spec["steps"])]
        matches.append([P.spec_id(spec), spec["left_difficulty"], spec["right_difficulty"], gl, gr])
    ca, cb = fit_poisson(rows)
    doc = {
        "form": "goals per step = exp(a + b * (own difficulty - opponent difficulty))",
        "a": round(ca, 6), "b": round(cb, 6),
        "fitted_on": f"final scores of {len(matches)} held-out built-in-AI matches (selection seed {a.seed}; "
                     f"the cases are seed {DEFAULT_SEED}), maximum-likelihood Poisson regression",
        "matches": matches,
    }
    P.GOAL_MODEL.parent.mkdir(parents=True, exist_ok=True)
    P.GOAL_MODEL.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({k: doc[k] for k in ("a", "b")}), f"goals/match at equal strength: {3000 * math.exp(ca):.2f}")
    return 0


def cmd_keys(a) -> int:
    """The match_key of every match the goal-rate model was fitted on (data/goal_model.json `matches`), from the
    same simulated matches `fit` read: an imported dump of one of them is refused (data/fitting_keys.json)."""
    model = P.load_goal_model()
    fitted = [m[0] for m in model["matches"]]
    specs = {P.spec_id(s): s for s in P.match_specs(a.cases, a.seed)}
    missing = [mid for mid in fitted if mid not in specs]
    if missing:
        print(f"error: the model was fitted on {', '.join(missing[:3])}..., not among --cases {a.cases} of --seed "
              f"{a.seed}", file=sys.stderr)
        return 2
    keys = {}
    for mid in fitted:
        rec = P.record_of_run(specs[mid], P.simulate(specs[mid]))   # cached
        keys[mid] = P.PLUGIN.match_key(rec)
    doc = {"what": "match_key (plugin.stream_key: SHA-256 of the recorded state stream of engine steps 1..3000) of every "
                   "match data/goal_model.json was fitted on",
           "goal_model_fitted_on": model["fitted_on"], "keys": keys}
    P.FITTING_KEYS.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"{len(keys)} keys -> {P.FITTING_KEYS}")
    return 0


def cmd_measure(a) -> int:
    """Full-definition V_t (rollouts to the end) against the built estimate at events with at most
    --max-left steps to go (the full rollouts' cost grows with the steps left)."""
    P.load_goal_model()
    picks = []
    for spec in P.match_specs(a.cases, a.seed):
        rec = P.load_or_simulate(spec)
        values = P.PLUGIN.evaluate(rec)
        for step, v_est, e in zip(P.PLUGIN.event_steps(rec), values[1:], P.PLUGIN.replay(rec)):
            if spec["steps"] - step <= a.max_left:
                picks.append((spec, step, e.type, v_est))
    picks = picks[:: max(1, len(picks) // a.events)][: a.events]
    errs = []

    def one(pick):
        spec, step, etype, v_est = pick
        t = time.monotonic()
        out = P.run_dir() / f"full-{P.spec_id(spec)}-{step}-r{a.rollouts}.json"
        if out.is_file():   # measured before (the engine is deterministic under its seeds)
            return pick, json.loads(out.read_text(encoding="utf-8")), 0.0
        full = P.simulate(spec, {"rollouts": a.rollouts, "horizon": 0, "rollout_seed": 7}, at_steps=[step], out=out)
        return pick, full, time.monotonic() - t

    with ThreadPoolExecutor(max_workers=a.jobs) as pool:
        for (spec, step, etype, v_est), full, dt in pool.map(one, picks):
            outs = full["rollouts"][0]["outcomes"]
            v_full = sum(1.0 if gl > gr else 0.5 if gl == gr else 0.0 for gl, gr, _ in outs) / len(outs)
            se = math.sqrt(max(v_full * (1 - v_full), 0.25 / len(outs)) / len(outs))
            errs.append(abs(v_full - v_est))
            print(f"{P.spec_id(spec)} step {step} ({spec['steps'] - step} left) {etype}: full {v_full:.3f} "
                  f"(+-{se:.3f}, {len(outs)} rollouts) est {v_est:.3f} |diff| {abs(v_full - v_est):.3f}  "
                  + (f"({dt:.0f}s engine wall)" if dt else "(measured before)"), flush=True)
    if errs:
        print(f"{len(errs)} events: mean |full - estimate| {sum(errs) / len(errs):.3f}, max {max(errs):.3f}")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m video_arena.games.gfootball.calibrate", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("simulate", "fit", "keys", "measure"):
        p = sub.add_parser(name)
        p.add_argument("--cases", type=int, default=DEFAULT_CASES)
        p.add_argument("--seed", type=int, default=DEFAULT_SEED if name == "measure" else CALIBRATION_SEED)
        if name == "simulate":
            p.add_argument("--jobs", type=int, default=1)
        if name == "measure":
            p.add_argument("--events", type=int, default=6)
            p.add_argument("--rollouts", type=int, default=32)
            p.add_argument("--max-left", type=int, default=600)
            p.add_argument("--jobs", type=int, default=1)
    a = ap.parse_args(argv)
    try:
        return {"simulate": cmd_simulate, "fit": cmd_fit, "keys": cmd_keys, "measure": cmd_measure}[a.cmd](a)
    except P.GFootballError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
