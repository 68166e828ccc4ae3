"""A user's match in ShuttleSet's layout as a case (`import-cases --game badminton --shuttleset FILE ...`): the
reader agrees with the files' own fields, a built-in case's own files import with that case's key, record and
V_t, the match held out of every fitting set imports as a private case, a match of the prior's fitting data is
refused (both real ShuttleSet22 matches: tests/fixtures/records/badminton), and every bad file is one line,
exit 2, nothing written."""
from __future__ import annotations

import csv
import io
import json
import os
import shutil
from pathlib import Path

import pytest

from video_arena import paths
from video_arena.games.badminton import plugin as P
from video_arena.games.badminton import records as R
from video_arena.games.badminton import shuttleset as S
from video_arena.importing import cli as import_cli

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "records" / "badminton" / "set"
VIDEO = "CHEN_Yu_Fei_PUSARLA_V._Sindhu_Thailand_Open_2022_SemiFinals"              # held out (records.HELD_OUT)
FITTING = "Viktor_AXELSEN_Anthony_Sinisuka_GINTING_DAIHATSU_INDONESIA_MASTERS_2022_Semifinals"   # in the prior's data


def files(root: Path, video: str = VIDEO, sets: int = 2) -> list[Path]:
    return [root / "match.csv", root / "homography.csv"] + [root / video / f"set{n}.csv" for n in range(1, sets + 1)]


def _rows(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"), newline="")))


def _case_gts() -> list[dict]:
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted((paths.default_tasks_root() / "badminton" / "gt").glob("*.json"))]


# -- the reader ----------------------------------------------------------------------------------------

def test_the_reader_agrees_with_the_files_own_fields():
    """Per rally, from the set files' rows as they are (the csv module): the strokes are the rally's rows in
    order with their hitters and frames, the score after it is its last row's roundscore_A/B, its end label
    its last row's lose_reason; the players are match.csv's winner and loser, the games the set files."""
    rec = S.record_from_files(files(FIXTURE))
    meta = next(r for r in _rows(FIXTURE / "match.csv") if r["video"] == VIDEO)
    a_is_winner = rec["match"]["player_a"] == meta["winner"]
    assert {rec["match"]["player_a"], rec["match"]["player_b"]} == {meta["winner"], meta["loser"]}
    side = {"A": "a" if a_is_winner else "b", "B": "b" if a_is_winner else "a"}
    rallies = iter(rec["rallies"])
    for game in (1, 2):
        by_rally: dict[str, list[dict[str, str]]] = {}
        for row in _rows(FIXTURE / VIDEO / f"set{game}.csv"):
            by_rally.setdefault(row["rally"], []).append(row)
        for rid, rows in by_rally.items():
            r = next(rallies)
            last = rows[-1]
            score = [int(last["roundscore_A"]), int(last["roundscore_B"])]
            assert r["game"] == game and r["rally"] == int(rid) and r["label"] == last["lose_reason"]
            assert r["score"] == (score if a_is_winner else score[::-1])
            assert [(s[0], s[1]) for s in r["strokes"]] == [(int(float(x["frame_num"])), side[x["player"]]) for x in rows]
    assert next(rallies, None) is None and rec["match"]["games"] == 2
    # the game rows the plugin makes: each game to the player the set file's last score says, the match to the winner
    games = [s for s in P.PLUGIN.replay(rec) if s.type == "game"]
    assert [s.actor for s in games] == ["player_b", "player_b"] and rec["match"]["player_b"] == meta["winner"]


def test_a_built_in_cases_own_files_import_with_its_key_record_and_values(tmp_path):
    gts = _case_gts()
    if not gts:
        pytest.skip("tasks/badminton has no built cases")
    gt = min(gts, key=lambda g: g["duration_s"])
    collection, folder = gt["record"]["source"]["collection"], gt["record"]["source"]["folder"].rsplit("/", 1)[-1]
    root = R.collection_dir(collection)
    rec = P.PLUGIN.record_from_files("shuttleset", files(root, folder, gt["record"]["match"]["games"]))
    assert P.PLUGIN.match_key(rec) == P.PLUGIN.match_key(gt["record"]) not in P.PLUGIN.fitting_keys()
    assert {k: rec[k] for k in ("match", "rallies", "value_model")} == {k: gt["record"][k] for k in ("match", "rallies", "value_model")}
    assert [round(v, 4) for v in P.PLUGIN.evaluate(rec)] == [v for _, v in gt["v_series"]]
    # the same files in a folder of another name are the same rallies: refused, never given a prior that saw them
    renamed = tmp_path / "set"
    shutil.copytree(root / folder, renamed / "my_match")
    for name in ("match.csv", "homography.csv"):
        rows = [r for r in (root / name).read_text(encoding="utf-8").splitlines(keepends=True)]
        (renamed / name).write_text(rows[0] + next(r for r in rows if f",{folder}," in r).replace(folder, "my_match"), encoding="utf-8")
    with pytest.raises(P.FittingDataError, match=f"its rallies are those of {collection}/{folder}"):
        P.PLUGIN.record_from_files("shuttleset", files(renamed, "my_match", gt["record"]["match"]["games"]))


def test_the_fitting_keys_are_the_prior_tables_matches_that_are_no_built_in_case():
    table = {m.key for m in R.read_rallies()}
    fitting = P.PLUGIN.fitting_keys()
    assert len(table) == 93 and len(fitting) == 73 and fitting == table - P.case_keys()
    assert R.match_key(FITTING) in fitting
    # the held-out match is in no fitting set and no built-in case, though the selection pool lists it
    assert set(R.HELD_OUT) == {R.match_key(VIDEO)} and not set(R.HELD_OUT) & (table | P.case_keys())
    assert R.match_key(VIDEO) in {R.match_key(e.folder) for e in R.read_pool()}
    gts = _case_gts()
    if gts:
        assert {P.PLUGIN.match_key(g["record"]) for g in gts} == P.case_keys()


def test_a_match_from_outside_the_table_takes_a_prior_fitted_on_every_match():
    rec = S.record_from_files(files(FIXTURE))
    vm = P.PLUGIN.record_from_files("shuttleset", files(FIXTURE))["value_model"]
    assert vm == P.with_value_model(rec, in_table=False)["value_model"]
    assert vm["fitted_on"].startswith("the 93 other matches")
    with pytest.raises(R.RecordError, match="need none"):
        P.with_value_model(S.record_from_files(files(FIXTURE, FITTING)), in_table=False)


def test_the_held_out_match_imports_as_a_private_case(tmp_path, capsys):
    """A real match no shipped model has seen: one case, its events a row per rally and per game, its V_t from
    the prior fitted on every match of the table, updated by its own rallies so far (the first value is the
    priors' alone)."""
    tree = tmp_path / "tree"
    rc = import_cli.main(["--tasks-root", str(tree), "--game", "badminton", "--shuttleset", *map(str, files(FIXTURE)),
                          "--licence", "MIT (ShuttleSet22, CoachAI-Projects)"])
    assert rc == 0, capsys.readouterr().err
    (gt_path,) = (tree / "badminton" / "gt").glob("*.json")
    gt = json.loads(gt_path.read_text(encoding="utf-8"))
    rallies = sum(len({r["rally"] for r in _rows(FIXTURE / VIDEO / f"set{g}.csv")}) for g in (1, 2))
    assert rallies == 75 and len(gt["events"]) == rallies + 2
    assert [e["type"] for e in gt["events"]].count("game") == 2
    assert gt["record"]["source"]["format"] == "shuttleset"
    assert "public_match" not in (tree / "badminton" / "manifest.json").read_text(encoding="utf-8")   # not built-in
    assert gt["record"]["value_model"]["fitted_on"].startswith("the 93 other matches")
    assert gt["v_series"][0][1] == round(P.PLUGIN.evaluate(gt["record"])[0], 4)


# -- the import command: every refusal one line, exit 2, nothing written --------------------------------------

def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "set"
    shutil.copytree(FIXTURE, root)
    return root


def _edit(path: Path, change) -> None:
    rows = _rows(path)
    change(rows)
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    path.write_text(out.getvalue(), encoding="utf-8")


def _refused(tmp_path, capsys, paths_, *needles):
    tree = tmp_path / "tree"
    rc = import_cli.main(["--tasks-root", str(tree), "--game", "badminton", "--shuttleset", *map(str, paths_),
                          "--licence", "MIT"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert all(n in err for n in needles) and "nothing was written" in err, err
    assert not tree.exists()


def test_a_match_of_the_priors_fitting_data_is_refused(tmp_path, capsys):
    _refused(tmp_path, capsys, files(FIXTURE, FITTING), FITTING, "is in the V_t prior's fitting data")


def _last_rallies_dropped(rows):
    last = rows[-1]["rally"]
    rows[:] = [r for r in rows if r["rally"] not in (last, str(int(last) - 1))]


def _tenth_rallys_end(rows) -> dict[str, str]:
    return [r for r, nxt in zip(rows, rows[1:]) if r["rally"] != nxt["rally"]][9]


def _frames_times(k: int):
    return lambda rows: [r.update(frame_num=str(float(r["frame_num"]) * k)) for r in rows]


@pytest.mark.parametrize("edits, says", [
    ({"set2.csv": _last_rallies_dropped}, "game 2 ends at"),                                  # unfinished
    ({"set1.csv": lambda rows: _tenth_rallys_end(rows).update(roundscore_A="20")}, "the score goes from"),
    ({"set1.csv": _frames_times(4), "set2.csv": _frames_times(4)}, "the video's frame rate is 120"),
    ({"set1.csv": lambda rows: _tenth_rallys_end(rows).update(lose_reason="aliens")}, "unknown end label 'aliens'"),
])
def test_a_match_that_breaks_the_case_rules_is_refused(tmp_path, capsys, edits, says):
    root = _copy(tmp_path)
    for name, change in edits.items():
        _edit(root / VIDEO / name, change)
    _refused(tmp_path, capsys, files(root), VIDEO, says)


def test_a_match_of_one_game_is_refused_as_undecided(tmp_path, capsys):
    _refused(tmp_path, capsys, files(FIXTURE, sets=1), VIDEO, "games won {'a': 0, 'b': 1}")


@pytest.mark.parametrize("name, change, says", [
    ("set1.csv", lambda rows: rows[5].update(frame_num="inf"), "set1.csv line 7: frame_num 'inf' is not a number in range"),
    ("set1.csv", lambda rows: rows[5].update(landing_x="nan"), "landing_x 'nan' is not a number in range"),
    ("set2.csv", lambda rows: rows[0].update(player="C"), "player 'C'"),
    ("set1.csv", lambda rows: [r.pop("roundscore_B") for r in rows], "no column roundscore_B"),
    ("match.csv", lambda rows: rows[0].update(year="1e9"), "year '1e9' is not a year"),
    ("match.csv", lambda rows: rows[0].update(video="another_match"), "0 rows whose video is"),
    ("homography.csv", lambda rows: rows[0].update(homography_matrix="[[1, 0], [0, 1]]"), "not 3 x 3 finite numbers"),
    ("homography.csv", lambda rows: rows[0].update(homography_matrix="[[100, 0, 0], [0, 100, 0], [0, 0, 1]]"), "off the court"),
    ("homography.csv", lambda rows: rows[0].update(homography_matrix="[[1, 0, 0], [0, 1, 0], [0, 0, 0]]"), "division by zero"),
])
def test_a_file_out_of_range_is_refused(tmp_path, capsys, name, change, says):
    root = _copy(tmp_path)
    target = root / name if name in ("match.csv", "homography.csv") else root / VIDEO / name
    if name == "match.csv":      # a second row, so the one row that is not the match's is not taken as its
        _edit(target, lambda rows: rows.append(dict(rows[0], video="yet_another")))
    _edit(target, change)
    _refused(tmp_path, capsys, files(root), says)


@pytest.mark.parametrize("make, says", [
    (lambda p: (p.write_text("rally\n"), os.truncate(p, S.MAX_CSV_BYTES + 1)), "more than the 4194304"),
    (lambda p: os.mkfifo(p), "not a regular file"),
    (lambda p: p.write_bytes(b"\xff\xfe rally"), "not a CSV file in UTF-8"),
])
def test_a_set_file_that_is_no_csv_is_refused_without_blocking(tmp_path, capsys, make, says):
    root = _copy(tmp_path)
    (root / VIDEO / "set1.csv").unlink()
    make(root / VIDEO / "set1.csv")
    _refused(tmp_path, capsys, files(root), "set1.csv", says)


def test_too_many_rows_are_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(S, "MAX_ROWS", 100)       # set1.csv has 382 strokes
    _refused(tmp_path, capsys, files(FIXTURE), "set1.csv: more than 100 rows")


@pytest.mark.parametrize("pick, says", [
    (lambda fs: fs[1:], "no match.csv"),
    (lambda fs: fs[:2] + fs[3:], "must be set1.csv, set2.csv"),
    (lambda fs: fs + [fs[0].parent / "notes.txt"], "not a file of ShuttleSet's layout"),
    (lambda fs: fs[:3] + [fs[0].parent / "elsewhere" / "set2.csv"], "in different folders"),
])
def test_a_set_of_files_that_is_not_one_match_is_refused(tmp_path, capsys, pick, says):
    root = _copy(tmp_path)
    (root / "elsewhere").mkdir()
    shutil.copy(root / VIDEO / "set2.csv", root / "elsewhere" / "set2.csv")
    (root / "notes.txt").write_text("hello")
    _refused(tmp_path, capsys, pick(files(root)), says)
