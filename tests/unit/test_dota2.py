"""DOTA 2 plugin: the committed records, the OpenDota subset and its refusals, the events against the raw
record rows, the selection, V_t (fitted without the cases, only the past), the incremental video, and that
the ground truth alone re-renders (no data file)."""
from __future__ import annotations

import copy
import gzip
import hashlib
import json
import os
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from video_arena import paths
from video_arena.games.base import BUILTIN_CASES, SELECTION_SEED
from video_arena.games.dota2 import match as M
from video_arena.games.dota2 import model as V
from video_arena.games.dota2 import opendota as O
from video_arena.games.dota2 import plugin as P
from video_arena.games.dota2 import records as R
from video_arena.games.dota2 import render as D

TASKS = paths.default_tasks_root()
GTS = sorted((TASKS / "dota2" / "gt").glob("*.json"))
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "opendota"


def _gt(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def fixture(tmp_path: Path, name: str) -> Path:
    out = tmp_path / f"{name}.json"
    out.write_bytes(gzip.decompress((FIXTURES / f"{name}.json.gz").read_bytes()))
    return out


def tiny(**over) -> dict:
    """A small valid OpenDota match object: two towers, Roshan, the Ancient; one ward."""
    obj = {"match_id": 1, "duration": 1500, "radiant_win": True,
           "objectives": [{"time": 600, "type": "building_kill", "key": "npc_dota_badguys_tower1_mid"},
                          {"time": 600, "type": "building_kill", "key": "npc_dota_goodguys_tower1_bot"},
                          {"time": 900, "type": "CHAT_MESSAGE_ROSHAN_KILL", "team": 2},
                          {"time": 950, "type": "CHAT_MESSAGE_FIRSTBLOOD"},
                          {"time": 1000, "type": "building_kill", "key": "npc_dota_badguys_healers"},
                          {"time": 1500, "type": "building_kill", "key": "npc_dota_badguys_fort"}],
           "radiant_gold_adv": [0] + [100 * k for k in range(1, 26)], "radiant_xp_adv": [0] * 26,
           "players": [{"player_slot": 0, "obs_log": [{"time": -40, "x": 120, "y": 130, "ehandle": 7}],
                        "obs_left_log": [{"time": 200, "x": 120, "y": 130, "ehandle": 7}]},
                       {"player_slot": 128, "sen_log": [{"time": 300, "x": 150.5, "y": 140, "ehandle": 9}]}]}
    obj.update(over)
    return obj


# -- records -------------------------------------------------------------------------------------------

def test_committed_data_files_are_the_ones_the_readme_names():
    readme = (R.DATA / "README.md").read_text(encoding="utf-8")
    for name, (fname, _) in R.FILES.items():
        digest = hashlib.sha256((R.DATA / fname).read_bytes()).hexdigest()
        assert f"`{fname}` `{digest}`" in readme, name
    assert R.LICENCE in " ".join(readme.split())


def test_every_committed_match_reads_and_47_have_wards():
    matches = R.all_matches()
    assert len(matches) == 797 and len(P.eligible(matches)) == 47
    assert Counter(m["match"]["radiant_win"] for m in matches.values())[True] == 427


def test_the_csv_rows_become_an_opendota_object_with_its_field_names():
    m = R.all_matches()[4070356125]["match"]
    assert set(m) == {"match_id", "duration", "radiant_win", "objectives", "radiant_gold_adv", "radiant_xp_adv", "players"}
    assert m["radiant_gold_adv"][0] == 0 and len(m["radiant_gold_adv"]) == m["duration"] // 60 + 1
    assert {"time", "type", "key"} == set(next(o for o in m["objectives"] if o["type"] == "building_kill"))
    assert set(m["players"][0]) == {"player_slot", "obs_log", "obs_left_log", "sen_log", "sen_left_log"}
    assert M.subset(m) == m


# -- the subset and its refusals -------------------------------------------------------------------------

def test_a_tiny_match_decodes_to_its_events_wards_and_time_base():
    m = M.Match(M.subset(tiny()))
    assert [(e.t, e.type, e.actor, e.where) for e in m.events] == [
        (600, "tower", "radiant", "mid_t1"), (600, "tower", "dire", "bot_t1"), (900, "roshan", "radiant", ""),
        (1500, "ancient", "radiant", "")]
    assert m.video_start == -40 and m.winner == "radiant"
    assert [(w.side, w.kind, w.placed, w.removed) for w in m.wards] == [("radiant", "observer", -40, 200),
                                                                      ("dire", "sentry", 300, 300 + M.WARD_LIFETIME_S)]
    assert m.lead_at(659.9) == (1000, 0) and m.lead_at(-5) == (0, 0)


def test_the_video_starts_at_most_pregame_before_the_horn():
    obj = tiny(players=[{"player_slot": 0, "obs_log": [{"time": -817, "x": 120, "y": 130, "ehandle": 7}]}])
    assert M.Match(M.subset(obj)).video_start == -M.PREGAME_S
    assert M.Match(M.subset(tiny(players=[]))).video_start == 0


def test_a_parse_without_the_fort_ends_at_duration_with_the_recorded_winner():
    obj = tiny(objectives=tiny()["objectives"][:3], radiant_win=False)
    m = M.Match(M.subset(obj))
    assert (m.events[-1].t, m.events[-1].type, m.events[-1].actor) == (1500, "ancient", "dire")


def test_two_tier4_kills_take_the_two_towers_in_order():
    t4 = [{"time": 1400 + k, "type": "building_kill", "key": "npc_dota_badguys_tower4"} for k in range(2)]
    m = M.Match(M.subset(tiny(objectives=t4 + tiny()["objectives"][-1:])))
    assert [e.building for e in m.events[:2]] == ["dire_tower4_a", "dire_tower4_b"]
    assert {e.where for e in m.events[:2]} == {"base_t4"}


@pytest.mark.parametrize("change,needle", [
    (lambda o: o.pop("objectives"), "the match has no objectives"),
    (lambda o: o.pop("radiant_gold_adv"), "no radiant_gold_adv"),
    (lambda o: (o.pop("radiant_win"), o.__setitem__("objectives", o["objectives"][:3])), "neither the Ancient's fall"),
    (lambda o: o.__setitem__("radiant_win", False), "the dire Ancient falls but radiant_win is False"),
    (lambda o: o["objectives"].append({"time": 700, "type": "building_kill", "key": "npc_dota_badguys_tower1_mid"}),
     "falls twice"),
    (lambda o: o["objectives"].append({"time": 700, "type": "building_kill", "key": "npc_dota_badguys_tower5_mid"}),
     "no building the DOTA 2 cases know"),
    (lambda o: o["objectives"].append({"time": 1503, "type": "building_kill", "key": "npc_dota_goodguys_tower1_top"}),
     "after the Ancient fell"),
    (lambda o: o["objectives"].append({"time": 700, "type": "CHAT_MESSAGE_ROSHAN_KILL", "team": 4}), "team 4"),
    (lambda o: o.__setitem__("radiant_gold_adv", [0, 1]), "covers 2 minutes of a 25-minute match"),
    (lambda o: o["players"][0]["obs_log"][0].__setitem__("x", 300), "off OpenDota's 0-256 map grid"),
    (lambda o: o["players"][0]["obs_log"][0].__setitem__("time", "soon"), "must be a whole number"),
    (lambda o: o.__setitem__("duration", 0), "duration 0 must be > 0"),
])
def test_a_match_the_cases_cannot_use_is_refused_in_one_line(change, needle):
    obj = tiny()
    change(obj)
    with pytest.raises(M.MatchError, match=None) as exc:
        M.subset(obj)
    assert needle in str(exc.value) and "\n" not in str(exc.value)


def test_parts_of_a_match_merge_and_a_disagreement_is_refused(tmp_path):
    a, b = tiny(), {"match_id": 1, "radiant_win": True, "players": [{"player_slot": 0, "kills": 3}]}
    del a["radiant_win"]
    got = O.merged([("a.json", a), ("b.json", b)])
    assert got["radiant_win"] is True and got["players"][0]["kills"] == 3 and got["players"][0]["obs_log"]
    with pytest.raises(M.MatchError, match="b.json and a.json disagree on 'match_id'"):
        O.merged([("a.json", a), ("b.json", dict(b, match_id=2))])


def test_a_fifo_or_a_huge_file_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "m.json"
    os.mkfifo(fifo)
    with pytest.raises(M.MatchError, match="not a regular file"):
        O.read_json_file(fifo)
    big = tmp_path / "big.json"
    with open(big, "wb") as f:
        f.truncate(O.MAX_BYTES + 1)
    with pytest.raises(M.MatchError, match="more than the"):
        O.read_json_file(big)


def test_import_refuses_a_parse_without_the_result_in_one_line_and_writes_nothing(tmp_path, capsys):
    from video_arena.importing import cli as import_cli

    parsed = fixture(tmp_path, "1781962623_parsed")
    tree = tmp_path / "tree"
    rc = import_cli.main(["--tasks-root", str(tree), "--game", "dota2", "--opendota", str(parsed), "--licence", "MIT"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1, err
    assert "neither the Ancient's fall" in err and "nothing was written" in err and "Traceback" not in err
    assert not tree.exists()


def test_import_refuses_a_fitting_match_whose_v_t_the_model_saw(tmp_path, capsys):
    from video_arena.importing import cli as import_cli

    mid = next(k for k in R.all_matches() if k not in V.load_model()["not_fitted_on"])
    f = tmp_path / "m.json"
    f.write_text(json.dumps(R.all_matches()[mid]["match"]))
    rc = import_cli.main(["--tasks-root", str(tmp_path / "tree"), "--game", "dota2", "--opendota", str(f), "--licence", "x"])
    err = capsys.readouterr().err
    assert rc == 2 and "in the V_t model's fitting set" in err and err.count("\n") == 1, err
    assert not (tmp_path / "tree").exists()


# -- hostile match files: every bound is one line, exit 2, nothing written (docs/SECURITY.md) --------------

def _import_file(tmp_path: Path, capsys, text: str | None = None, path: Path | None = None) -> str:
    """import-cases --opendota on one file: it must refuse in one line with exit 2 and write nothing."""
    from video_arena.importing import cli as import_cli

    if path is None:
        path = tmp_path / "m.json"
        path.write_text(text)
    tree = tmp_path / "tree"
    rc = import_cli.main(["--tasks-root", str(tree), "--game", "dota2", "--opendota", str(path), "--licence", "x"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, (rc, err)
    assert "nothing was written" in err and not tree.exists(), err
    return err


FORT = '{"time": 1500, "type": "building_kill", "key": "npc_dota_badguys_fort"}'


@pytest.mark.parametrize("text,needle", [
    (json.dumps(tiny()).replace('"duration": 1500', '"duration": ' + "9" * 401), "an integer of 401 digits at duration"),
    (json.dumps(tiny()).replace(FORT, FORT.replace("1500", "-" + "1" * 401)), "401 digits at objectives[5].time"),
    (json.dumps(tiny()).replace('"radiant_gold_adv": [0', '"radiant_gold_adv": [' + "5" * 401),
     "401 digits at radiant_gold_adv[0]"),
    ('{"match_id": 1, "players": ' + "[" * 200_000 + "]" * 200_000 + "}", "nested deeper than 64 levels"),
    (json.dumps(tiny()).replace(FORT, FORT.replace("1500", "1e400")), "a number too large for a float"),
])
def test_a_number_or_nesting_python_cannot_take_is_one_line(tmp_path, capsys, text, needle):
    """A 401-digit integer made an OverflowError (math.isfinite of it), JSON nested 200,000 deep a RecursionError."""
    assert needle in _import_file(tmp_path, capsys, text)


@pytest.mark.parametrize("change,needle", [
    (lambda o: o["objectives"][2].__setitem__("time", 10 ** 18),
     "objectives[2].time is 1000000000000000000, must be at most 1505 (the match ends at duration 1500 s)"),
    (lambda o: o["players"][1]["sen_log"][0].__setitem__("time", -10 ** 12), "players[1].sen_log[0].time is -1000000000000"),
    (lambda o: o["radiant_xp_adv"].__setitem__(3, 10 ** 15), "radiant_xp_adv[3] is 1000000000000000, must be within"),
    (lambda o: o.__setitem__("radiant_gold_adv", [0] * 10 ** 5), "radiant_gold_adv covers 100000 minutes of a 25-minute"),
    (lambda o: o["objectives"].extend([{"time": 900, "type": "CHAT_MESSAGE_ROSHAN_KILL", "team": 3}] * 300),
     "more than 200 building and Roshan kills"),
    (lambda o: o["objectives"].extend([{"time": 900 + k, "type": "CHAT_MESSAGE_ROSHAN_KILL", "team": 3} for k in range(4)]),
     "Roshan killed 5 times in 1500 s"),
    (lambda o: o["players"][0].__setitem__("obs_log", [{"time": 1, "x": 1, "y": 1, "ehandle": k} for k in range(2001)]),
     "more than 2000 ward entries"),
    (lambda o: o["players"][0].__setitem__("player_slot", 10 ** 6), "players[0].player_slot is 1000000, must be within [0, 255]"),
])
def test_a_time_or_number_beyond_the_matchs_range_is_one_line(tmp_path, capsys, change, needle):
    """Times are held to the match's duration, leads, ward and kill counts to what a match can hold (the
    Ancient's fall at 1e9 s, which once made a billion-frame video, is tried in a child process below)."""
    obj = tiny()
    change(obj)
    assert needle in _import_file(tmp_path, capsys, json.dumps(obj))


def test_a_match_file_that_is_a_link_is_refused(tmp_path, capsys):
    real = tmp_path / "real.json"
    real.write_text(json.dumps(tiny(match_id=5)))
    (tmp_path / "m.json").symlink_to(real)
    assert "a symbolic link" in _import_file(tmp_path, capsys, path=tmp_path / "m.json")


@pytest.mark.parametrize("change,needle", [
    (lambda o: o["objectives"][-1].__setitem__("time", 1_000_000_000), "objectives[5].time is 1000000000"),
    (lambda o: (o.__setitem__("duration", 12_000_000), o.__setitem__("objectives", o["objectives"][:3]),
                o.__setitem__("radiant_gold_adv", [0] * 200_001), o.__setitem__("radiant_xp_adv", [0] * 200_001)),
     "duration 12000000 s is longer than the 14400 s a match may last"),
])
def test_a_match_that_would_render_without_end_is_refused_before_any_work(tmp_path, change, needle):
    """The two reproductions that once grew past 3 GB or rendered for hours, run in a child limited to
    2 GiB of address space and 120 s: refused in one line (exit 2), nothing written."""
    import subprocess
    import sys

    obj = tiny(match_id=11)
    change(obj)
    (tmp_path / "m.json").write_text(json.dumps(obj))
    code = ("import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30)); "
            "from video_arena.importing import cli; sys.exit(cli.main(sys.argv[1:]))")
    p = subprocess.run([sys.executable, "-c", code, "--tasks-root", str(tmp_path / "tree"), "--game", "dota2",
                        "--opendota", str(tmp_path / "m.json"), "--licence", "x"],
                       capture_output=True, text=True, timeout=120,
                       env={k: v for k, v in os.environ.items() if k not in ("VA_MEDIA_ROOT", "VA_TASKS_ROOT")})
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and needle in p.stderr, (p.returncode, p.stderr[-2000:])
    assert not (tmp_path / "tree").exists()


def test_the_bounds_docs_importing_states_are_the_matchs_and_lie_beyond_the_committed_matches():
    """docs/IMPORTING.md's list of a match file's bounds is match.py's, and the committed matches' range it
    quotes is the one `report ranges` prints."""
    doc = " ".join((paths.repo_resource("docs", "IMPORTING.md")).read_text(encoding="utf-8").split())
    durations = [v["match"]["duration"] for v in R.all_matches().values()]
    for text in (f"`duration` at most {M.MAX_DURATION_S // 3600} hours ({M.MAX_DURATION_S:,} s)",
                 f"at most {M.END_SLACK_S} s after `duration`", f"at most {M.WARD_WINDOW_S // 60} minutes before the horn",
                 f"at most once per {M.ROSHAN_RESPAWN_S} s of the match", f"at most {M.MAX_OBJECTIVES} building and Roshan",
                 f"at most {M.MAX_WARD_ENTRIES:,} ward entries", f"leads of at most {M.MAX_LEAD:,} gold",
                 f"within {M.LEAD_SLACK_MIN} minutes of the match's length",
                 f"the {len(durations)} committed matches' range beside each bound: they last "
                 f"{min(durations)}-{max(durations)} s"):
        assert text in doc, text
    assert max(durations) < M.MAX_DURATION_S


# -- the built cases against the raw record rows ----------------------------------------------------------

def _raw_events(match_id: int) -> list[tuple[int, str, str, str]]:
    """(time, type, actor, where) of the match's objective rows, read straight from the CSV with the
    game.toml's rules (an independent reading, not match.py's)."""
    out = []
    for r in R.read_rows("objectives"):
        if int(r["match_id"]) != match_id:
            continue
        if r["type"] == "CHAT_MESSAGE_ROSHAN_KILL":
            out.append((int(r["time"]), "roshan", {2: "radiant", 3: "dire"}[int(float(r["team"]))], ""))
            continue
        side, rest = r["key"].split("_")[2], "_".join(r["key"].split("_")[3:])
        actor = "dire" if side == "goodguys" else "radiant"
        if rest == "healers":
            continue
        if rest == "fort":
            out.append((int(r["time"]), "ancient", actor, ""))
        elif rest.startswith("tower"):
            tier, _, lane = rest[5:].partition("_")
            out.append((int(r["time"]), "tower", actor, "base_t4" if tier == "4" else f"{lane}_t{tier}"))
        else:
            kind, _, lane = rest.partition("_rax_")
            out.append((int(r["time"]), "barracks", actor, f"{lane}_{'melee' if kind == 'melee' else 'ranged'}"))
    return out


@pytest.mark.skipif(not GTS, reason="tasks/dota2 has no built cases")
def test_every_objective_of_each_case_appears_once_at_its_record_time_and_nothing_else():
    counts = Counter()
    for path in GTS:
        gt = _gt(path)
        rec = gt["record"]
        start = rec["time_base"]["video_start_game_s"]
        raw = _raw_events(rec["source"]["match_id"])
        assert len(gt["events"]) == len(raw), path.name
        prev = -1.0
        for e, (t, typ, actor, where) in zip(gt["events"], raw):
            assert (e["type"], e["actor"], e["where"]) == (typ, actor, where), (path.name, e)
            # its record second, or the next free one when an earlier event of that second took it
            assert e["t"] == max(t - start, prev + 1), (path.name, e, t)
            prev = e["t"]
            counts[typ] += 1
        assert gt["events"][-1]["type"] == "ancient"
        assert rec["time_base"]["video_start_game_s"] == M.Match(rec["opendota"]).video_start
    assert counts == {"tower": 258, "barracks": 82, "roshan": 42, "ancient": 20}


def test_selection_is_seeded_spread_and_the_model_never_saw_a_case():
    matches = R.all_matches()
    cases, fitting = P.selection(BUILTIN_CASES, SELECTION_SEED, matches)
    assert P.selection(BUILTIN_CASES, SELECTION_SEED, matches) == (cases, fitting)
    assert P.selection(BUILTIN_CASES, SELECTION_SEED + 1, matches)[0] != cases
    assert len(set(cases)) == 20 and set(cases) <= set(P.eligible(matches)) and not set(cases) & set(fitting)
    assert len(fitting) == 777
    teams = Counter(t for k in cases for t in (matches[k]["info"]["radiant_team_id"], matches[k]["info"]["dire_team_id"]))
    assert max(teams.values()) <= 4 and len(teams) == 16
    by_length = sorted(P.eligible(matches), key=lambda k: (matches[k]["match"]["duration"], k))
    terciles = Counter(3 * by_length.index(k) // len(by_length) for k in cases)
    assert sorted(terciles.values()) == [6, 7, 7]
    mdl = V.load_model()
    assert mdl["not_fitted_on"] == sorted(cases) and mdl["fitted_on"]["n_matches"] == 777
    assert mdl["fitted_on"]["match_ids_sha256"] == V.sha256_text(",".join(map(str, sorted(fitting))))
    if GTS:
        assert sorted(_gt(p)["record"]["source"]["match_id"] for p in GTS) == sorted(cases)


def test_v_t_uses_only_what_was_known_at_each_event():
    rec = M.record_of(M.subset(tiny()), {"collection": "test", "id": "t"})
    base = P.PLUGIN.evaluate(rec)
    later = copy.deepcopy(rec)
    later["opendota"]["objectives"][2]["team"] = 3                     # the 900 s Roshan kill: dire's instead
    got = P.PLUGIN.evaluate(later)
    assert got[:3] == base[:3] and got[3] < base[3]                    # the start and both 600 s rows unchanged
    assert got[-1] == base[-1] == 1.0                                  # after the Ancient: the result


def test_v_t_reads_only_what_the_picture_shows():
    rec = M.record_of(M.subset(tiny()), {"collection": "test", "id": "t"})
    hidden = copy.deepcopy(rec)
    hidden["opendota"]["radiant_gold_adv"][1:] = [-50000] * 25          # the leads: never drawn
    hidden["opendota"]["radiant_xp_adv"][1:] = [40000] * 25
    assert P.PLUGIN.evaluate(hidden) == P.PLUGIN.evaluate(rec)
    meta = {"fps": 1, "n_frames": 1600, "duration_s": 1600.0}
    assert P.PLUGIN.visible_values(P.PLUGIN.visible_features(rec), meta) == P.PLUGIN.evaluate(rec)
    for path in GTS:                                                   # every case: the watcher's V_t is V_t
        gt = _gt(path)
        got = P.PLUGIN.visible_values(P.PLUGIN.visible_features(gt["record"]), meta)
        assert [round(v, 4) for v in got] == [v for _, v in gt["v_series"]]


def test_a_tower_for_radiant_moves_v_t_up():
    coef = V.load_model()["coef"]
    m = M.Match(M.subset(tiny()))
    assert V.value(coef, m, 600, 1) > V.value(coef, m, 600, 0)        # a dire tower fell: radiant gains
    assert V.value(coef, m, 600, 2) < V.value(coef, m, 600, 1)        # then a radiant tower


# -- the video --------------------------------------------------------------------------------------------

@pytest.mark.skipif(not GTS, reason="tasks/dota2 has no built cases")
def test_video_positions_are_the_whole_pictures_and_every_change_is_in_a_box():
    from video_arena.media.encode import yuv420p

    rec = _gt(GTS[0])["record"]
    sched = P.PLUGIN.pace(rec, None)
    images, index = P.PLUGIN.video(rec, sched)
    tl = P.timeline(rec)
    starts = D.change_frames(tl, sched.n_frames)
    assert len(index) == sched.n_frames and index[0] == 0 and sorted(set(index)) == list(range(len(starts)))
    prev = None
    for k, (frame, img) in enumerate(zip(starts, images)):
        want = D.draw(D.sprites(tl, frame))
        assert (img.to_ndarray() == yuv420p(want).to_ndarray()).all(), f"position {k} (frame {frame})"
        assert index[frame] == k and (frame == 0 or index[frame - 1] == k - 1)
        if prev is not None:   # nothing changes between change frames
            assert (D.draw(D.sprites(tl, frame - 1)) == prev).all()
        prev = want


def test_the_picture_is_square_at_the_render_size_and_has_every_building():
    d = P.PLUGIN.definition
    assert tuple(d.render_size) == (D.SIZE, D.SIZE)
    assert set(D.POSITIONS) == {b.id for b in M.BUILDINGS}
    sprites = [(b.id, *D._centre(*D.POSITIONS[b.id]), D.HALF[b.kind if b.kind != "tower" else "tower"]) for b in M.BUILDINGS]
    for i, (a, ax, ay, ah) in enumerate(sprites):   # no two buildings' boxes touch: each stays legible
        for b, bx, by, bh in sprites[i + 1:]:
            assert max(abs(ax - bx), abs(ay - by)) > ah + bh, (a, b)


@pytest.mark.skipif(not GTS, reason="tasks/dota2 has no built cases")
def test_ground_truth_alone_renders_without_the_data_files(monkeypatch):
    def no_data(name):
        raise AssertionError(f"the render read {name}")

    monkeypatch.setattr(R, "read_rows", no_data)
    R.all_matches.cache_clear()
    try:
        gt = _gt(GTS[-1])
        steps = P.PLUGIN.replay(gt["record"])
        assert [(s.type, s.actor, s.where) for s in steps] == [(e["type"], e["actor"], e["where"]) for e in gt["events"]]
        img = P.PLUGIN.frame_image(gt["record"], int(gt["events"][5]["t"]))
        assert img.size == (D.SIZE, D.SIZE)
        assert np.asarray(img).std() > 5
    finally:
        R.all_matches.cache_clear()
