"""A user's StarCraft II replay as a case (`import-cases --game sc2 --sc2replay FILE`): the reader agrees with
sc2reader's own reading of the replay, a built-in case's replay imports with that case's match key and V_t, the
fitting set is refused, and every bad replay is one line, exit 2, nothing written (tests/fixtures/records/sc2)."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from video_arena import paths
from video_arena.games.sc2 import match as M
from video_arena.games.sc2 import model as V
from video_arena.games.sc2 import plugin as P
from video_arena.games.sc2 import replay as R
from video_arena.games.sc2 import sc2replay as S
from video_arena.importing import cli as import_cli

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "records" / "sc2"
DEATHAURA = FIXTURES / "Deathaura.SC2Replay"
TEAM_GAME = FIXTURES / "2.0.8.25604__issue131_arid_wastes.SC2Replay"
NO_TRACKER = FIXTURES / "2.0.3.24764__Akilon_Wastes.SC2Replay"
TOWN_HALLS = {"Nexus", "Hatchery", "CommandCenter"}


@pytest.fixture(scope="module")
def deathaura() -> dict:
    return P.PLUGIN.record_from_files("sc2replay", [DEATHAURA])


def _case_gts() -> list[dict]:
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted((paths.default_tasks_root() / "sc2" / "gt").glob("*.json"))]


# -- the reader ----------------------------------------------------------------------------------------

def test_the_reader_agrees_with_sc2readers_own_reading_of_the_replay(deathaura):
    """The file's own facts as sc2reader gives them (not through replay.to_record): the winner, the match's
    length, every town hall started after the start (expand) and every one the other player destroyed
    (base_kill), with their players and game loops."""
    import sc2reader

    rp = sc2reader.load_replay(str(DEATHAURA), load_level=4)
    side = {p.pid: M.SIDES[k] for k, p in enumerate(sorted(rp.players, key=lambda p: p.pid))}
    started, destroyed, owner = [], [], {}
    for e in rp.tracker_events:
        name = type(e).__name__
        if name in ("UnitInitEvent", "UnitBornEvent") and e.control_pid in side and e.unit_type_name in TOWN_HALLS:
            owner[e.unit_id] = e.control_pid
            if e.frame > 0:
                started.append((side[e.control_pid], e.frame))
        elif name == "UnitDiedEvent" and e.unit_id in owner and e.killer_pid in side and e.killer_pid != owner[e.unit_id]:
            destroyed.append((side[e.killer_pid], e.frame))
    events = P.events(deathaura)
    assert [(e.actor, e.loop) for e in events if e.type == "expand"] == started and len(started) == 4
    assert [(e.actor, e.loop) for e in events if e.type == "base_kill"] == destroyed and len(destroyed) == 2
    assert deathaura["match"]["end_loop"] == rp.frames and events[-1].type == "win"
    assert events[-1].actor == deathaura["match"]["winner"] == side[rp.winner.players[0].pid]
    assert deathaura["match"]["release"] == rp.release_string == "5.0.2.81433"


def test_an_imported_record_names_its_file_and_match_and_is_no_committed_replay(deathaura):
    src = deathaura["source"]
    assert src["collection"] == "imported" and src["format"] == "sc2replay"
    assert src["match_key"] == P.PLUGIN.match_key(deathaura) == M.match_key(deathaura)
    assert src["record_files"] == [{"name": DEATHAURA.name, "sha256": "d71acac7e989dc1f5bcd7cb2b0d4c706e5a65300e09fa892c94788a506cfb3ef"}]
    mdl = V.load_model()
    assert src["match_key"] not in V.fitted_keys(mdl) and P.PLUGIN.refusal(deathaura) == ""
    values = P.PLUGIN.evaluate(deathaura)    # from the fold model its key names (fitted on none of it)
    assert len(values) == len(P.events(deathaura)) + 1 and values[-1] == 1.0 and all(0 < v < 1 for v in values[:-1])


def test_a_built_in_cases_replay_imports_with_that_cases_key_record_and_values(tmp_path):
    gts = _case_gts()
    if not gts:
        pytest.skip("tasks/sc2 has no built cases")
    gt = min(gts, key=lambda g: (P.REPLAYS / g["record"]["source"]["path"][len("test_replays/"):].replace("/", "__")).stat().st_size)
    native = P.REPLAYS / gt["record"]["source"]["path"][len("test_replays/"):].replace("/", "__")
    copy = tmp_path / "renamed.SC2Replay"        # the key is the match's, not the file name's
    shutil.copyfile(native, copy)
    rec = P.PLUGIN.record_from_files("sc2replay", [copy])
    assert P.PLUGIN.match_key(rec) == P.PLUGIN.match_key(gt["record"]) not in P.PLUGIN.fitting_keys()
    assert M.record_content(rec) == M.record_content(gt["record"])
    assert [round(v, 4) for v in P.PLUGIN.evaluate(rec)] == [v for _, v in gt["v_series"]]


def test_the_fitting_keys_are_the_models_replays_that_are_no_built_in_case():
    mdl = V.load_model()
    fitting = P.PLUGIN.fitting_keys()
    assert len(fitting) == len(mdl["replays"]) - P.BUILTIN_CASES == 31 and fitting <= set(V.fitted_keys(mdl))
    gts = _case_gts()
    if gts:
        cases = {M.match_key(g["record"]) for g in gts}
        assert not cases & fitting and cases | fitting == set(V.fitted_keys(mdl))
        # the model's list of its replays is the committed cases' own: its fold for each is the case's
        assert all(V.fold_of_key(mdl, M.match_key(g["record"])) == mdl["folds"][g["record"]["source"]["sha256"]] for g in gts)


def test_the_selection_applies_the_case_rule_to_both_ends():
    recs = {f"f{k}": {"source": {"sha256": f"{k:064x}"}, "match": {"end_loop": int(s * M.LOOPS_PER_REAL_S)}}
            for k, s in enumerate((100, 200, 3000, 3700))}
    cases, fitting = P.selection(2, 1, recs)
    assert sorted(cases) == ["f1", "f2"] and fitting == ["f0", "f3"]
    assert "longer than the 3600" in P.case_refusal(recs["f3"]) and "shorter than the 180" in P.case_refusal(recs["f0"])


@pytest.mark.parametrize("change, says", [
    (lambda r: r["match"].update(end_loop=10 ** 12), "not between 1 and"),
    (lambda r: r["units"].append("0 a 2 100 k|5 10 10,3 20 20"), "out of time order"),
    (lambda r: r["units"].append("0 a 2 100 k|5 10 10,999999 20 20"), "outside the map or the match"),
    (lambda r: r["buildings"].append("0 3 0 5 -1 -1 - 5000 10 -"), "out of range"),
    (lambda r: r["stats"].append("10 0 1 2 3 4 5 6 7 99999999999"), "stats row"),
    (lambda r: r["units"].append("0 a ٣ 100 k|5 10 10"), "not of the record's layout"),
    (lambda r: r.update(units=["0 w 2 50 -|1 1 1"] * (R.MAX_UNITS + 1)), "more than 20000 units"),
    (lambda r: r["match"].update(winner=None), "no winner"),
])
def test_a_record_out_of_range_is_named(deathaura, change, says):
    rec = json.loads(json.dumps(deathaura))
    change(rec)
    assert says in R.record_problem(rec)


# -- the import command: every refusal one line, exit 2, nothing written --------------------------------------

def _import(tmp_path: Path, capsys, *files: Path) -> tuple[int, str, Path]:
    tree = tmp_path / "tree"
    rc = import_cli.main(["--tasks-root", str(tree), "--game", "sc2", "--sc2replay", *map(str, files),
                          "--licence", "MIT"])
    return rc, capsys.readouterr().err, tree


def _refused(tmp_path, capsys, files, *needles):
    rc, err, tree = _import(tmp_path, capsys, *files)
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert all(n in err for n in needles) and "nothing was written" in err, err
    assert not tree.exists()


def test_a_team_game_is_refused(tmp_path, capsys):
    _refused(tmp_path, capsys, [TEAM_GAME], TEAM_GAME.name, "3 players (not one against one)")


def test_a_replay_without_tracker_events_is_refused(tmp_path, capsys):
    _refused(tmp_path, capsys, [NO_TRACKER], NO_TRACKER.name, "no tracker events")


@pytest.mark.parametrize("bound, value, says", [("MIN_CASE_S", 600.0, "shorter than the 600"),
                                                ("MAX_CASE_S", 300.0, "longer than the 300")])
def test_a_match_too_short_or_too_long_for_the_case_rule_is_refused(tmp_path, capsys, monkeypatch, bound, value, says):
    monkeypatch.setattr(P, bound, value)      # Deathaura lasts 506 real seconds
    _refused(tmp_path, capsys, [DEATHAURA], DEATHAURA.name, says)


def test_a_replay_of_the_models_fitting_set_is_refused(tmp_path, capsys):
    mdl = V.load_model()
    fitting = P.PLUGIN.fitting_keys()
    sha = min((s for s, r in mdl["replays"].items() if r["match_key"] in fitting and not P.case_refusal({"match": r})),
              key=lambda s: mdl["replays"][s]["end_loop"])     # the shortest the case rule accepts
    native = next(f for f in P.replay_files() if R.sha256(f) == sha)
    copy = tmp_path / "mine.SC2Replay"
    shutil.copyfile(native, copy)
    _refused(tmp_path, capsys, [copy], "mine.SC2Replay", "in the V_t model's fitting set")


@pytest.mark.parametrize("make, says", [
    (lambda d: d.write_text("1. e4 e5 2. Nf3 *\n"), "not a StarCraft II replay"),
    (lambda d: d.write_bytes(DEATHAURA.read_bytes()[:20000]), "sc2reader cannot"),
    (lambda d: (d.write_bytes(b"MPQ\x1b"), os.truncate(d, S.MAX_REPLAY_BYTES + 1)), "more than the 8388608"),
    (lambda d: os.mkfifo(d), "not a regular file"),
    (lambda d: d.symlink_to(DEATHAURA), "cannot be read"),
])
def test_a_file_that_is_no_replay_is_refused_without_blocking(tmp_path, capsys, make, says):
    bad = tmp_path / "bad.SC2Replay"
    make(bad)
    _refused(tmp_path, capsys, [bad], "bad.SC2Replay", says)


def test_a_reader_that_goes_past_its_limits_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(S, "PARSE_MEMORY_BYTES", 16 * 1024 * 1024)    # less than sc2reader needs to start
    _refused(tmp_path, capsys, [DEATHAURA], DEATHAURA.name, "reading it needed more than 16 MiB of memory")


def test_two_files_are_refused(tmp_path, capsys):
    _refused(tmp_path, capsys, [DEATHAURA, TEAM_GAME], "one replay file per match")
