"""The games' pixel readers as a framework: the perception agent's flat folder and its dispatcher, the
readers' standalone contract, the plugins' visible states, and the measurements made of them (T1
visibility, the visible ceiling's labels) on tiny inputs with exact expected numbers. The readers on real
videos (read == visible_features, the installed agent under run-b, V_t reproduced) are in
tests/e2e/test_baselines_e2e.py."""
from __future__ import annotations

import ast
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from video_arena.baselines import run as R
from video_arena.baselines import visible as V
from video_arena.core import tasks as T
from video_arena.games import readers as RD
from video_arena.games.base import game_names, load_definition, load_plugin
from video_arena.games.stone_board import placed_stones, visible_rows

REPO = Path(__file__).resolve().parents[2]
TASKS = REPO / "tasks"
READER_GAMES = RD.reader_games()
#: what a reader may import: the standard library, the sandbox image's numpy and Pillow, the shared helpers
READER_IMPORTS = set(sys.stdlib_module_names) | {"numpy", "PIL", "pixel_reader"}


def test_the_board_and_card_games_have_readers():
    assert {"chess", "doudizhu", "go", "gomoku"} <= set(READER_GAMES)
    assert R.perception_games(TASKS) == [g for g in T.list_games(TASKS) if g in READER_GAMES]


@pytest.mark.parametrize("game", READER_GAMES)
def test_a_reader_is_standalone_and_has_the_interface(game: str):
    """It imports nothing of the toolkit (it runs in the sandbox beside pixel_reader.py) and exposes READS
    (one line) and read(video, writer, log)."""
    for path in (RD.reader_path(game), RD.PIXEL_READER):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        assert imported <= READER_IMPORTS, (path, imported - READER_IMPORTS)
    reader = RD.load_reader(game)
    assert isinstance(reader.READS, str) and reader.READS.strip() and "\n" not in reader.READS
    assert list(__import__("inspect").signature(reader.read).parameters) == ["video", "writer", "log"]


def test_the_agents_folder_is_flat_and_indexed_by_title(tmp_path: Path):
    folder = R.install_agents(tmp_path / "agents")
    names = sorted(p.name for p in folder.iterdir())
    assert names == sorted(["perception_agent.py", "pixel_reader.py", "chance_agent.py", RD.INDEX,
                            *(f"{g}_reader.py" for g in READER_GAMES)])
    index = json.loads((folder / RD.INDEX).read_text())
    assert index == {load_definition(g).title.lower(): f"{g}_reader" for g in READER_GAMES}
    assert (folder / "chess_reader.py").read_bytes() == RD.reader_path("chess").read_bytes()


@pytest.mark.parametrize("game", READER_GAMES)
def test_the_dispatcher_finds_each_games_reader(tmp_path: Path, game: str):
    """From the installed folder alone (no toolkit on the path), the title instruction.md states picks the
    game's reader."""
    folder = R.install_agents(tmp_path / "agents")
    title = load_definition(game).title
    code = ("import sys, perception_agent as P; m = P.reader_for(P.title_of(sys.stdin.read()));"
            "print(m.__name__, m.__file__, m.READS)")
    res = subprocess.run([sys.executable, "-c", code], input=f"# Video-Arena: {title}\n\nrest\n",
                         capture_output=True, text=True, cwd=folder, env={"PATH": "/usr/bin:/bin"})
    assert res.returncode == 0, res.stderr
    name, file, reads = res.stdout.split(" ", 2)
    assert name == f"{game}_reader" and Path(file).parent == folder and reads.strip() == RD.load_reader(game).READS


def test_the_dispatcher_refuses_a_game_without_a_reader_in_one_line(tmp_path: Path):
    folder = R.install_agents(tmp_path / "agents")
    box = tmp_path / "box"
    box.mkdir()
    (box / "instruction.md").write_text("# Video-Arena: Tiddlywinks\n")
    res = subprocess.run([sys.executable, str(folder / "perception_agent.py"), "--sandbox", str(box)],
                         capture_output=True, text=True)
    assert res.returncode == 1 and res.stderr.strip().count("\n") == 0
    assert "no reader for 'tiddlywinks'" in res.stderr and "Traceback" not in res.stderr


def test_a_game_without_a_reader_is_said_so():
    without = [g for g in game_names() if g not in READER_GAMES]
    assert without and not R.perception_games(TASKS, without)
    with pytest.raises(LookupError, match="has no pixel reader"):
        RD.load_reader(without[0])


# -- the visible states of the plugins ---------------------------------------------------------------------

def test_stone_boards_give_the_stone_each_board_adds():
    rows0 = visible_rows(3, [(0, 0, True)])
    rows1 = visible_rows(3, [(0, 0, True), (2, 1, False)])
    rows2 = visible_rows(3, [(2, 1, False), (1, 2, True)])          # the black stone at a3 captured
    assert rows1 == ["X..", "..O", "..."]
    feats = [{"board": rows0}, {"board": rows1}, {"board": rows2}, {"board": rows2}, {"board": ["bad"]}]
    assert placed_stones(feats, 3) == [(True, 0, 0), (False, 2, 1), (True, 1, 2), None, None]


def test_doudizhu_turns_are_read_from_the_play_areas():
    from video_arena.games.doudizhu.plugin import visible_turns

    hands = ["3" * 1, "4", "5"]
    feats = [{"hands": hands, "table": ["33", "", ""]}, {"hands": hands, "table": ["33", "pass", ""]},
             {"hands": hands, "table": ["", "pass", "44"]}, {"hands": hands, "table": ["BR", "", "44"]},
             {"hands": hands, "table": ["BR", "", "44"]}]
    assert visible_turns(feats) == [(0, "33"), (1, ""), (2, "44"), (0, "BR")]   # the last shows no new turn


def test_a_doudizhu_game_is_made_from_the_hands_a_table_shows():
    from video_arena.games.doudizhu import engine as E

    gt = json.loads((TASKS / "doudizhu" / "gt" / f"{T.load_cases('doudizhu', TASKS)[0]['case_id']}.json").read_text())
    ranks = ["".join(c[1:] if c not in ("BJ", "RJ") else c[0] for c in h) for h in gt["record"]["hands"]]
    game = E.game_from_ranks(ranks)
    truth = E.new_game(gt["record"]["deal_seed"])
    assert [E.sort_cards(p.initial_hand) for p in game.players] == [E.sort_cards(p.initial_hand) for p in truth.players]
    assert sorted(game.state["actions"]) == sorted(truth.state["actions"])
    with pytest.raises(ValueError, match="not a deal"):
        E.game_from_ranks([ranks[0][:-1], ranks[1], ranks[2]])


def test_an_unreadable_chess_position_repeats_the_value_before_it(monkeypatch):
    import chess.engine

    from video_arena.games.chess import plugin as CP

    seen = []
    monkeypatch.setattr(CP.ChessPlugin, "_value", staticmethod(lambda engine, board: seen.append(board.fen()) or 0.25))

    class Engine:
        def configure(self, options):
            pass

        def quit(self):
            pass

    monkeypatch.setattr(CP.chess.engine.SimpleEngine, "popen_uci", staticmethod(lambda path: Engine()))
    monkeypatch.setattr(CP, "stockfish_path", lambda: "stockfish")
    feats = [{"fen": "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"}, {"fen": "not a fen"},
             {"fen": "8/8/8/8/8/8/8/8 w - - 0 1"}]
    assert CP.PLUGIN.visible_values(feats, {}) == [0.25, 0.25, 0.25, 0.25]
    assert len(seen) == 2   # the start and the one legal position; the other two repeat


# -- the measurements, on tiny inputs ----------------------------------------------------------------------

def test_type_counts_count_ground_truth_and_rows_per_type():
    gt = [{"type": "move"}, {"type": "capture"}, {"type": "move"}, {"type": "check"}]
    rows = [{"type": "move"}, {"type": "capture"}, {"type": "castle"}, {"type": "move"}]
    counts = V.type_counts(gt, rows, [[0, 0], [1, 1], [3, 2]])
    assert counts == {"move": [2, 2, 2, 2], "capture": [1, 1, 1, 1], "check": [1, 0, 0, 0], "castle": [0, 0, 1, 0]}


def test_the_visibility_table_has_a_row_per_game_and_type_and_says_n_a_without_a_reader():
    counts = {"chess": {"move": [4, 3, 3, 3], "capture": [2, 2, 3, 2], "castle": [0, 0, 1, 0]}, "sc2": None}
    types = {"chess": ["move", "capture", "castle", "check"], "sc2": ["expand"]}
    assert V.visibility_table(counts, types) == [
        "| game | event type | ground-truth events | recall | precision |", "|---|---|---|---|---|",
        "| chess | move | 4 | 0.750 | 1.000 |",
        "| chess | capture | 2 | 1.000 | 0.667 |",
        "| chess | castle | 0 | n/a | 0.000 |",
        "| chess | all | 6 | 0.833 | 0.714 |",
        "| sc2 | all | n/a | n/a (no reader) | n/a (no reader) |"]


def test_the_ceiling_answer_labels_rows_from_rounded_values_as_the_ground_truth_does():
    gd = load_definition("chess")                     # neutral 0.5, band 0.05
    rows = [{"t": 1.0, "type": "move", "actor": "white", "where": "e4", "delta": "flat", "state": "even"}] * 3
    answer = V.labelled(rows, [0.5, 0.56, 0.5600004, 0.44996], gd)   # 0.44996 is black, 0.4500 even
    assert [(e["delta"], e["state"]) for e in answer["events"]] == [("up", "white"), ("flat", "white"),
                                                                    ("down", "even")]
    assert answer["events"][0]["where"] == "e4" and rows[0]["delta"] == "flat"   # the rows are not changed


@pytest.mark.parametrize("values,why", [([0.5, 0.5], "2 values, want 4"), ([0.5, 0.5, math.nan, 0.5], "finite"),
                                        ([0.5, 0.5, 1.5, 0.5], "in \\[0.0, 1.0\\]"), ("0.5", "str")])
def test_values_of_the_wrong_shape_are_refused(values, why):
    with pytest.raises(V.VisibleError, match=why):
        V.check_values(values, 3, (0.0, 1.0), "chess/x")


def test_the_visibility_of_a_judged_answer_on_a_real_case(tmp_path: Path, J):
    """A results folder holding one answer: the ground truth minus its first two events, plus one row no
    event is near; the counts are the judge's matches per type."""
    game, cid = "chess", T.load_cases("chess", TASKS)[0]["case_id"]
    gt = J.load_gt(TASKS / game / "gt" / f"{cid}.json")
    types = [e["type"] for e in gt["events"]]
    assert types[:2] == ["move", "move"]
    rows = J.oracle_answer(gt)["events"][2:] + [dict(J.oracle_answer(gt)["events"][0], t=gt["duration_s"])]
    d = tmp_path / game / cid
    d.mkdir(parents=True)
    (d / "answer.json").write_text(json.dumps({"events": rows}))
    counts = V.visibility(tmp_path, TASKS, game, [cid, "notthere"])
    assert counts["move"] == [types.count("move"), types.count("move") - 2, types.count("move") - 1,
                              types.count("move") - 2]
    assert sum(c[0] for c in counts.values()) == len(gt["events"]) and sum(c[2] for c in counts.values()) == len(rows)


# -- with a perfect read, the visible V_t is V_t (what the picture lacks aside) -----------------------------

def _first_gt(game: str) -> dict:
    cid = T.load_cases(game, TASKS)[0]["case_id"]
    return json.loads((TASKS / game / "gt" / f"{cid}.json").read_text())


@pytest.mark.parametrize("game,n", [("gomoku", 4), ("doudizhu", 6)])
def test_a_watchers_v_t_of_the_drawn_states_is_the_ground_truths(game: str, n: int):
    """Nothing of V_t is hidden: the visible V_t of the states the video shows, read exactly, is the committed
    ground truth's V_t to the digit (the first n positions: the engine is slow)."""
    gt, plugin = _first_gt(game), load_plugin(game)
    values = plugin.visible_values(plugin.visible_features(gt["record"])[:n - 1], {})
    assert [round(v, 4) for v in values] == [v for _, v in gt["v_series"][:n]]


def test_chess_asks_stockfish_about_the_positions_v_t_asked_about(monkeypatch):
    """Stockfish at a fixed node budget, one thread and a cleared hash is a function of the position: the
    visible V_t of a perfect read sends exactly the positions `evaluate` sent (the engine itself: e2e)."""
    from video_arena.games.chess import plugin as CP

    asked: list[list[str]] = []
    monkeypatch.setattr(CP.ChessPlugin, "_values", lambda self, boards, progress=None: asked.append(
        [b.fen() for b in boards]) or [0.5] * len(boards))
    record = _first_gt("chess")["record"]
    CP.PLUGIN.evaluate(record)
    CP.PLUGIN.visible_values(CP.PLUGIN.visible_features(record), {})
    assert asked[0] == asked[1] and len(asked[0]) == len(record["moves"]) + 1


def test_go_asks_katago_what_v_t_asked_when_the_komi_is_the_visible_one(monkeypatch):
    """KataGo at one visit is deterministic (docs/CASES.md): the visible V_t of a perfect read sends the
    query `evaluate` sent (moves and rules) with VISIBLE_KOMI, so it is V_t for every game of that komi."""
    from video_arena.games.go import plugin as GP

    asked = []
    monkeypatch.setattr(GP.kg, "black_winrates", lambda game_id, moves, komi, progress=None, initial_stones=None: asked.append(
        (moves, komi)) or [0.5] * (len(moves) + 1))
    record = _first_gt("go")["record"]
    GP.PLUGIN.evaluate(record)
    GP.PLUGIN.visible_values(GP.PLUGIN.visible_features(record), {})
    assert asked[0][0] == asked[1][0] and asked[1][1] == GP.VISIBLE_KOMI
    assert record["komi"] == GP.VISIBLE_KOMI   # the first case's: its visible V_t is V_t
