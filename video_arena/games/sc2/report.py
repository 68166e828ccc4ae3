"""StarCraft II model commands: fit the cross-fitted V_t models and report on them and on the built cases.

    python -m video_arena.games.sc2.report fit          # fit the K fold models, write data/model.json
    python -m video_arena.games.sc2.report fit-visible  # fit the visible V_t on the fitting set, write data/visible_model.json
    python -m video_arena.games.sc2.report table        # the held-out calibration table (markdown)
    python -m video_arena.games.sc2.report compare      # held-out scores of other feature sets (the choice of USED)
    python -m video_arena.games.sc2.report cases        # the built cases: selection, events, class shares, bands

The model itself is model.py (imported by the plugin); this module reads the replays through the plugin.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter

from video_arena.games.sc2 import match as M
from video_arena.games.value_report import band_table
from video_arena.games.sc2 import model as V
from video_arena.games.sc2.model import K, L2, MODEL, USED, calibration, fit_all, load_model, markdown
from video_arena.progress import bar as progress_bar
from video_arena.games.sc2 import plugin as P
from video_arena.core.tasks import TasksTree, load_game
from video_arena import paths


def cases_report() -> int:
    """What the built cases hold (tasks/sc2): read from the committed ground truth only."""

    tree = TasksTree.at(paths.default_tasks_root())
    ids = tree.listed_case_ids("sc2")
    if not ids:
        print("tasks/sc2 has no cases", file=sys.stderr)
        return 1
    d = load_game("sc2", paths.default_tasks_root())
    types, shift, n = Counter(), [], 0
    pairs, last_ok, dur = [], 0, []
    print("| case | replay (test_replays/...) | release | real minutes | events |")
    print("|---|---|---|---|---|")
    for cid in ids:
        gt = json.loads(tree.gt("sc2", cid).read_text(encoding="utf-8"))
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
    print("\n" + band_table(pairs, d, (0.03, 0.05, 0.08, 0.10)))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m video_arena.games.sc2.report", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["fit", "fit-visible", "table", "compare", "cases"])
    a = ap.parse_args(argv)
    if a.command == "cases":
        return cases_report()
    with progress_bar(len(P.replay_files()), "sc2 replays", "replay") as bar:
        records, excluded = P.all_replays(progress=lambda done, total: bar.update(1))
    if a.command == "fit-visible":
        vis = V.fit_visible(records, P.fitting_set_keys(load_model()))
        V.VISIBLE_MODEL.write_text(json.dumps(vis, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {V.VISIBLE_MODEL.relative_to(P.paths.REPO_ROOT)}: {vis['fitted_on']}, coef {vis['coef']}")
        return 0
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
        MODEL.write_text(json.dumps(mdl, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {MODEL.relative_to(P.paths.REPO_ROOT)}: {K} fold models on {len(records)} replays")
    else:
        mdl = load_model()
    print(markdown(calibration(records, mdl)))
    for name, why in sorted(excluded.items()):
        print(f"excluded: {P.upstream_path(P.REPLAYS / name)}: {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
