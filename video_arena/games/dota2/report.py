"""DOTA 2 model and case reports: every number docs/CASES.md gives for the game comes from here.

    python -m video_arena.games.dota2.report         # all of it: the calibration table, then the cases
    python -m video_arena.games.dota2.report fit     # fit V_t on the matches that are not cases, write data/model.json
    python -m video_arena.games.dota2.report table   # the held-out calibration table (markdown)
    python -m video_arena.games.dota2.report cases   # the built cases: selection, events per type, class shares, bands

`fit` and `table` read the committed records (records.py); `cases` reads the committed ground truth only.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter

from video_arena.games.base import BUILTIN_CASES, SELECTION_SEED
from video_arena.games.dota2 import match as M
from video_arena.games.dota2 import model as V
from video_arena.games.dota2 import records as R
from video_arena.games.value_report import band_table


def split() -> tuple[dict[int, M.Match], dict[int, M.Match]]:
    """(fitting matches, case matches) of the built-in selection, decoded."""
    from video_arena.games.dota2.plugin import selection

    matches = R.all_matches()
    cases, fitting = selection(BUILTIN_CASES, SELECTION_SEED, matches)
    return ({k: M.Match(matches[k]["match"]) for k in fitting}, {k: M.Match(matches[k]["match"]) for k in cases})


def cases_report() -> int:
    from video_arena import paths
    from video_arena.core.tasks import TasksTree, load_cases, load_game

    root = paths.default_tasks_root()
    ids = [c["case_id"] for c in load_cases("dota2", root)]
    if not ids:
        print("tasks/dota2 has no cases", file=sys.stderr)
        return 1
    d = load_game("dota2", root)
    matches = R.all_matches()
    types, per_where, pairs, shift, favours, teams, minutes = Counter(), Counter(), [], [], 0, Counter(), []
    print("| case | match id | teams (radiant - dire) | length tercile | minutes | events | towers | barracks | roshan | wards placed |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    from video_arena.games.dota2.plugin import STRATA, eligible

    by_length = sorted(eligible(matches), key=lambda k: (matches[k]["match"]["duration"], k))
    for cid in ids:
        gt = json.loads(TasksTree(root).gt("dota2", cid).read_text(encoding="utf-8"))
        rec = gt["record"]
        m = M.Match(rec["opendota"])
        c = Counter(e["type"] for e in gt["events"])
        mid = rec["opendota"]["match_id"]
        info = matches[mid]["info"]
        names = [info["radiant_team_name"] or f"team {info['radiant_team_id']}", info["dire_team_name"] or f"team {info['dire_team_id']}"]
        teams.update(names)
        minutes.append(m.duration / 60)
        tercile = ("short", "medium", "long")[STRATA * by_length.index(mid) // len(by_length)]
        print(f"| {cid} | {mid} | {names[0]} - {names[1]} | {tercile} | {m.duration / 60:.1f} | {len(gt['events'])} | "
              f"{c['tower']} | {c['barracks']} | {c['roshan']} | {len(m.wards)} |")
        for e, row in zip(m.events, gt["events"]):
            types[row["type"]] += 1
            per_where[(row["type"], row["where"] or "-")] += 1
            shift.append(row["t"] + m.video_start - e.t)
            pairs.append((row["v_before"], row["v_after"]))
        last = gt["events"][-1]
        favours += d.state_of(last["v_before"]) == last["actor"]
    print(f"\n{len(ids)} cases, {sum(minutes):.0f} game minutes ({min(minutes):.1f}-{max(minutes):.1f} each); "
          f"{sum(types.values())} events: " + ", ".join(f"{k} {v}" for k, v in types.most_common()))
    print("rows by type and where: " + ", ".join(f"{t} {w} {n}" for (t, w), n in sorted(per_where.items())))
    print("teams (cases each): " + ", ".join(f"{t} {n}" for t, n in teams.most_common()))
    print(f"event t minus its record time (game seconds from the video start): {min(shift)}-{max(shift)} s "
          f"({sum(1 for s in shift if s)} events moved to the next free frame by an earlier one of the same second)")
    print(f"V_t before the `ancient` row is on the winner's side of the band in {favours} of {len(ids)} cases "
          "(after it, the result)")
    print("\n" + band_table(pairs, d, (0.02, 0.03, 0.05, 0.08)))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m video_arena.games.dota2.report", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", nargs="?", default="all", choices=["all", "fit", "table", "cases"])
    a = ap.parse_args(argv)
    if a.command == "cases":
        return cases_report()
    fitting, cases = split()
    if a.command == "fit":
        mdl = V.fit_model(fitting, sorted(cases))
        V.MODEL.write_text(json.dumps(mdl, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {V.MODEL.name}: fitted on {len(fitting)} matches, not on the {len(cases)} cases; "
              f"coefficients " + ", ".join(f"{f} {c:+.3f}" for f, c in zip(mdl["features"], mdl["coef"])))
    else:
        mdl = V.load_model()
    print(V.markdown(V.calibration(fitting, cases, mdl)))
    return cases_report() if a.command == "all" else 0


if __name__ == "__main__":
    sys.exit(main())
