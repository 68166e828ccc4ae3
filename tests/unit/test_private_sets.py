"""Private sets and contamination said out loud (importing/contamination.py, importing/records.py,
cases/records.py): a built-in case's match imported from another file is flagged as that public match (the
manifest, import-cases, validate, score); a match of a game's V_t fitting set is refused for every game;
`--pick N`; `build-cases --records` on a folder of shipped records.  Stockfish is replaced by a constant V_t
here (the flags and the selection do not depend on it; tests/e2e/test_private_set.py runs the engine)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fixtures.record_imports import builtin_chess_pgn, run_import
from scoring_helpers import make_tasks
from video_arena import paths
from video_arena.core.tasks import TasksTree
from video_arena.games.base import game_names, load_definition, load_plugin
from video_arena.harbor.validate import TaskReport, public_match_warnings
from video_arena.core import case_origins as CO
from video_arena.importing import contamination as CT
from video_arena.importing import private_set as build_cli
from video_arena.importing import records as RS
from video_arena.importing.importer import Importer, Provenance, RecordRefused
from video_arena.scoring import cli as score_cli

pytestmark = pytest.mark.usefixtures("no_tasks_env")

RECORDS = Path(__file__).resolve().parents[1] / "fixtures" / "records"
DEEP_BLUE = RECORDS / "chess" / "kasparov-deep-blue-1997.pgn"
CHESS = load_plugin("chess")
RECORD_GAMES = [g for g in game_names() if load_definition(g).record_formats]


@pytest.fixture
def no_engine(monkeypatch):
    """Chess V_t without Stockfish: 0.5 at every position (the rendering and the files are real)."""
    monkeypatch.setattr(type(CHESS), "evaluate", lambda self, record, progress=None: [0.5] * (len(record["moves"]) + 1))


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): (b"" if p.is_dir() else p.read_bytes())
            for p in sorted(root.rglob("*"))} if root.exists() else {}


def builtin_record(game: str) -> dict:
    tree = TasksTree(paths.default_tasks_root())
    return tree.read_gt(game, tree.listed_case_ids(game)[0])["record"]


# -- a built-in case's match, from another file: flagged ------------------------------------------------------

def test_a_pgn_of_a_built_in_case_imports_flagged_as_that_built_in_match(tmp_path, capsys, no_engine):
    pgn, builtin_id = builtin_chess_pgn(tmp_path / "club.pgn")
    tree = tmp_path / "tree"
    assert run_import(tree, "chess", "pgn", [pgn], "CC0-1.0") == 0
    out = capsys.readouterr().out
    (entry,) = TasksTree(tree).read_manifest("chess")["cases"]
    assert entry[CO.PUBLIC_MATCH] == builtin_id
    cid = entry["case_id"]
    assert f"warning: chess/{cid} is the same match as the built-in case chess/{builtin_id}" in out
    # validate names it (a warning line per such task), score says the table is public
    reports = [TaskReport(tmp_path / f"chess-{cid}")]
    (line,) = public_match_warnings(reports, tree)
    assert line.startswith(f"warning chess-{cid}: chess/{cid} is the same match as the built-in case chess/{builtin_id}")
    summary = CO.origin_summary(CO.case_origins(tree, "chess"))
    assert summary["kind"] == CO.PUBLIC and summary["public_matches"] == {cid: builtin_id}


def test_a_private_record_is_not_flagged(tmp_path, capsys, no_engine):
    tree = tmp_path / "tree"
    assert run_import(tree, "chess", "pgn", [DEEP_BLUE], "GPL-3.0", "DeepBlu2") != 0    # two games qualify
    assert "choose one with --pick N" in capsys.readouterr().err and not tree.exists()
    assert run_import(tree, "chess", "pgn", [DEEP_BLUE], "GPL-3.0", "DeepBlu2", pick=2) == 0
    (entry,) = TasksTree(tree).read_manifest("chess")["cases"]
    assert CO.PUBLIC_MATCH not in entry and "warning" not in capsys.readouterr().out
    assert TasksTree(tree).read_gt("chess", "DeepBlu2")["record"]["source"]["game"] == 2
    # the game definition's version is stamped into the imported case's ground truth and the manifest
    assert TasksTree(tree).read_gt("chess", "DeepBlu2")["game_version"] == 1
    assert TasksTree(tree).read_manifest("chess")["game_version"] == 1
    assert public_match_warnings([TaskReport(tmp_path / "chess-DeepBlu2")], tree) == []
    assert CO.origin_summary(CO.case_origins(tree, "chess"))["kind"] == CO.PRIVATE


def test_the_built_in_match_keys_are_computed_once_per_state_of_the_cases_and_the_code(tmp_path, monkeypatch):
    """The keys are kept in the checkout's cache under a stamp of the ground truths and the game's code: the second
    import computes none, a changed stamp or a cache that is a link or holds anything else computes them again."""
    cache = tmp_path / "chess.json"
    monkeypatch.setattr(CT, "keys_cache_path", lambda game: cache)
    calls = []
    real = type(CHESS).match_key
    monkeypatch.setattr(type(CHESS), "match_key", lambda self, rec: calls.append(1) or real(self, rec))
    n = len(TasksTree(paths.default_tasks_root()).listed_case_ids("chess"))
    first = CT.builtin_match_keys.__wrapped__("chess")
    assert len(calls) == n and json.loads(cache.read_text())["keys"] == first
    assert CT.builtin_match_keys.__wrapped__("chess") == first and len(calls) == n        # read back, none computed
    doc = json.loads(cache.read_text())
    cache.write_text(json.dumps({"stamp": "another state of the cases", "keys": {"x": "y"}}))
    assert CT.builtin_match_keys.__wrapped__("chess") == first and len(calls) == 2 * n
    for bad in ([], {"stamp": doc["stamp"], "keys": {"k": 1}}, "not json"):
        cache.write_text(bad if isinstance(bad, str) else json.dumps(bad))
        assert CT.builtin_match_keys.__wrapped__("chess") == first
    assert len(calls) == 5 * n
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps({"stamp": doc["stamp"], "keys": {"forged": "case"}}))
    cache.unlink()
    cache.symlink_to(elsewhere)
    assert CT.builtin_match_keys.__wrapped__("chess") == first and len(calls) == 6 * n   # a link is not followed


@pytest.mark.parametrize("game", RECORD_GAMES)
def test_every_games_built_in_cases_have_match_keys_none_in_its_fitting_set(game):
    keys = CT.builtin_match_keys(game)
    assert len(keys) == len(TasksTree(paths.default_tasks_root()).listed_case_ids(game)) > 0
    assert not set(keys) & load_plugin(game).fitting_keys()
    record = builtin_record(game)
    assert CT.public_match(load_plugin(game), record) == TasksTree(paths.default_tasks_root()).listed_case_ids(game)[0]


def test_the_games_with_a_fitted_v_t_model_name_its_matches():
    fitted = {g for g in RECORD_GAMES if load_plugin(g).fitting_keys()}
    assert fitted == {"badminton", "dota2", "gfootball", "sc2"}


# -- a match the V_t model was fitted on: refused, for every game ---------------------------------------------

@pytest.mark.parametrize("game", RECORD_GAMES)
def test_a_record_of_the_fitting_set_is_refused_for_every_game(game, monkeypatch, tmp_path):
    plugin = load_plugin(game)
    record = builtin_record(game)
    monkeypatch.setattr(type(plugin), "fitting_keys", lambda self: frozenset({plugin.match_key(record)}))
    with pytest.raises(RecordRefused, match="in the V_t model's fitting set"):
        RS.screen(plugin, [record], pick=1)
    assert RS.screen(plugin, [record]).chosen == []
    (fmt, _), = load_definition(game).record_formats
    with Importer(tmp_path / "tree", None) as imp:
        with pytest.raises(RecordRefused, match="in the V_t model's fitting set"):
            imp.add_record(game, fmt, record, [], Provenance("s", "l", "m"))
    assert not (tmp_path / "tree").exists()


def test_a_real_fitting_set_match_is_refused_by_import_cases(tmp_path, capsys):
    """DOTA 2: a committed match that is no case is the V_t model's training data (its match id is its key)."""
    from video_arena.games.dota2 import records as R

    plugin = load_plugin("dota2")
    mid = next(k for k in R.all_matches() if plugin.match_key({"opendota": {"match_id": k}}) in plugin.fitting_keys())
    f = tmp_path / "m.json"
    f.write_text(json.dumps(R.all_matches()[mid]["match"]))
    assert run_import(tmp_path / "tree", "dota2", "opendota", [f], "x") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "in the V_t model's fitting set" in err and not (tmp_path / "tree").exists()


# -- --pick ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("pick, says", [(0, "--pick 0: the files hold 6 match(es)"), (7, "--pick 7: the files hold 6"),
                                        (3, "game 3: result '1/2-1/2' is not decisive"),
                                        (6, "game 6: 37 plies, outside the 40-140")])
def test_pick_out_of_range_or_refused_is_one_line(tmp_path, capsys, pick, says):
    assert run_import(tmp_path / "tree", "chess", "pgn", [DEEP_BLUE], "x", pick=pick) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err and "nothing was written" in err, err
    assert not (tmp_path / "tree").exists()


def test_without_pick_every_qualifying_game_is_chosen_and_the_rest_said():
    records = RS.read_records(CHESS, "pgn", [DEEP_BLUE])
    out = RS.screen(CHESS, records)
    assert [r["source"]["game"] for r, _ in out.chosen] == [1, 2]
    assert len(out.left_out) == 4 and "game 6: 37 plies" in out.left_out[-1]
    # a second copy of a match is left out, naming the first
    twice = RS.screen(CHESS, records + records[:1])
    assert len(twice.chosen) == 2 and twice.left_out[-1].endswith("the same match as kasparov-deep-blue-1997.pgn game 1")


# -- build-cases --records --------------------------------------------------------------------------------------

@pytest.fixture
def records_folder(tmp_path) -> tuple[Path, str]:
    """Deep Blue's six games (two decisive, four the rules refuse) and a built-in case's game in a subfolder."""
    folder = tmp_path / "records"
    (folder / "club").mkdir(parents=True)
    shutil.copyfile(DEEP_BLUE, folder / DEEP_BLUE.name)
    _, builtin_id = builtin_chess_pgn(folder / "club" / "club.pgn")
    (folder / "notes.txt").write_text("not a record")
    return folder, builtin_id


def build(folder: Path, tree: Path, *extra: str) -> int:
    return build_cli.main(["--records", str(folder), "--games", "chess", "--tasks-root", str(tree), *extra])


def test_build_cases_records_picks_n_of_what_the_rules_take(records_folder, tmp_path, capsys, no_engine):
    folder, builtin_id = records_folder
    tree = tmp_path / "private"
    assert build(folder, tree, "--count", "1", "--seed", "7") == 0
    out = capsys.readouterr().out
    assert out.count("left out: ") == 4 and "game 3: result '1/2-1/2' is not decisive" in out
    assert "chess: 1 case(s) of the 3 pgn record(s) that qualify (2 file(s) read, 4 record(s) left out; seed 7)" in out
    (entry,) = TasksTree(tree).read_manifest("chess")["cases"]
    keyed = [(CHESS.match_key(r), r) for f in (folder / DEEP_BLUE.name, folder / "club" / "club.pgn")
             for r in RS.read_records(CHESS, "pgn", [f]) if not CHESS.refusal(r)]
    (key, record), = RS.seeded_pick("chess", 7, keyed, 1)
    assert CHESS.match_key(TasksTree(tree).read_gt("chess", entry["case_id"])["record"]) == key
    assert entry.get(CO.PUBLIC_MATCH) == (builtin_id if key in CT.builtin_match_keys("chess") else None)
    cases = json.loads((tree / "chess" / "cases.json").read_text())["cases"]
    assert [c["case_id"] for c in cases] == [entry["case_id"]] and cases[0]["source"] == {"collection": "imported"}


def test_the_seeded_pick_depends_on_the_seed_and_the_matches_only():
    keyed = [(f"k{i}", i) for i in range(10)]
    one = RS.seeded_pick("chess", 5, keyed, 4)
    assert RS.seeded_pick("chess", 5, keyed[::-1], 4) == one and len(one) == 4
    assert any(RS.seeded_pick("chess", s, keyed, 4) != one for s in range(6, 9))
    assert RS.seeded_pick("chess", 5, keyed, None) == sorted(keyed)


@pytest.mark.parametrize("make, args, says", [
    (lambda f: None, ["--count", "4"], "--count 4: 3 of the records below"),
    (lambda f: (f / "link.pgn").symlink_to(f / DEEP_BLUE.name), [], "link.pgn is a symbolic link"),
    (lambda f: (f / "linked").symlink_to(f / "club"), [], "linked is a symbolic link"),
    (lambda f: shutil.rmtree(f / "club") or (f / DEEP_BLUE.name).unlink(), [], "no pgn file (*.pgn) below"),
])
def test_build_cases_records_refuses_in_one_line_and_writes_nothing(records_folder, tmp_path, capsys, make, args, says):
    folder, _ = records_folder
    make(folder)
    tree = tmp_path / "private"
    assert build(folder, tree, *args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err and "nothing was written" in err, err
    assert not tree.exists()


def test_build_cases_records_bounds_the_folder(records_folder, tmp_path, capsys, monkeypatch):
    folder, _ = records_folder
    monkeypatch.setattr(RS, "MAX_RECORD_FILES", 1)
    assert build(folder, tmp_path / "t") == 2
    assert "more than 1 pgn files" in capsys.readouterr().err
    monkeypatch.setattr(RS, "MAX_DEPTH", 0)
    monkeypatch.setattr(RS, "MAX_RECORD_FILES", 10)
    assert build(folder, tmp_path / "t") == 2
    assert "nested deeper than 0" in capsys.readouterr().err


def test_build_cases_records_usage(records_folder, tmp_path):
    folder, _ = records_folder
    for extra in (["--media-only"], ["--cases", "3"], ["--count", "0"]):
        with pytest.raises(SystemExit) as exc:
            build(folder, tmp_path / "t", *extra)
        assert exc.value.code == 2
    with pytest.raises(SystemExit):
        build_cli.main(["--records", str(folder), "--tasks-root", str(tmp_path / "t")])        # no --games
    with pytest.raises(SystemExit):
        build_cli.main(["--games", "chess", "--count", "2", "--tasks-root", str(tmp_path / "t")])  # no --records


# -- score: public, private or mixed, per game ------------------------------------------------------------------

def test_score_says_whether_a_tables_cases_are_public_private_or_mixed(tmp_path, capsys):
    from scoring_helpers import ORACLE, a_run, write_cell

    tasks = tmp_path / "tasks"
    ids = make_tasks(tasks, {"chess": 3, "go": 2, "gomoku": 1})
    for game, sources in (("chess", [None, "imported", "imported"]), ("go", ["imported", "imported"])):
        doc = json.loads((tasks / game / "cases.json").read_text())
        for c, coll in zip(doc["cases"], sources):
            if coll:
                c["source"] = {"collection": coll}
        (tasks / game / "cases.json").write_text(json.dumps(doc))
    man = json.loads((tasks / "go" / "manifest.json").read_text())
    man["cases"][0][CO.PUBLIC_MATCH] = "Builtin1"
    man["cases"][1][CO.PUBLIC_MATCH] = "Builtin2"
    (tasks / "go" / "manifest.json").write_text(json.dumps(man))
    res = tmp_path / "res"
    for game, cids in ids.items():
        for cid in cids:
            write_cell(res, a_run(game, cid), ORACLE)
    csv = tmp_path / "t.csv"
    assert score_cli.main([str(res), "--tasks-root", str(tasks), "--quiet", "--bootstrap", "0",
                           "--no-verify-requests", "--csv", str(csv)]) == 0
    out = capsys.readouterr().out
    assert "    chess: mixed (1 built-in (public); 2 imported (private))" in out
    assert (f"    go: public (2 imported but the same match as a built-in case (public: go/{ids['go'][0]} = built-in "
            f"go/Builtin1, go/{ids['go'][1]} = built-in go/Builtin2))") in out
    assert "    gomoku: public (1 built-in (public))" in out
    rows = {r.split(",")[1]: r.split(",")[-1] for r in csv.read_text().splitlines()[1:]}
    assert rows == {"chess": "mixed", "go": "public", "gomoku": "public", "OVERALL": "mixed"}
    assert score_cli.main([str(res), "--tasks-root", str(tasks), "--quiet", "--bootstrap", "0",
                           "--no-verify-requests", "--report", "md"]) == 0
    assert "- chess: mixed (1 built-in (public); 2 imported (private))" in capsys.readouterr().out


@pytest.mark.parametrize("game, n_matches", [("badminton", 2), ("chess", 1), ("doudizhu", 4), ("go", 1), ("gomoku", 1),
                                             ("sc2", 3)])
def test_a_folder_of_each_games_shipped_records_is_found_by_its_formats_endings(game, n_matches):
    plugin = load_plugin(game)
    (fmt, _), = load_definition(game).record_formats
    groups = RS.record_groups(plugin, fmt, RECORDS / game)
    assert len(groups) == n_matches, groups
    if game == "badminton":      # a match: its set files and the match.csv and homography.csv beside its folder
        assert all(sorted(f.name for f in g) == ["homography.csv", "match.csv", "set1.csv", "set2.csv"] for g in groups)
        assert [g[0].parent.name[:6] for g in groups] == ["CHEN_Y", "Viktor"]
        (record,) = RS.read_records(plugin, fmt, groups[0])     # the held-out match: no model has seen it
        assert record["value_model"]["fitted_on"].startswith("the 93 other matches")
        with pytest.raises(RecordRefused, match="in the V_t prior's fitting data"):   # read whole: a fitting match
            RS.read_records(plugin, fmt, groups[1])


def test_gfootball_dumps_are_found_by_the_dump_ending():
    assert ".dump" in load_plugin("gfootball").record_file_suffixes("gfootball-dump")
