"""A user's SGF file as a Go case record (`import-cases --sgf`): the shipped handicap game against GNU Go's
own reading of the file, handicap stones and komi through replay, render and the KataGo query, the match
key of a built-in game read from its SGF, and every refusal as one line (fast: no KataGo)."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from video_arena.games.base import load_plugin
from video_arena.games.go import evaluator as kg
from video_arena.games.go import plugin as gp
from video_arena.games.go import sgf_file as S
from video_arena.games.go.rules import BLACK, WHITE, xy_to_where

P = load_plugin("go")
TESTS = Path(__file__).resolve().parents[1]
FOX = TESTS / "fixtures" / "records" / "go" / "fox_go_server_handicap.sgf"
GNUGO = shutil.which("gnugo") or "/usr/games/gnugo"   # a host package of the tests: scripts/apt-packages.txt


def fox_record() -> dict:
    return P.record_from_files("sgf", [FOX])


def final_board(record):
    board = captured = None
    counts = {BLACK: 0, WHITE: 0}
    for i, (board, captured) in enumerate(gp.positions(record)):
        if i:
            counts[record["moves"][i - 1][0]] += len(captured)
    return board, counts


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "g.sgf"
    path.write_text(text, encoding="utf-8")
    return path


# -- the shipped record ----------------------------------------------------------------------------------------

def test_the_handicap_game_reads_with_its_stones_komi_and_result():
    r = fox_record()
    assert r["handicap"] == ["pd", "dp"] and r["komi"] == 0.0 and r["result"] == "B+R" and r["size"] == 19
    assert len(r["moves"]) == 100 and r["moves"][0] == ["W", "dc"]
    assert r["source"] | {"id": "x"} == {"collection": "imported", "id": "x", "format": "sgf", "file": FOX.name,
                                          "passes_at_end": 0}
    assert P.refusal(r) == ""
    steps = P.replay(r)
    assert steps[0].actor == "white" and steps[1].actor == "black" and P.final_value(r) == 1.0


def test_gnu_go_reading_the_same_file_ends_on_the_same_board_with_the_same_captures():
    cmds = f"loadsgf {FOX}\nlist_stones black\nlist_stones white\ncaptures black\ncaptures white\nquit\n"
    out = subprocess.run([GNUGO, "--mode", "gtp"], input=cmds, capture_output=True, text=True, timeout=60).stdout
    answers = [block.strip()[1:].split() for block in out.split("\n\n") if block.strip().startswith("=")]
    board, counts = final_board(fox_record())
    ours = {c: sorted(xy_to_where((x, y)).upper() for x, y, col in board.stones() if col == c) for c in (BLACK, WHITE)}
    assert sorted(answers[1]) == ours[BLACK] and sorted(answers[2]) == ours[WHITE]
    assert (int(answers[3][0]), int(answers[4][0])) == (counts[BLACK], counts[WHITE])
    assert sum(s.type == "capture" for s in P.replay(fox_record())) == 3 and sum(counts.values()) > 0


def test_the_handicap_stones_are_on_the_board_from_the_first_frame():
    r = fox_record()
    first = P.render_position(r, 0)
    for point in r["handicap"]:
        x, y = gp.sgf_to_xy(point)
        assert sum(first.getpixel((gp._px(x), gp._px(y)))) < 150            # a black stone at pd and dp
    empty = P.render_position(dict(r, handicap=[]), 0)
    assert empty.getpixel((gp._px(15) + 6, gp._px(3) + 6)) == gp.BOARD_RGB


def test_katago_is_asked_with_the_handicap_stones_and_white_to_move(tmp_path, monkeypatch):
    monkeypatch.setenv(kg.VT_CACHE_ENV, str(tmp_path))
    asked = []

    class FakeEngine:
        def query(self, q, n):
            asked.append(q)
            for t in q["analyzeTurns"]:
                yield {"id": q["id"], "turnNumber": t, "rootInfo": {"winrate": 0.5}}

    monkeypatch.setattr(kg, "engine", lambda: FakeEngine())
    r = fox_record()
    assert len(P.evaluate(r)) == 101
    q = asked[0]
    assert q["initialStones"] == [["B", "Q16"], ["B", "D4"]] and q["initialPlayer"] == "W" and q["komi"] == 0.0
    assert q["moves"][0] == ["W", "D17"] and len(q["moves"]) == 100
    # a game without handicap stones keeps its query and its cache file name
    gtp = [["B", "Q16"]]
    assert kg.cache_path("g", gtp, 6.5) == kg.cache_path("g", gtp, 6.5, []) != kg.cache_path("g", gtp, 6.5, [["B", "D4"]])


def test_passes_that_end_a_counted_game_are_dropped(tmp_path):
    text = FOX.read_text(encoding="utf-8").replace("RE[B+R]", "RE[B+3.5]").rstrip().rstrip(")") + ";B[];W[tt])"
    r = P.record_from_files("sgf", [write(tmp_path, text)])
    assert r["moves"] == fox_record()["moves"] and r["source"]["passes_at_end"] == 2 and r["result"] == "B+3.5"
    assert P.match_key(r) == P.match_key(fox_record())


def test_a_built_in_games_own_sgf_imports_with_that_cases_match_key():
    for gt_path in sorted((TESTS.parent / "tasks" / "go" / "gt").glob("*.json"))[:3]:
        gt = json.loads(gt_path.read_text())
        record = P.record_from_files("sgf", [TESTS.parent / gt["record"]["source"]["file"]])
        assert P.match_key(record) == P.match_key(gt["record"])
        assert {k: record[k] for k in ("moves", "komi", "size")} == {k: gt["record"][k] for k in ("moves", "komi", "size")}


def test_the_built_in_selection_is_the_same_rules_and_the_collections_curation():
    selectable = [name for name, why in gp._candidates() if not why]
    assert len(selectable) == 25 and all(P.refusal(gp.load_record(name)) == "" for name in selectable)
    short = gp.load_record(next(n for n, w in gp._candidates() if w.endswith("outside the 80-140 a case has")))
    assert P.refusal(short).endswith("outside the 80-140 a case has")


# -- refusals: one line, exit 2, nothing written ---------------------------------------------------------------

def fox_text() -> str:
    return FOX.read_text(encoding="utf-8")


@pytest.mark.parametrize("edit,needle", [
    (lambda t: t.replace("SZ[19]", "SZ[13]"), "a 13 board; Go cases are 19x19"),
    (lambda t: t.replace("GM[1]", "GM[4]"), "GM[4] is not Go"),
    (lambda t: t + "\n(;GM[1]SZ[19];B[pd])", "more than one game tree"),
    (lambda t: t.replace(";AB[pd][dp]", ";AB[pd][dp]AW[dd]"), "white or empty setup stones"),
    (lambda t: t.replace(";W[dc];", ";W[dc];AB[aa];"), "setup stones (AB/AW/AE) after a move"),
    (lambda t: t.replace(";AB[pd][dp]", ";"), "HA[2] but 0 handicap stones"),
    (lambda t: t.replace("HA[2]", "HA[3]"), "HA[3] but 2 handicap stones"),
    (lambda t: t.replace("AB[pd][dp]", "AB[pd][zz]"), "AB[zz] is not a point"),
    (lambda t: t.replace("KM[0]", ""), "no komi (KM)"),
    (lambda t: t.replace("KM[0]", "KM[3.25]"), "komi 3.25 is not a whole or half point"),
    (lambda t: t.replace("KM[0]", "KM[1e999]"), "is not a whole or half point"),
    (lambda t: t.replace("RE[B+R]", "RE[0]"), "result RE[0] is not a win"),
    (lambda t: t.replace("RE[B+R]", "RE[W+Jigo]"), "result RE[W+Jigo] is not a win"),
    (lambda t: t.replace("RE[B+R]", "RE[?]"), "is not a win"),
    (lambda t: t.replace("RE[B+R]", ""), "is not a win"),
    (lambda t: t.replace(";W[ed];", ";W[];"), "has a pass (move 5)"),
    (lambda t: t.replace(";W[ed];", ";W[pd];"), "illegal: "),
    (lambda t: t.replace(";W[ed];", ";B[ed];"), "move 5 is not alternating"),
    (lambda t: t.split(";W[qh]")[0] + ")", "24 moves, outside the 80-140 a case has"),
    (lambda t: "not an sgf", "not SGF"),
], ids=["size", "game", "collection", "aw", "edited", "ha-no-ab", "ha-mismatch", "bad-ab", "no-komi", "quarter-komi",
        "inf-komi", "draw", "jigo", "unknown-result", "unfinished", "pass", "occupied", "not-alternating", "short",
        "not-sgf"])
def test_a_game_the_cases_cannot_use_is_refused_in_one_line(tmp_path, import_refused, edit, needle):
    assert needle in import_refused("go", "sgf", write(tmp_path, edit(fox_text())))


def test_caps_size_moves_and_non_regular_files(tmp_path, monkeypatch, import_refused, import_refuses_unreadable):
    import_refuses_unreadable("go", "sgf", S.MAX_SGF_BYTES, FOX)
    monkeypatch.setattr(S, "MAX_MOVES", 50)
    assert "100 moves, more than the 50 read" in import_refused("go", "sgf", FOX)
    # variations nested 100,000 deep: one pass, no recursion, the main line's length refused
    deep = write(tmp_path, "(;GM[1]KM[6.5]RE[B+R]" + "(;B[aa]" * 100_000 + ")" * 100_001)
    assert "100000 moves, more than the 50 read" in import_refused("go", "sgf", deep)


def test_the_importing_doc_states_the_readers_caps():
    doc = " ".join((TESTS.parent / "docs" / "IMPORTING.md").read_text(encoding="utf-8").split())
    for cap in (f"at most {S.MAX_SGF_BYTES // 2**20} MiB", f"at most {S.MAX_MOVES:,} moves read",
                f"more than {S.MAX_HANDICAP}", f"within ±{S.KOMI_LIMIT:g}",
                f"fewer than {gp.MIN_MOVES} or more than {gp.MAX_MOVES} moves"):
        assert cap in doc, cap
