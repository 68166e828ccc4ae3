"""Go plugin: SGF reader, capture rules, the `where` convention, replay, pacing, renderer (fast: no engine)."""
from __future__ import annotations

import hashlib
import random

import pytest

from video_arena.games.base import Step, load_definition, load_plugin
from video_arena.games.go import plugin as gp
from video_arena.games.go.rules import (Board, IllegalMove, SgfError, parse_sgf, sgf_to_gtp, sgf_to_where,
                                        sgf_to_xy, xy_to_where)

PLUGIN = load_plugin("go")


def rec(moves, result="B+R", komi=5.5, sid="test"):
    return {"source": {"collection": "test", "id": sid}, "size": 19, "komi": komi, "result": result,
            "moves": [list(m) for m in moves]}


# -- SGF -------------------------------------------------------------------------------------------

def test_parse_sgf_root_properties_and_moves():
    g = parse_sgf("(;GM[1]SZ[19]PB[Takagawa]PW[Rin]RE[B+3]KM[5]\n;B[pd];W[dp]\r\n;B[qp];W[])")
    assert g.prop("PB") == "Takagawa" and g.prop("RE") == "B+3" and g.prop("KM") == "5"
    assert g.moves == [("B", "pd"), ("W", "dp"), ("B", "qp"), ("W", "")]
    assert g.setup == {}


def test_parse_sgf_follows_main_line_and_unescapes():
    g = parse_sgf(r"(;C[a \] bracket]GN[x];B[aa](;W[bb];B[cc](;W[dd])(;W[ee]))(;W[ss];B[rr]))")
    assert g.prop("C") == "a ] bracket"
    assert g.moves == [("B", "aa"), ("W", "bb"), ("B", "cc"), ("W", "dd")]


def test_parse_sgf_old_long_property_names_and_setup():
    g = parse_sgf("(;PlayerBlack[X]AB[dd][pp];W[qd])")
    assert g.prop("PB") == "X"
    assert g.setup == {"AB": ["dd", "pp"]}
    assert g.moves == [("W", "qd")]


@pytest.mark.parametrize("text", ["", "(;B[pd]", "(;B[pd", "(;B[pd]W)", "(;B[pd];W[dp]{)", ";B[pd]"])
def test_parse_sgf_rejects_malformed(text):
    with pytest.raises(SgfError):
        parse_sgf(text)


def test_every_data_file_parses():
    names = [n for n, _ in gp._candidates()]
    assert len(names) == 596
    unreadable = [(n, why) for n, why in gp._candidates() if why.startswith("unreadable")]
    assert unreadable == []


# -- coordinates -----------------------------------------------------------------------------------

@pytest.mark.parametrize("sgf,where", [("pd", "q16"), ("dp", "d4"), ("aa", "a19"), ("as", "a1"), ("ss", "t1"),
                                       ("sa", "t19"), ("ia", "j19"), ("ha", "h19"), ("jj", "k10"), ("", ""),
                                       ("tt", "")])
def test_where_convention(sgf, where):
    assert sgf_to_where(sgf) == where


def test_gtp_vertex_for_katago():
    assert sgf_to_gtp("pd") == "Q16" and sgf_to_gtp("") == "pass" and sgf_to_gtp("tt") == "pass"
    assert xy_to_where((8, 9)) == "j10"  # column index 8 is "j": there is no "i"


def test_where_never_uses_i_and_covers_the_board():
    wheres = {xy_to_where((c, r)) for c in range(19) for r in range(19)}
    assert len(wheres) == 361
    assert not any(w.startswith("i") for w in wheres)


def test_bad_points_raise():
    with pytest.raises(SgfError):
        sgf_to_xy("zz")
    with pytest.raises(SgfError):
        sgf_to_xy("p")


# -- rules -----------------------------------------------------------------------------------------

def test_single_stone_capture():
    b = Board(19)
    # white stone at b2 (1,17); black surrounds it
    b.play("W", (1, 17))
    assert b.play("B", (0, 17)) == [] and b.play("B", (2, 17)) == [] and b.play("B", (1, 16)) == []
    assert b.play("B", (1, 18)) == [(1, 17)]
    assert b[(1, 17)] == "."


def test_corner_and_group_capture():
    b = Board(19)
    for xy in [(0, 0), (1, 0)]:
        b.play("W", xy)
    b.play("B", (0, 1))
    b.play("B", (1, 1))
    assert b.play("B", (2, 0)) == [(0, 0), (1, 0)]
    assert b.stones() == [(2, 0, "B"), (0, 1, "B"), (1, 1, "B")]


def test_capture_not_suicide_and_suicide_rejected():
    b = Board(19)
    # black eye at (0,0) surrounded by black stones (1,0),(0,1): white into it is suicide
    b.play("B", (1, 0))
    b.play("B", (0, 1))
    with pytest.raises(IllegalMove):
        b.play("W", (0, 0))
    assert b[(0, 0)] == "."
    # if the black stones are in atari, the same point captures instead
    b2 = Board(19)
    for xy in [(1, 0), (0, 1)]:
        b2.play("B", xy)
    for xy in [(2, 0), (1, 1), (0, 2)]:
        b2.play("W", xy)
    assert b2.play("W", (0, 0)) == [(0, 1), (1, 0)]


def test_occupied_point_rejected():
    b = Board(19)
    b.play("B", (3, 3))
    with pytest.raises(IllegalMove):
        b.play("W", (3, 3))


def test_pass_changes_nothing():
    b = Board(19)
    b.play("B", (3, 3))
    assert b.play("W", None) == [] and b.stones() == [(3, 3, "B")]


# -- replay ------------------------------------------------------------------------------------------

def test_replay_types_actors_where():
    # B a18 (as), W a19 (aa)? keep it simple: white at a19 captured by black b19 + a18
    moves = [("B", "ab"), ("W", "aa"), ("B", "ba"), ("W", "pd"), ("B", "")]
    steps = PLUGIN.replay(rec(moves))
    assert steps == [Step("move", "black", "a18"), Step("move", "white", "a19"),
                     Step("capture", "black", "b19"), Step("move", "white", "q16"), Step("pass", "black", "")]


def test_replay_rejects_an_illegal_record():
    with pytest.raises(ValueError, match="occupied"):
        PLUGIN.replay(rec([("B", "pd"), ("W", "pd")]))


def test_final_value_from_result():
    assert PLUGIN.final_value(rec([], "B+R")) == 1.0
    assert PLUGIN.final_value(rec([], "W+1.5")) == 0.0
    assert PLUGIN.final_value(rec([], "Jigo")) is None


def test_selection_is_seeded_and_meets_the_filters():
    a = PLUGIN.select_records(20, 20250)
    assert [r["source"]["id"] for r in a] == [r["source"]["id"] for r in PLUGIN.select_records(20, 20250)]
    assert [r["source"]["id"] for r in a] != [r["source"]["id"] for r in PLUGIN.select_records(20, 7)]
    assert len({r["source"]["id"] for r in a}) == 20
    for r in a:
        assert gp.MIN_MOVES <= len(r["moves"]) <= gp.MAX_MOVES
        assert r["komi"] in gp.KOMI_OK
        assert PLUGIN.final_value(r) in (0.0, 1.0)
        steps = PLUGIN.replay(r)
        assert len(steps) == len(r["moves"])
        assert [s.actor for s in steps[:2]] == ["black", "white"]
        assert all(s.type in ("move", "capture") for s in steps)


def test_definition_vocabulary_matches_replay():
    d = load_definition("go")
    assert d.sides == ("black", "white") and tuple(d.render_size) == (612, 612)
    assert set(d.event_types) == {"move", "capture", "pass"} and d.types_without_where == ("pass",)
    assert (d.state_above, d.state_below) == ("black", "white")


# -- pacing ------------------------------------------------------------------------------------------

def test_think_times_seeded_and_realistic():
    r = PLUGIN.select_records(20, 20250)[0]
    a = PLUGIN.think_times(r, random.Random(1))
    assert a == PLUGIN.think_times(r, random.Random(1))
    assert a != PLUGIN.think_times(r, random.Random(2))
    assert len(a) == len(r["moves"]) and all(2.0 <= g <= 300.0 for g in a)
    # a move every few to many seconds; over all 20 games the mean tempo is 8-30 s a move
    gaps = [g for rr in PLUGIN.select_records(20, 20250) for g in PLUGIN.think_times(rr, random.Random(3))]
    assert 8.0 <= sum(gaps) / len(gaps) <= 30.0
    assert max(gaps) >= 60.0 and min(gaps) < 5.0


# -- renderer ----------------------------------------------------------------------------------------

def _sha(img):
    return hashlib.sha256(img.tobytes()).hexdigest()


def test_render_size_determinism_and_changes():
    moves = [("B", "pd"), ("W", "dp"), ("B", "aa")]
    frames = list(PLUGIN.render(rec(moves)))
    assert len(frames) == 4
    assert all(f.size == (612, 612) and f.mode == "RGB" for f in frames)
    again = list(PLUGIN.render(rec(moves)))
    assert [_sha(f) for f in frames] == [_sha(f) for f in again]
    assert len({_sha(f) for f in frames}) == 4
    assert _sha(PLUGIN.render_position(rec(moves), 2)) == _sha(frames[2])


def test_render_shows_stones_at_the_right_points():
    frames = list(PLUGIN.render(rec([("B", "pd"), ("W", "dp")])))
    x, y = gp._px(15), gp._px(3)   # pd = q16
    assert sum(frames[1].getpixel((x, y))) < 150          # black stone
    assert frames[0].getpixel((x + 6, y + 6)) == gp.BOARD_RGB  # empty board there before
    wx, wy = gp._px(3), gp._px(15)  # dp = d4
    assert sum(frames[2].getpixel((wx + 4, wy + 4))) > 600  # white stone
    assert frames[1].getpixel((wx + 4, wy + 4)) == gp.BOARD_RGB


def test_render_removes_captured_stones():
    moves = [("B", "ab"), ("W", "aa"), ("B", "ba")]
    frames = list(PLUGIN.render(rec(moves)))
    x, y = gp._px(0), gp._px(0)
    assert sum(frames[2].getpixel((x + 4, y + 4))) > 600
    assert frames[3].getpixel((x + 4, y + 4)) == gp.BOARD_RGB


# -- V_t cache (no engine) -----------------------------------------------------------------------------

def test_evaluate_reads_a_complete_cache_without_the_engine(tmp_path, monkeypatch):
    from video_arena.games.go import evaluator as kg

    monkeypatch.setenv(kg.VT_CACHE_ENV, str(tmp_path))

    def no_engine():
        raise AssertionError("the engine must not start when every value is cached")

    monkeypatch.setattr(kg, "engine", no_engine)
    r = rec([("B", "pd"), ("W", "dp"), ("B", "pp")], sid="Cache-1")
    gtp = [["B", "Q16"], ["W", "D4"], ["B", "Q4"]]
    path = kg.cache_path("Cache-1", gtp, 5.5)
    assert path.parent == tmp_path
    kg._save_cache(path, "Cache-1", {0: 0.6, 1: 0.61, 2: 0.4, 3: 0.45}, 1.0)
    seen = []
    assert PLUGIN.evaluate(r, progress=lambda d, n: seen.append((d, n))) == [0.6, 0.61, 0.4, 0.45]
    assert seen == [(4, 4)]
    # another komi or another move list is another cache entry: the engine would be asked
    assert kg.cache_path("Cache-1", gtp, 6.5) != path
    with pytest.raises(AssertionError, match="must not start"):
        PLUGIN.evaluate(rec([("B", "pd"), ("W", "dp"), ("B", "dd")], sid="Cache-1"))


def test_evaluate_queries_only_missing_turns(tmp_path, monkeypatch):
    from video_arena.games.go import evaluator as kg

    monkeypatch.setenv(kg.VT_CACHE_ENV, str(tmp_path))
    asked = []

    class FakeEngine:
        def query(self, q, n):
            asked.append((q["analyzeTurns"], q["moves"], q["komi"], q["maxVisits"], q["rules"]))
            for t in q["analyzeTurns"]:
                yield {"id": q["id"], "turnNumber": t, "rootInfo": {"winrate": 0.1 * t}}

    monkeypatch.setattr(kg, "engine", lambda: FakeEngine())
    gtp = [["B", "Q16"], ["W", "D4"]]
    kg._save_cache(kg.cache_path("Part-1", gtp, 5.0), "Part-1", {0: 0.5}, 1.0)
    values = PLUGIN.evaluate(rec([("B", "pd"), ("W", "dp")], komi=5.0, sid="Part-1"))
    assert values == [0.5, 0.1, 0.2]
    assert asked == [([1, 2], gtp, 5.0, 1, "japanese")]


def test_excluded_games_are_never_selected_and_keep_the_others_order(monkeypatch):
    ids = [r["source"]["id"] for r in PLUGIN.select_records(20, 20250)]
    assert gp.EXCLUDED and not set(ids) & set(gp.EXCLUDED)
    reasons = dict(gp._candidates())
    assert all(reasons[n].startswith("excluded:") for n in reasons if n.rsplit(".", 1)[0] in gp.EXCLUDED)
    # without the exclusion list, the same games come in the same order, the excluded ones interleaved
    excluded = set(gp.EXCLUDED)
    monkeypatch.setattr(gp, "EXCLUDED", {})
    gp._candidates.cache_clear()
    try:
        unfiltered = [r["source"]["id"] for r in PLUGIN.select_records(21, 20250)]
    finally:
        gp._candidates.cache_clear()
    assert [i for i in unfiltered if i not in excluded][:20] == ids
