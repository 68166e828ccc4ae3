"""Badminton plugin: the V_t model, the end-label mapping, the selection rule, the reader and the renderer."""
from __future__ import annotations

import copy
import json
from collections import Counter
from functools import lru_cache

import numpy as np
import pytest

from video_arena import paths
from video_arena.games.badminton import plugin as P
from video_arena.games.badminton import records as R
from video_arena.games.badminton import render as RD
from video_arena.games.badminton import scene as SC
from video_arena.games.badminton import value as V
from video_arena.games.base import BUILTIN_CASES, SELECTION_SEED

TASKS = paths.default_tasks_root()


# -- V_t ------------------------------------------------------------------------------------------------

def _forward_match_probability(p_a: float, p_b: float, server: str) -> float:
    """An independent computation: push the probability mass forward over the score states until every
    path has ended (no recursion shared with value.py)."""
    mass = {(0, 0, 0, 0, server): 1.0}
    won = 0.0
    while mass:
        nxt: dict = {}
        for (ga, gb, pa, pb, s), m in mass.items():
            q = p_a if s == "a" else 1 - p_b
            for w, pr in (("a", q), ("b", 1 - q)):
                if pr == 0:
                    continue
                a, b = pa + (w == "a"), pb + (w == "b")
                na, nb = ga, gb
                if (max(a, b) >= 21 and abs(a - b) >= 2) or max(a, b) == 30:
                    na, nb, a, b = ga + (a > b), gb + (b > a), 0, 0
                if na == 2:
                    won += m * pr
                elif nb < 2:
                    key = (na, nb, a, b, w)
                    nxt[key] = nxt.get(key, 0.0) + m * pr
        mass = nxt
    return won


@pytest.mark.parametrize("p_a,p_b,server", [(0.5, 0.5, "a"), (0.6, 0.45, "a"), (0.35, 0.62, "b"), (0.55, 0.55, "b")])
def test_match_probability_equals_a_forward_computation(p_a, p_b, server):
    v = V.match_win_probability(p_a, p_b)
    assert v(0, 0, 0, 0, server) == pytest.approx(_forward_match_probability(p_a, p_b, server), abs=1e-12)


def test_value_rules_at_the_edges():
    v = V.match_win_probability(0.6, 0.4)
    assert v(2, 0, 0, 0, "a") == 1.0 and v(1, 2, 0, 0, "a") == 0.0
    # 29-29 in the deciding game: the next rally decides the match
    assert v(1, 1, 29, 29, "a") == pytest.approx(0.6) and v(1, 1, 29, 29, "b") == pytest.approx(0.6)
    # 20-20 is not a game point (two clear), 21-20 is not a game yet
    assert not V.game_over(21, 20) and V.game_over(22, 20) and V.game_over(30, 29) and V.game_over(21, 19)
    assert V.serve_win_rates(["a", "a", "b", "b", "b"], ["a", "b", "b", "b", "a"]) == (0.5, pytest.approx(2 / 3))


def test_values_end_at_the_result_and_follow_the_score():
    winners = ["a"] * 21 + ["b"] * 21 + ["a"] * 21
    games = [1] * 21 + [2] * 21 + [3] * 21
    servers = ["a"] + winners[:-1]
    vals = V.values(servers, winners, games, 0.55, 0.5)
    assert len(vals) == len(winners) + 1 and vals[-1] == 1.0
    assert all(b >= a for a, b in zip(vals[:21], vals[1:22]))   # player_a winning every rally: V never falls
    with pytest.raises(ValueError):
        V.values(servers, winners, [1] * 63, 0.55, 0.5)            # a game that goes on past 21-0


# -- the record and the events ----------------------------------------------------------------------------

@lru_cache(maxsize=1)
def _records() -> tuple:
    return tuple(P.PLUGIN.select_records(BUILTIN_CASES, SELECTION_SEED))


def test_selection_is_the_rule_over_the_committed_pool_and_spreads_the_strata():
    pool = R.read_pool()
    assert len(pool) == 94 and len({R.match_key(e.folder) for e in pool}) == 94
    chosen = R.select(pool, BUILTIN_CASES, SELECTION_SEED)
    assert chosen == R.select(pool, BUILTIN_CASES, SELECTION_SEED)
    assert R.select(pool, 8, SELECTION_SEED) == chosen[:8]
    assert all(e.eligible for e in chosen) and len({e.folder for e in chosen}) == BUILTIN_CASES
    strata = Counter((e.event, e.games) for e in chosen)
    assert set(strata) == set(R.STRATA) and min(strata.values()) >= 3
    assert len({e.year for e in chosen}) >= 3


def test_committed_records_pass_the_eligibility_they_were_chosen_by():
    for rec in _records():
        assert R.problems(rec) == [], rec["source"]


def test_player_a_is_at_the_near_end_at_the_first_serve():
    for rec in _records():
        first = rec["rallies"][0]["strokes"][0]
        pos_a = first[3] if first[1] == "a" else first[4]
        assert pos_a[1] > R.NET_Y, rec["source"]["id"]
        assert R.ends_of(rec, 0) == {"a": "near", "b": "far"}


def test_every_rally_gives_one_end_row_and_every_game_a_game_row():
    for rec in _records():
        steps = P.PLUGIN.replay(rec)
        ends = [s for s in steps if s.type != "game"]
        games = [s for s in steps if s.type == "game"]
        assert len(ends) == len(rec["rallies"]) and len(games) == rec["match"]["games"]
        for s in steps:
            ok = {"winner": {"front", "mid", "back"}, "error": {"net", "out"}, "fault": {""}, "game": {""}}[s.type]
            assert s.where in ok and s.actor in ("player_a", "player_b")
        winners = R.rally_winners(rec)
        for i, s in enumerate(ends):   # the winner row is the point winner's, an error or fault the loser's
            w = "player_" + winners[i]
            assert (s.actor == w) == (s.type == "winner"), (rec["source"]["id"], i, s)


def test_end_label_mapping():
    assert {k: v[:2] for k, v in R.LABELS.items()} == {
        "對手落地致勝": ("winner", "depth"), "落點判斷失誤": ("winner", "depth"), "對手落地判斷失誤": ("winner", "depth"),
        "出界": ("error", "out"), "掛網": ("error", "net"), "未過網": ("error", "net"), "犯規": ("fault", "")}


def _one_rally(label: str, land, hitter: str = "b", score=(1, 0)):
    """A one-match record with a single rally of two strokes (player_a near), ending with `label`."""
    rec = copy.deepcopy(_records()[0])
    rec["rallies"] = [{"game": 1, "rally": 1, "score": list(score), "label": label, "getpoint": "",
                       "strokes": [[100, "a", "short service", [3.0, 9.0], [3.0, 4.0], [3.0, 4.5]],
                                   [130, hitter, "clear", [3.0, 4.0], [3.0, 9.0], land]]}]
    return rec


@pytest.mark.parametrize("land,where", [([3.0, 7.5], "front"), ([3.0, 10.0], "mid"), ([3.0, 12.5], "back"),
                                        ([3.0, 13.6], "back"), ([0.1, 10.0], "mid")])
def test_winner_depth_is_the_third_of_the_half(land, where):
    rec = _one_rally("對手落地致勝", land, hitter="b", score=(0, 1))
    kind, actor, w, (x, y, z) = SC.rally_end(rec, 0, "b")
    assert (kind, actor, w, z) == ("winner", "b", where, 0.0)
    assert SC.X0 < x < SC.X1 and R.NET_Y < y < R.COURT_L   # drawn inside the receiving half


@pytest.mark.parametrize("land", [[3.0, 13.2], [5.5, 10.0], [3.0, 13.9], [6.0, 8.0]])
def test_an_out_landing_is_drawn_outside_the_singles_lines(land):
    rec = _one_rally("出界", land, hitter="b", score=(1, 0))
    kind, actor, where, (x, y, z) = SC.rally_end(rec, 0, "a")
    assert (kind, actor, where, z) == ("error", "b", "out", 0.0)
    assert not SC._in_court((x, y)) and y > R.NET_Y


def test_a_net_error_stops_in_the_net():
    rec = _one_rally("掛網", [3.5, 8.0], hitter="b", score=(1, 0))
    kind, actor, where, (x, y, z) = SC.rally_end(rec, 0, "a")
    assert (kind, actor, where, y) == ("error", "b", "net", R.NET_Y) and 0 < z < SC.NET_H


# -- the timeline and the picture ---------------------------------------------------------------------------

def test_events_are_on_the_grid_and_the_shuttle_is_down_at_each_and_up_a_second_before():
    rec = _records()[2]
    p = SC.plan(rec)
    assert list(p.event_frames) == sorted(set(p.event_frames))
    k = 0
    for (kind, _, where), f in zip(p.steps, p.event_frames):
        sc = SC.frame_scene(p, f)
        if kind == "game":
            continue
        r = p.rallies[k]
        k += 1
        assert sc.shuttle == r.end_point
        assert (sc.shuttle[2] > 0) == (where == "net")
        before = SC.frame_scene(p, f - p.fps)
        assert before.shuttle[2] > 0.3


def test_players_change_ends_after_a_game_and_at_11_in_the_third():
    rec = next(r for r in _records() if r["match"]["games"] == 3)
    p = SC.plan(rec)
    sides = []
    for r in p.rallies:
        a = r.pos[0][0]
        sides.append(a[1] > R.NET_Y)
    games = [r["game"] for r in rec["rallies"]]
    first_of = {g: games.index(g) for g in (1, 2, 3)}
    assert sides[first_of[1]] and not sides[first_of[2]] and sides[first_of[3]]
    at11 = next(i for i, r in enumerate(rec["rallies"]) if r["game"] == 3 and max(r["score"]) == 11)
    assert sides[at11] and not sides[at11 + 1]


def test_the_canvas_redraw_equals_a_full_drawing():
    rec = _records()[0]
    p = SC.plan(rec)
    canvas = RD.Canvas()
    out = RD.background_pixels().copy()
    for k in list(range(0, 40)) + list(range(300, 330)):
        boxes = canvas.draw(SC.frame_scene(p, k))
        canvas.pixels_u8(boxes, out)
        want = np.asarray(RD.draw_scene(SC.frame_scene(p, k)))
        assert np.array_equal(out, want), k


def test_value_model_is_fitted_on_the_match():
    rec = _records()[0]
    vm = rec["value_model"]
    ws = R.rally_winners(rec)
    served_a = [w for r, w in zip(rec["rallies"], ws) if r["strokes"][0][1] == "a"]
    assert vm["serve_win_a"] == pytest.approx(served_a.count("a") / len(served_a), abs=1e-6)
    vals = P.PLUGIN.evaluate(rec)
    assert len(vals) == len(P.PLUGIN.replay(rec)) + 1 and vals[-1] == P.PLUGIN.final_value(rec)


def test_the_committed_ground_truth_keeps_the_case_summary_free_of_players_and_results():
    cases = json.loads((TASKS / "badminton" / "cases.json").read_text())["cases"]
    if not cases:
        pytest.skip("no built badminton cases")
    for c in cases:
        text = json.dumps(c["source"]).lower()
        assert set(c["source"]) == {"collection", "id"}
        assert not any(name.split()[-1].lower() in text for name in R.players())


def test_a_serve_recorded_after_the_return_does_not_squeeze_its_rally():
    """A few rallies' serves are recorded after the return (an annotation slip, up to 15 s late).  Measured from
    that serve every later stroke would be clamped MIN_HIT_GAP_S after the one before (a whole rally drawn in a
    second or two); the serve is put its flight before the return and the other strokes keep their recorded
    times from the return, in the committed ground truth's record as in the plan."""
    late, cases = 0, set()
    for path in sorted((TASKS / "badminton" / "gt").glob("*.json")):
        record = json.loads(path.read_text())["record"]
        fps, p = record["match"]["source_fps"], SC.plan(record)
        for r, rp in zip(record["rallies"], p.rallies):
            frames, hits = [s[0] for s in r["strokes"]], rp.hit_t
            if len(frames) < 2 or frames[1] >= frames[0]:
                continue
            late, cases = late + 1, cases | {path.stem}
            assert hits[1] - hits[0] == pytest.approx(SC.FLIGHT_S.get(r["strokes"][0][2], SC.FLIGHT_S["unknown"]))
            for k in range(2, len(frames)):
                recorded = (frames[k] - frames[1]) / fps
                if all(b > a for a, b in zip(frames[1:k], frames[2:k + 1])) and min(
                        b - a for a, b in zip(frames[1:k + 1], frames[2:k + 1])) / fps >= SC.MIN_HIT_GAP_S:
                    assert hits[k] - hits[1] == pytest.approx(recorded), (path.stem, k)
            assert hits[-1] - hits[1] >= (frames[-1] - frames[1]) / fps - 1e-6, path.stem
    assert (late, len(cases)) == (16, 4)   # docs/CASES.md, "Timeline"
