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
from video_arena.games.badminton import prior as PR
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


def test_the_rates_are_the_conjugate_update_of_the_rallies_so_far():
    # Beta(2, 2) for player_a, Beta(1, 3) for player_b; a serves and wins, a serves and loses, b serves and wins
    rates = V.posterior_rates((2, 2), (1, 3), ["a", "a", "b"], ["a", "b", "b"])
    assert rates == [(0.5, 0.25), (0.6, 0.25), (0.5, 0.25), (0.5, 0.4)]


def test_values_end_at_the_result_and_follow_the_score():
    winners = ["a"] * 21 + ["b"] * 21 + ["a"] * 21
    games = [1] * 21 + [2] * 21 + [3] * 21
    servers = ["a"] + winners[:-1]
    rates = [(0.55, 0.5)] * 64
    vals = V.values(servers, winners, games, rates)
    assert len(vals) == len(winners) + 1 and vals[-1] == 1.0
    assert all(b >= a for a, b in zip(vals[:21], vals[1:22]))   # player_a winning every rally: V never falls
    with pytest.raises(ValueError):
        V.values(servers, winners, [1] * 63, rates)                # a game that goes on past 21-0
    with pytest.raises(ValueError):
        V.values(servers, winners, games, rates[:-1])              # one rate pair short


# -- the record and the events ----------------------------------------------------------------------------

@lru_cache(maxsize=1)
def _records() -> tuple:
    return tuple(P.PLUGIN.select_records(BUILTIN_CASES, SELECTION_SEED))


@lru_cache(maxsize=1)
def _values() -> tuple:
    """V_t of each selected record (P.PLUGIN.evaluate), in _records() order."""
    return tuple(P.PLUGIN.evaluate(rec) for rec in _records())


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


def test_serve_outcomes_follow_the_rules_and_leave_unknown_winners_out():
    games = [1, 1, 1, 1, 2, 2, 3]
    hitters = ["b", "b", "a", "a", "b", "a", "a"]
    # rally 2 jumps two points (a rally missing): no winner, and rally 3's server is its first hitter;
    # game 1 ends at 3-1 (not a legal end): game 2's first server is its first hitter, not game 1's last winner
    scores = [(1, 0), (1, 1), (3, 1), (3, 2), (0, 1), (0, 2), (0, 1)]
    servers, winners = R.serve_outcomes(games, hitters, scores)
    assert winners == ["a", "b", "", "b", "b", "b", "b"]
    assert servers == ["b", "a", "b", "a", "b", "b", "a"]
    legal = [(i, 0) for i in range(1, 22)] + [(0, 1)]
    s2, w2 = R.serve_outcomes([1] * 21 + [2], ["b"] * 22, legal)
    assert s2 == ["b"] + ["a"] * 21 and w2 == ["a"] * 21 + ["b"]   # the game winner serves first in the next


def test_the_rally_table_holds_every_pool_match_but_the_held_out_one_and_the_committed_records_as_they_are():
    table = R.read_rallies()
    assert [(m.collection, m.folder) for m in table] == [(e.collection, e.folder) for e in R.read_pool()
                                                         if R.match_key(e.folder) not in R.HELD_OUT]
    assert len({m.key for m in table}) == len(table) == 93 and len(R.read_pool()) == 94
    for rec in _records():
        row = R.match_rallies(rec)
        assert row in table, rec["source"]["id"]
        assert row.serve_outcomes() == R.record_serve_outcomes(rec)
        assert row.serve_outcomes()[1] == R.rally_winners(rec)


def test_the_prior_comes_from_the_other_matches_only():
    rec = _records()[0]
    matches = PR.table()
    vm = PR.value_model(rec, matches)
    assert vm == rec["value_model"]
    own = R.match_key(rec["source"]["folder"].rsplit("/", 1)[-1])
    name_a = rec["match"]["player_a"]
    assert vm["prior_a"]["other_serves"] == sum(m.players[name_a][0] for m in matches if m.key != own and name_a in m.players)
    assert vm["fitted_on"].startswith(f"the {len(matches) - 1} other matches")
    # the case's own match: whatever its row says, the prior is the same
    flipped = [PR.MatchServes(m.key, {k: (n, n if k == name_a else 0) for k, (n, w) in m.players.items()})
               if m.key == own else m for m in matches]
    assert PR.value_model(rec, flipped) == vm
    # another match of player_a does move it
    other = next(i for i, m in enumerate(matches) if m.key != own and name_a in m.players)
    moved = list(matches)
    moved[other] = PR.MatchServes(matches[other].key, {k: (n, n if k == name_a else 0) for k, (n, w) in matches[other].players.items()})
    assert PR.value_model(rec, moved)["prior_a"] != vm["prior_a"]
    with pytest.raises(R.RecordError):
        PR.value_model(rec, [m for m in matches if m.key != own])     # the match must be found to be left out


def test_the_fitted_hyperparameters_are_the_grid_best():
    rest = PR.others(PR.table(), R.match_key(_records()[0]["source"]["folder"].rsplit("/", 1)[-1]))
    h = PR.fit(rest)
    best = PR.loo_log_likelihood(rest, h)
    i, j = PR.GRID.index(h.kappa), PR.GRID.index(h.tau)
    for di, dj in ((-1, 0), (1, 0), (0, -1), (0, 1)):
        if 0 <= i + di < len(PR.GRID) and 0 <= j + dj < len(PR.GRID):
            assert PR.loo_log_likelihood(rest, PR.Hyper(PR.GRID[i + di], PR.GRID[j + dj])) <= best


def test_values_start_from_the_priors_and_end_at_the_result():
    for rec, vals in zip(_records(), _values()):
        vm = rec["value_model"]
        assert len(vals) == len(P.PLUGIN.replay(rec)) + 1 and vals[-1] == P.PLUGIN.final_value(rec)
        mean = [vm[f"prior_{s}"]["alpha"] / (vm[f"prior_{s}"]["alpha"] + vm[f"prior_{s}"]["beta"]) for s in "ab"]
        assert vals[0] == V.match_win_probability(*mean)(0, 0, 0, 0, rec["rallies"][0]["strokes"][0][1])
        assert 0.1 < vals[0] < 0.9, rec["source"]["id"]


def test_the_committed_ground_truth_holds_these_priors_and_values():
    gts = {g["record"]["source"]["id"]: g for g in
           (json.loads(p.read_text()) for p in sorted((TASKS / "badminton" / "gt").glob("*.json")))}
    if not gts:
        pytest.skip("no built badminton cases")
    for rec, vals in zip(_records(), _values()):
        gt = gts[rec["source"]["id"]]
        assert gt["record"]["value_model"] == rec["value_model"] and gt["evaluator"] == V.describe()
        assert [v for _, v in gt["v_series"]] == [round(v, 4) for v in vals]
        assert 0.1 < gt["v_series"][0][1] < 0.9


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


# -- V_t knows only the past --------------------------------------------------------------------------------

def _with_future(rec: dict, k: int, winner: str) -> dict:
    """The record with rallies 0..k kept and every later rally replaced: `winner` wins each rally until the
    match is over (the scores, games and the serving hitter follow the rules)."""
    out = copy.deepcopy(rec)
    kept = out["rallies"][:k + 1]
    games_won = {"a": 0, "b": 0}
    for i, r in enumerate(kept):
        if V.game_over(*r["score"]):
            games_won["a" if r["score"][0] > r["score"][1] else "b"] += 1
    last = kept[-1]
    game, (a, b) = last["game"], last["score"]
    if V.game_over(a, b):
        game, a, b = game + 1, 0, 0
    rallies = list(kept)
    while max(games_won.values()) < 2:
        a, b = a + (winner == "a"), b + (winner == "b")
        strokes = copy.deepcopy(last["strokes"])
        strokes[0][1] = rallies[-1]["getpoint"] or R.rally_winners({"rallies": rallies})[-1]
        rallies.append(dict(last, game=game, rally=len(rallies) + 1, score=[a, b], getpoint=winner, strokes=strokes))
        if V.game_over(a, b):
            games_won[winner] += 1
            game, a, b = game + 1, 0, 0
    out["rallies"] = rallies
    out["match"] = dict(out["match"], games=rallies[-1]["game"])
    out.pop("value_model", None)
    return out


def _rows_through(rec: dict, k: int) -> int:
    """How many V values describe the match up to the end of rally k: V before the first rally, one per rally,
    one per game row."""
    return 1 + (k + 1) + sum(V.game_over(*r["score"]) for r in rec["rallies"][:k + 1])


@pytest.mark.parametrize("case", [5, 13])
def test_a_rally_after_row_k_changes_no_value_at_or_before_row_k(case):
    """V_t is what a spectator could know: the rallies after row k (here: replaced by a continuation in which
    one player wins every rally) change no V at or before row k, from the value model's fit on."""
    rec = _records()[case]
    base = list(_values()[case])
    n = len(rec["rallies"])
    for k in (n // 2, n // 4, 0):
        for winner in ("a", "b"):
            other = _with_future(rec, k, winner)
            vals = P.PLUGIN.evaluate(P.with_value_model(other))
            m = _rows_through(rec, k)
            assert vals[:m] == base[:m], (rec["source"]["id"], k, winner)
            assert vals[-1] == (1.0 if winner == "a" else 0.0)
            if R.rally_winners(other) != R.rally_winners(rec):   # a different future does show after row k
                assert vals[m:] != base[m:]


def test_the_band_is_the_one_the_report_rule_picks_from_the_committed_values():
    from video_arena.games.badminton import report as REP
    from video_arena.games.base import load_definition

    events = [e for p in sorted((TASKS / "badminton" / "gt").glob("*.json")) for e in json.loads(p.read_text())["events"]]
    if not events:
        pytest.skip("no built badminton cases")
    band = load_definition("badminton").band
    pairs = [(e["v_before"], e["v_after"]) for e in events]
    delta, state = REP.class_shares(pairs, band)
    assert delta == Counter(e["delta"] for e in events) and state == Counter(e["state"] for e in events)
    assert REP.chosen_band(pairs) == band


def test_the_watcher_computes_v_t_with_a_prior_for_players_it_cannot_name():
    """visible_values on visible_features is V_t's own chain and update; only the priors differ: both players get
    V_t's prior for a player with no other match (fitted the same way, on the matches that are not cases)."""
    pr = PR.watcher_prior()
    cases = {R.match_key(e.folder.rsplit("/", 1)[-1]) for e in R.select(R.read_pool(), BUILTIN_CASES, SELECTION_SEED)}
    fitting = [m for m in PR.table() if m.key not in cases]
    assert pr["matches"] == len(fitting) == 73
    assert (pr["kappa"], pr["tau"]) == (PR.fit(fitting).kappa, PR.fit(fitting).tau)
    assert pr["alpha"] / (pr["alpha"] + pr["beta"]) == pytest.approx(PR.Totals(fitting).w / PR.Totals(fitting).n)
    for rec in _records()[:4]:
        anonymous = copy.deepcopy(rec)
        anonymous["value_model"] |= {f"prior_{s}": {"alpha": pr["alpha"], "beta": pr["beta"]} for s in "ab"}
        features = P.PLUGIN.visible_features(rec)
        assert len(features) == len(P.PLUGIN.replay(rec))
        meta = {"fps": SC.FPS, "n_frames": SC.plan(rec).n_frames, "duration_s": SC.plan(rec).n_frames / SC.FPS}
        assert P.PLUGIN.visible_values(features, meta) == pytest.approx(P.PLUGIN.evaluate(anonymous), abs=1e-12)
        last = features[-1]
        a, b = rec["rallies"][-1]["score"]
        assert (last["games_a"] > last["games_b"]) == (a > b) and max(last["games_a"], last["games_b"]) == 2
        assert last["served_a"] + last["served_b"] == len(rec["rallies"])
