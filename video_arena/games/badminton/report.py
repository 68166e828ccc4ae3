"""`python -m video_arena.games.badminton.report [--tasks-root DIR]`: the numbers docs/CASES.md gives for the
badminton cases, from the committed ground truth: the selected matches, rallies and events per type, every
end label that occurs with its mapping and count, the landings the drawing rules moved, the delta/state class
shares and the video length per case."""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import Counter
from pathlib import Path

from video_arena import paths
from video_arena.core.tasks import TasksTree
from video_arena.games.badminton import records as R
from video_arena.games.badminton import scene as SC

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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m video_arena.games.badminton.report", description=__doc__)
    ap.add_argument("--tasks-root", default=None)
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
        for e in gt["events"]:
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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
