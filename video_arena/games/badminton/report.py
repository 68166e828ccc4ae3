"""`python -m video_arena.games.badminton.report [--tasks-root DIR]`: the numbers docs/CASES.md gives for the
badminton cases, from the committed ground truth: the selected matches, rallies and events per type, every
end label that occurs with its mapping and count, the landings the drawing rules moved, the delta/state class
shares and the video length per case; then V_t: the held-out calibration of the pre-rally win probability over
the matches of data/rallies.csv (calibration.py), V at the first row, how often the state names the eventual
winner, and the delta/state class shares per candidate band with the band the rule picks from them."""
from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
from collections import Counter
from pathlib import Path

from video_arena import paths
from video_arena.core.tasks import TasksTree, load_game
from video_arena.games.badminton import calibration as CAL
from video_arena.games.badminton import records as R
from video_arena.games.badminton import scene as SC
from video_arena.progress import bar as progress_bar

ENGLISH = {
    "對手落地致勝": "opponent's shot landed in (win_reason 落地致勝)",
    "落點判斷失誤": "misjudged the landing (win_reason 對手落點判斷失誤)",
    "對手落地判斷失誤": "opponent misjudged the landing, written from the other side (win_reason 落地判斷失誤)",
    "出界": "out (win_reason 對手出界)",
    "掛網": "into the net (win_reason 對手掛網)",
    "未過網": "did not cross the net (win_reason 對手未過網)",
    "犯規": "fault (win_reason 對手犯規)",
    "": "no label (the winner from the score change)",
}

#: the dead bands the report compares; the rule picks the one whose three delta classes are most even
BANDS = (0.005, 0.01, 0.02, 0.03, 0.04, 0.05, 0.08, 0.1)


def class_shares(pairs: list[tuple[float, float]], band: float) -> tuple[Counter, Counter]:
    """(delta, state) class counts of (v_before, v_after) rows at this band: the game definition's own rules
    (`delta_of`, `state_of`, which label the ground truth), at another band."""
    rules = dataclasses.replace(load_game("badminton"), band=band)
    delta, state = Counter(), Counter()
    for vb, va in pairs:
        delta[rules.delta_of(vb, va)] += 1
        state[rules.state_of(va)] += 1
    return delta, state


def chosen_band(pairs: list[tuple[float, float]]) -> float:
    """The band of BANDS whose smallest delta class share is the largest (T2 is macro-averaged over the classes:
    the most even classes measure the most); ties go to the larger band."""
    def smallest(band: float) -> int:
        d, _ = class_shares(pairs, band)
        return min(d[k] for k in ("up", "down", "flat"))
    return max(BANDS, key=lambda b: (smallest(b), b))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m video_arena.games.badminton.report", description=__doc__)
    ap.add_argument("--tasks-root", default=None)
    ap.add_argument("--no-progress", action="store_true", help="no progress bar (also: VA_NO_PROGRESS=1)")
    a = ap.parse_args(argv)
    tree = TasksTree(Path(a.tasks_root) if a.tasks_root else paths.default_tasks_root())
    cases_file = tree.cases_path("badminton")
    if not cases_file.is_file():
        print(f"report: no {cases_file}: build the cases first", file=sys.stderr)
        return 2
    ids = [c["case_id"] for c in json.loads(cases_file.read_text(encoding="utf-8"))["cases"]]
    if not ids:
        print(f"report: {cases_file} lists no case", file=sys.stderr)
        return 2
    types, labels, deltas, states, moved = Counter(), Counter(), Counter(), Counter(), Counter()
    label_kind: dict[str, Counter] = {}
    print("| case | collection/id | event | games | year | rallies | events | video (s) | frames |")
    print("|---|---|---|---|---|---|---|---|---|")
    n_rallies = n_frames = 0
    durations, pauses, dvs, wheres = [], [], [], Counter()
    pairs, first_v, named, models = [], [], Counter(), []
    for cid in ids:
        gt = json.loads(tree.gt("badminton", cid).read_text(encoding="utf-8"))
        rec = gt["record"]
        m = rec["match"]
        n_rallies += len(rec["rallies"])
        fps = rec["match"]["source_fps"]
        pauses += [(b["strokes"][0][0] - a["strokes"][-1][0]) / fps
                   for a, b in zip(rec["rallies"], rec["rallies"][1:]) if a["game"] == b["game"]]
        n_frames += gt["video"]["n_frames"]
        durations.append(gt["duration_s"])
        print(f"| {cid} | {rec['source']['id']} | {m['event']} | {m['games']} | {m['year']} | {len(rec['rallies'])} | "
              f"{len(gt['events'])} | {gt['duration_s']:.0f} | {gt['video']['n_frames']} |")
        ends = [e for e in gt["events"] if e["type"] != "game"]
        for r, e in zip(rec["rallies"], ends):
            labels[r["label"]] += 1
            label_kind.setdefault(r["label"], Counter())[(e["type"], e["where"] if e["type"] == "error" else
                                                          "front/mid/back" if e["type"] == "winner" else "")] += 1
        dvs += [abs(e["v_after"] - e["v_before"]) for e in ends]
        first_v.append(gt["v_series"][0][1])
        models.append(rec["value_model"])
        winner = "player_a" if gt["events"][-1]["v_after"] == 1.0 else "player_b"
        for e in gt["events"]:
            pairs.append((e["v_before"], e["v_after"]))
            named["winner" if e["state"] == winner else "even" if e["state"] == "even" else "loser"] += 1
            wheres[(e["type"], e["where"])] += 1
            types[e["type"]] += 1
            deltas[e["delta"]] += 1
            states[e["state"]] += 1
        moved.update(SC.adjusted_landings(rec))
    n = sum(types.values())
    print()
    print(f"{len(ids)} cases, {n_rallies} rallies, {n} events: " + ", ".join(f"{k} {v}" for k, v in types.most_common()))
    print(f"video: {sum(durations) / 60:.0f} min in all, {min(durations) / 60:.1f}-{max(durations) / 60:.1f} min a case, "
          f"{n_frames} frames at {SC.FPS} fps")
    q = statistics.quantiles(pauses, n=10)
    print(f"recorded pauses (last hit to the next serve, inside a game): median {statistics.median(pauses):.1f} s, "
          f"10-90 %: {q[0]:.1f}-{q[-1]:.1f} s; drawn: {SC.REST_S + SC.SETUP_S:g} s")
    share = lambda c: ", ".join(f"{k} {100 * v / n:.1f} %" for k, v in c.most_common())  # noqa: E731
    print(f"delta: {share(deltas)}; state: {share(states)}")
    print(f"|dV| at a rally's end: median {statistics.median(dvs):.3f}, over 0.05 at {100 * sum(d > 0.05 for d in dvs) / len(dvs):.0f} % "
          f"of rallies; rows by type and where: " + ", ".join(f"{t} {w or '-'} {k}" for (t, w), k in sorted(wheres.items())))
    print(f"landings moved by the drawing rules: {moved['out_moved']} `out` landings mapped inside the singles lines, "
          f"{moved['winner_moved']} winners mapped outside the receiving half")
    print()
    print("| lose_reason | meaning | type | where | rallies |")
    print("|---|---|---|---|---|")
    for label, c in labels.most_common():
        for (kind, where), k in sorted(label_kind[label].items()):
            print(f"| {label or '(empty)'} | {ENGLISH.get(label, '?')} | {kind} | {where or '-'} | {k} |")
    band = load_game("badminton", tree.root).band
    print()
    print("V_t: held-out calibration of the pre-rally win probability (python -m video_arena.games.badminton.report; "
          "calibration.py)")
    print()
    n_held = sum(1 for m in R.read_rallies() if CAL.complete(m))
    with progress_bar(n_held, "badminton calibration", "match", enabled=not a.no_progress) as bar:
        print(CAL.markdown(CAL.calibrate(band, progress=lambda: bar.update(1))))
    print()
    print(f"the 20 cases: V at the first row {min(first_v):.4f}-{max(first_v):.4f}; the state row names the eventual "
          f"winner in {100 * named['winner'] / n:.1f} % of rows (even {100 * named['even'] / n:.1f} %, "
          f"the loser {100 * named['loser'] / n:.1f} %)")
    means = [vm[p]["alpha"] / (vm[p]["alpha"] + vm[p]["beta"]) for vm in models for p in ("prior_a", "prior_b")]
    span = lambda xs, f: f"{f(min(xs))}" if min(xs) == max(xs) else f"{f(min(xs))}-{f(max(xs))}"  # noqa: E731
    print(f"their priors (record.value_model): kappa {span([vm['kappa'] for vm in models], str)}, tau "
          f"{span([vm['tau'] for vm in models], str)}, the pool's serve-win rate "
          f"{span([vm['pool_rate'] for vm in models], lambda x: f'{x:.3f}')}, the players' prior means "
          f"{span(means, lambda x: f'{x:.3f}')}; players with no other match: "
          f"{sum(vm[p]['other_matches'] == 0 for vm in models for p in ('prior_a', 'prior_b'))} of {2 * len(models)}")
    print()
    print("| band | delta up | down | flat | state player_a | player_b | even |")
    print("|---|---|---|---|---|---|---|")
    for b in BANDS:
        dc, sc = class_shares(pairs, b)
        f = lambda c, k: f"{100 * c[k] / len(pairs):.1f} %"  # noqa: E731
        mark = " (game.toml)" if abs(b - band) < 1e-9 else ""
        print(f"| {b:g}{mark} | {f(dc, 'up')} | {f(dc, 'down')} | {f(dc, 'flat')} | {f(sc, 'player_a')} | "
              f"{f(sc, 'player_b')} | {f(sc, 'even')} |")
    pick = chosen_band(pairs)
    print()
    print(f"band the rule picks (the most even delta classes: the largest smallest share): {pick:g}; "
          f"game.toml: {band:g}" + ("" if abs(pick - band) < 1e-9 else " (DIFFERENT: set game.toml's band and rebuild)"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
