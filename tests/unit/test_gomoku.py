"""Gomoku: rules (five detection incl. overlines), shapes and event typing, seeded games and playout
values, the plugin's replay and renderer."""
from __future__ import annotations

import hashlib
import random

import pytest

from video_arena.games.gomoku import engine as E
from video_arena.games.gomoku.plugin import PLAYOUT_SEED, PLUGIN, classify, draw_moves, make_record


def play_points(board: E.Board, points: list[tuple[int, int]]) -> None:
    for r, c in points:
        board.play(E.idx_of(r, c))


def interleave(black: list[tuple[int, int]], white: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out = []
    for k in range(max(len(black), len(white))):
        if k < len(black):
            out.append(black[k])
        if k < len(white):
            out.append(white[k])
    return out


FAR_WHITE = [(0, 0), (0, 2), (0, 4), (0, 6), (0, 8), (0, 10), (0, 12), (2, 0), (2, 2)]


# -- coordinates ----------------------------------------------------------------------------------------
def test_coordinates_follow_go_convention():
    assert E.coord_name(7, 7) == "H8"
    assert E.coord_name(14, 0) == "A1"
    assert E.coord_name(0, 14) == "P15"
    assert "I" not in E.COLUMNS and len(E.COLUMNS) == 15
    assert E.coord_name(7, 8) == "J8"  # H is followed by J
    for r in range(15):
        for c in range(15):
            assert E.parse_coord(E.coord_name(r, c)) == (r, c)
    with pytest.raises(ValueError):
        E.parse_coord("I5")
    with pytest.raises(ValueError):
        E.parse_coord("A16")


# -- rules ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("line", [
    [(7, c) for c in range(3, 8)],             # horizontal
    [(r, 4) for r in range(5, 10)],            # vertical
    [(3 + k, 3 + k) for k in range(5)],        # diagonal
    [(10 - k, 2 + k) for k in range(5)],       # anti-diagonal
    [(14, c) for c in range(10, 15)],          # along the edge into the corner
])
def test_five_in_any_direction_wins_only_on_the_fifth_stone(line):
    b = E.Board()
    # the fifth stone is played in the middle of the line
    order = line[:2] + line[3:] + [line[2]]
    play_points(b, interleave(order[:4], FAR_WHITE[:4]))
    assert b.winner == 0 and not b.over
    b.play(E.idx_of(*order[4]))
    assert b.winner == E.BLACK and b.over
    assert b.has_five_through(E.idx_of(*order[4]))
    with pytest.raises(ValueError):
        b.play(E.idx_of(12, 12))  # no move after the game is over


def test_overline_wins_freestyle():
    b = E.Board()
    # black: C8 D8 E8 . G8 H8 J8, then F8 makes seven in a row
    black = [(7, 2), (7, 3), (7, 4), (7, 6), (7, 7), (7, 8)]
    # keep the two four-fragments from being a five: the gap stays empty until the end
    play_points(b, interleave(black, FAR_WHITE[:6]))
    assert b.winner == 0
    assert max(b.level(E.BLACK, E.idx_of(7, 5))) == E.LEVEL_FIVE
    b.play(E.idx_of(7, 5))
    assert b.winner == E.BLACK


def test_four_is_not_five_and_blocked_lines_do_not_count():
    b = E.Board()
    # white blocks both ends: O X X X X O -> black can never make five on that line
    moves = interleave([(5, 3), (5, 4), (5, 5), (5, 6)], [(5, 2), (5, 7), (12, 12)])
    play_points(b, moves)
    assert b.winner == 0
    for c in range(15):
        i = E.idx_of(5, c)
        if b.cells[i] == E.EMPTY:
            assert b.level(E.BLACK, i)[0] < E.LEVEL_FIVE


def test_white_can_win_and_undo_restores_tables():
    b = E.Board()
    play_points(b, interleave([(0, 0), (0, 2), (0, 4), (0, 6), (2, 2)], [(9, 9), (9, 10), (9, 11), (9, 12)]))
    before = (b.cells[:], b.levels[1][:], b.levels[2][:], b.score[1][:], b.score[2][:])
    b.play(E.idx_of(9, 13))
    assert b.winner == E.WHITE
    b.undo()
    assert b.winner == 0
    assert (b.cells, b.levels[1], b.levels[2], b.score[1], b.score[2]) == before
    b.play(E.idx_of(9, 8))
    assert b.winner == E.WHITE


def test_incremental_tables_match_a_fresh_computation():
    rng = random.Random(5)
    b = E.Board()
    for _ in range(40):
        b.play(rng.choice(b.empties()))
        if b.over:
            break
    fresh = E.Board.__new__(E.Board)
    fresh.cells = b.cells[:]
    fresh.levels = [None, [0] * len(b.levels[1]), [0] * len(b.levels[2])]
    fresh.score = [None, [0] * len(b.score[1]), [0] * len(b.score[2])]
    for i in E.BOARD_IDX:
        if fresh.cells[i] == E.EMPTY:
            for d in range(4):
                fresh._update(i, d)
        fresh._rescore(i)
    for i in E.BOARD_IDX:
        if b.cells[i] == E.EMPTY:
            assert b.level(1, i) == fresh.level(1, i) and b.level(2, i) == fresh.level(2, i)
    assert b.score[1] == fresh.score[1] and b.score[2] == fresh.score[2]


# -- shapes and event typing ----------------------------------------------------------------------------
@pytest.mark.parametrize("line, level", [
    ("....X....", E.LEVEL_NONE),
    ("...XX....", E.LEVEL_OPEN2),
    ("...XXX...", E.LEVEL_OPEN3),
    ("..X.XX...", E.LEVEL_OPEN3),       # split three
    ("OXXX.X...", E.LEVEL_FOUR),        # one point makes five
    ("..OXXX...", E.LEVEL_THREE),       # blocked three: only a closed four
    ("...XXXX..", E.LEVEL_OPEN4),
    ("..OXXXXO.", E.LEVEL_NONE),        # dead four: no five possible
    ("..XXXXX..", E.LEVEL_FIVE),
    ("XXXXXXO..", E.LEVEL_FIVE),        # overline
    ("X.XXX.X..", E.LEVEL_OPEN4),       # two different completion points
])
def test_line_levels(line, level):
    E._level_of_line.cache_clear()
    assert E._level_of_line(line) == level


def test_classify_move_three_four_five():
    b = E.Board()
    play_points(b, interleave([(7, 7), (7, 8)], [(0, 0), (0, 2)]))
    assert classify(b, E.idx_of(7, 9)) == "three"      # H8 J8 K8: open three
    assert classify(b, E.idx_of(3, 3)) == "move"
    b.play(E.idx_of(7, 9))
    b.play(E.idx_of(0, 4))
    assert classify(b, E.idx_of(7, 10)) == "four"      # open four
    b.play(E.idx_of(7, 6))                              # G8: open four H..K + G
    b.play(E.idx_of(7, 5))                              # white blocks one end
    assert classify(b, E.idx_of(7, 10)) == "five"


def test_replay_types_actors_and_where():
    moves = ["H8", "A1", "J8", "P15", "K8", "A15", "L8", "P1", "M8"]
    rec = {"source": {"id": "t"}, "moves": moves, "result": "black"}
    steps = PLUGIN.replay(rec)
    assert [s.actor for s in steps] == ["black", "white"] * 4 + ["black"]
    assert [s.where for s in steps] == moves
    assert [s.type for s in steps] == ["move", "move", "move", "move", "three", "move", "four", "move", "five"]
    assert PLUGIN.final_value(rec) == 1.0
    assert set(s.type for s in steps) <= set(PLUGIN.definition.event_types)
    with pytest.raises(ValueError):
        PLUGIN.replay({"source": {"id": "t"}, "moves": ["H8", "H8"], "result": "draw"})
    with pytest.raises(ValueError):
        PLUGIN.replay(dict(rec, result="white"))


# -- engine, games, playouts ----------------------------------------------------------------------------
def test_engine_takes_a_win_and_blocks_a_five():
    b = E.Board()
    play_points(b, interleave([(7, 3), (7, 4), (7, 5), (7, 6)], [(0, 0), (0, 2), (0, 4)]))
    # white to move must block black's four (both ends open? (7,2) and (7,7): open four, any block)
    b.play(E.idx_of(3, 3))  # white elsewhere
    eng = E.Engine(mode="search", depth=2, width=6)
    choice = eng.choose(b, random.Random(0))
    assert choice in (E.idx_of(7, 2), E.idx_of(7, 7))  # black completes five
    b2 = E.Board()
    play_points(b2, interleave([(7, 3), (7, 4), (7, 5), (7, 6)], [(7, 2), (0, 0), (0, 2)]))
    assert b2.to_move == E.WHITE
    assert E.Engine(mode="greedy").choose(b2, random.Random(0)) == E.idx_of(7, 7)


def test_seeded_game_is_deterministic_and_seed_dependent():
    eng = E.Engine(mode="greedy", temperature=0.2)
    a = E.play_game(eng, eng, 11, opening_random=2)
    b = E.play_game(eng, eng, 11, opening_random=2)
    c = E.play_game(eng, eng, 12, opening_random=2)
    assert a.moves == b.moves
    assert a.moves != c.moves
    assert a.winner in (E.BLACK, E.WHITE) or len(a.moves) == 225
    last = a.moves[-1]
    assert a.has_five_through(last) == (a.winner != 0)


def test_rollout_value_is_deterministic_and_in_range():
    board = E.Board()
    play_points(board, [(7, 7), (7, 8), (8, 8), (6, 6), (8, 7), (6, 7)])
    v1 = E.rollout_value(board, 6, seed=3)
    v2 = E.rollout_value(board.copy(), 6, seed=3)
    assert v1 == v2 and 0.0 <= v1 <= 1.0
    assert len(board.moves) == 6 and not board.over  # not mutated
    # a side with an open four wins every playout
    won = E.Board()
    play_points(won, interleave([(7, 3), (7, 4), (7, 5), (7, 6)], [(0, 0), (0, 2), (0, 4), (0, 6)]))
    assert E.rollout_value(won, 8, seed=1) == 1.0
    won.play(E.idx_of(7, 7))
    assert won.winner == E.BLACK and E.rollout_value(won, 8, seed=1) == 1.0


@pytest.fixture
def cheap_engines(monkeypatch):
    """The plugin's players and playouts, made cheap (the real ones are exercised by the slow build)."""
    import video_arena.games.gomoku.plugin as plugin_module

    monkeypatch.setattr(plugin_module, "ENGINE_A", E.Engine(mode="search", depth=2, width=3, temperature=0.1))
    monkeypatch.setattr(plugin_module, "ENGINE_B", E.Engine(mode="greedy", temperature=0.1))
    monkeypatch.setattr(plugin_module, "N_PLAYOUTS", 2)


def test_record_is_reproducible_and_evaluate_matches_playouts(cheap_engines):
    rec = make_record(1234, a_is_black=True)
    assert rec == make_record(1234, a_is_black=True)
    assert rec["result"] in ("black", "white", "draw")
    steps = PLUGIN.replay(rec)
    assert len(steps) == len(rec["moves"])
    if rec["result"] != "draw":
        assert steps[-1].type == "five" and steps[-1].actor == rec["result"]
    short = dict(rec, moves=rec["moves"][:6], result="draw")
    values = PLUGIN.evaluate(short)
    assert len(values) == 7 and all(0.0 <= v <= 1.0 for v in values)
    b = E.Board()
    for name in short["moves"]:
        b.play(E.idx_of(*E.parse_coord(name)))
    assert values[-1] == E.rollout_value(b, 2, PLAYOUT_SEED)
    assert values == PLUGIN.evaluate(short)


def test_a_watchers_v_t_of_the_board_read_exactly_is_v_t(cheap_engines):
    """V_t is a function of the position (no record's seed): the visible V_t of the boards `visible_features`
    gives, each read exactly, is `evaluate`'s to the digit."""
    rec = dict(make_record(1234, a_is_black=True), result="draw")
    short = dict(rec, moves=rec["moves"][:8])
    assert PLUGIN.visible_values(PLUGIN.visible_features(short), {}) == PLUGIN.evaluate(short)


# -- rendering and pacing -------------------------------------------------------------------------------
def test_render_is_deterministic_sized_and_shows_each_stone():
    rec = {"source": {"id": "t"}, "moves": ["H8", "J9", "A1", "P15"], "result": "draw"}
    imgs = list(PLUGIN.render(rec))
    again = list(PLUGIN.render(rec))
    assert len(imgs) == 5
    assert all(im.size == (504, 504) for im in imgs)
    assert [hashlib.sha256(i.tobytes()).hexdigest() for i in imgs] == \
           [hashlib.sha256(i.tobytes()).hexdigest() for i in again]
    for k in range(5):
        assert PLUGIN.render_position(rec, k).tobytes() == imgs[k].tobytes()
    # move k changes the picture exactly around its point; black stones dark, white stones light
    for k, name in enumerate(rec["moves"]):
        r, c = E.parse_coord(name)
        x, y = 35 + 31 * c, 35 + 31 * r
        before, after = imgs[k].getpixel((x + 5, y + 5)), imgs[k + 1].getpixel((x + 5, y + 5))
        assert before != after
        assert (sum(after) < 150) == (k % 2 == 0)
    assert imgs[0].getpixel((250, 300)) == imgs[4].getpixel((250, 300))
    with pytest.raises(IndexError):
        PLUGIN.render_position(rec, 5)
    assert draw_moves([]).tobytes() == imgs[0].tobytes()


def test_think_times_are_seeded_and_realistic(cheap_engines):
    rec = make_record(99, a_is_black=False)
    a = PLUGIN.think_times(rec, random.Random(7))
    b = PLUGIN.think_times(rec, random.Random(7))
    assert a == b and len(a) == len(rec["moves"])
    assert all(1.5 <= t <= 80 for t in a)
    assert 2.5 <= sum(a) / len(a) <= 20


def test_selection_keeps_decisive_games_of_the_allowed_length(cheap_engines):
    import video_arena.games.gomoku.plugin as plugin_module

    recs = PLUGIN.select_records(3, 5)
    assert recs == PLUGIN.select_records(3, 5)
    assert [r["black"]["engine"] for r in recs] == ["A", "B", "A"]  # colours alternate
    for r in recs:
        assert r["result"] in ("black", "white")
        assert plugin_module.MIN_MOVES <= len(r["moves"]) <= plugin_module.MAX_MOVES
        assert PLUGIN.replay(r)[-1].type == "five"
