# /// script
# requires-python = ">=3.11"
# dependencies = []
# ///
"""Video-Arena's headline as a Harbor dataset metric (`uv-script`): the mean of per-game means.

Standard library only; Harbor runs it as `uv run metric.py -i REWARDS.jsonl -o METRIC.json`, one line
per trial that has rewards (Harbor leaves out a trial without a verifier result: a harness error is
missing, not 0.0, as in `video-arena score`).  Each reward dict is the verifier's reward.json
(harbor_templates/tests/score_harbor.py): the judge's four metrics plus `"case:GAME/CASE_ID": 1`.

The attempts of one case are averaged first, a game's mean is the mean of its cases, and
the overall is the mean of the game means (video_arena/scoring/statistics.py).  Writes
{"reward": headline, "n_games": G, "n_cases": C, "n_trials": N, "n_unnamed": U,
 "reward/GAME": per-game headline, ...}; a line that names no case (a verifier that failed before
reading its case.json) is counted in n_unnamed and left out.
"""
from __future__ import annotations

import argparse
import json
import math
import sys

#: the reward key prefix naming the case (score_harbor.CASE_KEY_PREFIX; a test holds the two equal)
CASE_KEY_PREFIX = "case:"
#: the headline: the judge's first REWARD_KEYS entry (a test holds them equal).  Only it: the judge's
#: T2/T3 are 0.0 in reward.json where not computable, which `score`'s headline T2/T3 leave out.
METRICS = ("reward",)


def _number(v):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        f = float(v)
    except OverflowError:
        return None
    return f if math.isfinite(f) else None


def _mean(xs):
    return sum(xs) / len(xs)


def headline(lines):
    """The metric dict of an iterable of JSON lines (one trial's reward dict, or null, each)."""
    by_case: dict[tuple[str, str], dict[str, list[float]]] = {}
    n_trials = n_unnamed = 0
    for line in lines:
        line = line.strip()
        if not line:
            continue
        rewards = json.loads(line)
        if not isinstance(rewards, dict):
            continue  # null: a trial without rewards, missing
        names = [k for k, v in rewards.items() if isinstance(k, str) and k.startswith(CASE_KEY_PREFIX)
                 and _number(v) == 1.0 and "/" in k[len(CASE_KEY_PREFIX):]]
        if len(names) != 1:
            n_unnamed += 1
            continue
        game, case_id = names[0][len(CASE_KEY_PREFIX):].split("/", 1)
        n_trials += 1
        slot = by_case.setdefault((game, case_id), {m: [] for m in METRICS})
        for m in METRICS:
            v = _number(rewards.get(m))
            if v is not None:
                slot[m].append(v)
    out: dict[str, float | int] = {}
    games = sorted({g for g, _ in by_case})
    for m in METRICS:
        game_means = {}
        for g in games:
            case_means = [_mean(v[m]) for (gg, _), v in by_case.items() if gg == g and v[m]]
            if case_means:
                game_means[g] = _mean(case_means)
        if game_means:
            out[m] = _mean(list(game_means.values()))
        for g, v in game_means.items():
            out[f"{m}/{g}"] = v
    out.update(n_games=len(games), n_cases=len(by_case), n_trials=n_trials, n_unnamed=n_unnamed)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="metric.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("-i", "--input", required=True, help="Harbor's rewards, one JSON line per trial")
    ap.add_argument("-o", "--output", required=True, help="where to write the metric JSON")
    a = ap.parse_args(argv)
    try:
        with open(a.input, encoding="utf-8") as fh:
            result = headline(fh)
        with open(a.output, "w", encoding="utf-8") as fh:
            json.dump(result, fh, allow_nan=False)
    except (OSError, ValueError, RecursionError) as exc:
        print(f"metric.py: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
