"""DOTA 2 model and case reports: every number docs/CASES.md gives for the game comes from here.

    python -m video_arena.games.dota2.report         # all of it: the calibration table, then the cases
    python -m video_arena.games.dota2.report fit     # fit V_t on the matches that are not cases, write data/model.json
    python -m video_arena.games.dota2.report table   # the held-out calibration table (markdown)
    python -m video_arena.games.dota2.report cases   # the built cases: selection, events per type, class shares, bands
    python -m video_arena.games.dota2.report ranges  # the committed matches' range beside each cap a match file is held to

`fit`, `table` and `ranges` read the committed records (records.py); `cases` reads the committed ground truth only.
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
from video_arena.games.dota2.plugin import STRATA, eligible, selection
from video_arena.core.tasks import TasksTree, load_cases, load_game
from video_arena import paths


def split() -> tuple[dict[int, M.Match], dict[int, M.Match]]:
    """(fitting matches, case matches) of the built-in selection, decoded."""

    matches = R.all_matches()
    cases, fitting = selection(BUILTIN_CASES, SELECTION_SEED, matches)
    return ({k: M.Match(matches[k]["match"]) for k in fitting}, {k: M.Match(matches[k]["match"]) for k in cases})


def cases_report() -> int:
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


def ranges_report() -> int:
    """What the committed matches hold beside each bound match.subset holds a user's match file to
    (docs/IMPORTING.md, "A match file a game reads"): every cap must lie well beyond them."""
    matches = [v["match"] for v in R.all_matches().values()]
    wards = [(e["time"], m["duration"]) for m in matches for p in m["players"]
             for k in ("obs_log", "obs_left_log", "sen_log", "sen_left_log") for e in p[k]]
    rows = [
        ("duration (s)", f"{min(m['duration'] for m in matches)}-{max(m['duration'] for m in matches)}",
         f"at most {M.MAX_DURATION_S}"),
        ("building or Roshan after `duration` (s)",
         f"at most {max(o['time'] - m['duration'] for m in matches for o in m['objectives'])}", f"at most {M.END_SLACK_S}"),
        ("ward before the horn / after the end (s)",
         f"at most {max(-t for t, _ in wards)} / {max(t - d for t, d in wards)}", f"at most {M.WARD_WINDOW_S} each"),
        ("ward entries per match", f"at most {max(sum(len(p[k]) for p in m['players'] for k in p if k != 'player_slot') for m in matches)}",
         f"at most {M.MAX_WARD_ENTRIES}"),
        ("building and Roshan kills per match", f"at most {max(len(m['objectives']) for m in matches)}",
         f"at most {M.MAX_OBJECTIVES}"),
        ("gold or experience lead", f"within {max(abs(v) for m in matches for k in ('radiant_gold_adv', 'radiant_xp_adv') for v in m[k])}",
         f"within {M.MAX_LEAD}"),
    ]
    print(f"| the {len(matches)} committed matches | range | a match file's bound |\n|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m video_arena.games.dota2.report", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", nargs="?", default="all", choices=["all", "fit", "table", "cases", "ranges"])
    a = ap.parse_args(argv)
    if a.command == "cases":
        return cases_report()
    if a.command == "ranges":
        return ranges_report()
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
