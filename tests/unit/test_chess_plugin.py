"""The chess plugin without the engine: records, event classification, pacing, rendering."""
from __future__ import annotations

import random

import chess
import numpy as np
import pytest

from video_arena.games.base import load_plugin
from video_arena.games.chess import plugin as C

P = load_plugin("chess")


def rec(moves, result="*"):
    return {"source": {"collection": "test", "id": "t", "result": result}, "moves": moves}


def test_collection_loads_and_selection_is_seeded_decisive_and_excludes_bad_results():
    games = C.load_games()
    assert len(games) == 685
    a, b = P.select_records(20, 1), P.select_records(20, 1)
    assert a == b and P.select_records(20, 2) != a
    assert len({r["source"]["id"] for r in a}) == 20
    for r in a:
        assert r["source"]["result"] in ("1-0", "0-1")
        assert C.MIN_PLIES <= len(r["moves"]) <= C.MAX_PLIES
        assert r["source"]["index"] not in C.EXCLUDED_INDICES
        assert r["source"]["id"] == f"wcc-{r['source']['index']:03d}"
    assert not set(C.EXCLUDED_INDICES) & set(P.candidates())
    assert P.final_value(a[0]) in (0.0, 1.0)
    assert P.final_value(rec([], "1/2-1/2")) is None


def test_event_types_actor_and_where_follow_the_precedence():
    # 1.e4 f5 2.exf5 g5 3.Qh5# : capture, then checkmate
    steps = P.replay(rec(["e2e4", "f7f5", "e4f5", "g7g5", "d1h5"]))
    assert [(s.type, s.actor, s.where) for s in steps] == [
        ("move", "white", "e4"), ("move", "black", "f5"), ("capture", "white", "f5"),
        ("move", "black", "g5"), ("checkmate", "white", "h5")]
    # castling short: the king's destination; en passant is a capture on the landing square
    castle = P.replay(rec(["e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "g8f6", "e1g1"]))
    assert (castle[-1].type, castle[-1].where) == ("castle", "g1")
    ep = P.replay(rec(["e2e4", "a7a6", "e4e5", "d7d5", "e5d6"]))
    assert (ep[-1].type, ep[-1].where) == ("capture", "d6")
    check = P.replay(rec(["e2e4", "f7f6", "d1h5"]))
    assert (check[-1].type, check[-1].actor) == ("check", "white")
    promo = P.replay(rec(["h2h4", "g7g5", "h4g5", "h7h6", "g5h6", "g8f6", "h6h7", "f6g8", "h7g8q"]))
    assert (promo[-1].type, promo[-1].where) == ("promotion", "g8")
    with pytest.raises(ValueError, match="illegal"):
        P.replay(rec(["e2e5"]))


def test_vocabulary_covers_the_whole_collection():
    d = P.definition
    seen = set()
    for r in P.select_records(40, 3):
        for s in P.replay(r):
            assert s.type in d.event_types and s.actor in d.sides and chess.parse_square(s.where) is not None
            seen.add(s.type)
    assert {"move", "capture", "check", "castle"} <= seen


def test_think_times_are_seeded_positive_and_span_minutes_to_long_matches():
    recs = P.select_records(20, 20250)
    durations = []
    for i, r in enumerate(recs):
        g1 = P.think_times(r, random.Random(i))
        assert g1 == P.think_times(r, random.Random(i))
        assert len(g1) == len(r["moves"]) and min(g1) > 1.0 and max(g1) <= 180
        durations.append(sum(g1) / 60)
    assert min(durations) < 10 and max(durations) > 30


def test_render_is_hud_free_board_and_changes_only_on_the_move_squares():
    r = rec(["e2e4", "e7e5"])
    imgs = list(P.render(r))
    assert len(imgs) == 3 and all(im.size == (548, 548) for im in imgs)
    a, b = np.asarray(imgs[0], dtype=np.int16), np.asarray(imgs[1], dtype=np.int16)
    changed = np.argwhere(np.abs(a - b).max(axis=2) > 0)
    # only the e2 and e4 squares change (file e = 5th column; ranks 2 and 4)
    cols = set((changed[:, 1] - C.BORDER) // C.SQUARE)
    rows = set(7 - (changed[:, 0] - C.BORDER) // C.SQUARE)
    assert cols == {4} and rows == {1, 3}
    assert np.array_equal(np.asarray(P.render_position(r, 2)), np.asarray(imgs[2]))
    assert np.array_equal(np.asarray(P.render_position(r, 0)), np.asarray(imgs[0]))
    with pytest.raises(IndexError):
        P.render_position(r, 3)
    # deterministic
    assert np.array_equal(np.asarray(list(P.render(r))[1]), np.asarray(imgs[1]))


def test_case_summary_reveals_nothing_about_the_game():
    r = P.select_records(1, 5)[0]
    s = P.case_summary(r)
    assert set(s) == {"collection", "id"}
