"""StarCraft II plugin: time base, grid, the event rules, frames on the grid, the incremental canvas, V_t's
cross-fitting, and that the ground truth alone re-renders (no sc2reader)."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from video_arena import paths
from video_arena.games.sc2 import match as M
from video_arena.games.sc2 import model as V
from video_arena.games.sc2 import plugin as P

L = M.LOOPS_PER_REAL_S


def unit(side, loop_born, x, y, died=None, fate="k", supply=1.0, worker=False, value=50, moves=()):
    pts = [(loop_born, x, y)] + list(moves)
    if died is not None:
        pts.append((died, x, y) if not moves else (died, moves[-1][1], moves[-1][2]))
    else:
        fate = "-"
    return f"{side} {'w' if worker else 'a'} {int(supply * 2)} {value} {fate}|" + ",".join(f"{a} {b} {c}" for a, b, c in pts)


def building(side, init, x, y, town=True, done=None, end=-1, fate="-", size=None, moves="-"):
    size = size or (5 if town else 3)
    done = init + 100 if done is None else done
    return f"{side} {size} {1 if town else 0} {init} {done} {end} {fate} {x} {y} {moves}"


def record(units=(), buildings=(), stats=(), end_loop=int(600 * L), winner="red"):
    bl = [building(0, 0, 20, 20), building(1, 0, 180, 180)] + list(buildings)
    return {"source": {"collection": "test", "id": "t", "sha256": "0" * 64},
            "match": {"release": "x", "speed": "Faster", "end_loop": end_loop, "map_size": [200, 200],
                      "winner": winner, "races": ["Terran", "Zerg"]},
            "units": list(units), "buildings": bl, "stats": list(stats),
            "resources": ["10 10 0", "190 190 1"]}


def test_time_base_is_real_seconds():
    assert M.real_s(22.4) == pytest.approx(1.0)
    assert M.real_s(16 * 60 * 1.4) == pytest.approx(60.0)   # a game minute is 1/1.4 real minutes


def test_grid_columns_left_to_right_rows_bottom_to_top():
    m = M.decode(record())
    x0, y0, x1, y1 = m.area
    assert M.cell(m, x0 + 0.1, y0 + 0.1) == "a1"
    assert M.cell(m, x1 - 0.1, y1 - 0.1) == "h8"
    assert M.cell(m, x0 + 0.1, y1 - 0.1) == "a8"
    # the picture: map y grows upwards, so a8 is drawn at the top left
    v = P.View(m.area)
    assert v.px(x0, y1)[1] < v.px(x0, y0)[1]


def test_expand_and_base_kill_rules():
    rec = record(buildings=[building(0, int(100 * L), 60, 30),                          # expand red
                            building(1, int(200 * L), 150, 170, end=int(300 * L), fate="k"),  # expand, killed
                            building(1, int(210 * L), 120, 120, end=int(215 * L), fate="d"),  # cancelled
                            building(0, int(220 * L), 70, 70, town=False),           # not a town hall
                            building(0, int(230 * L), 30, 30, end=int(400 * L), fate="k",  # flown, then killed
                                     moves=f"{int(260 * L)}:170:30")])
    m = M.decode(rec)
    evs = M.events(m)
    got = [(e.type, e.actor) for e in evs]
    assert got == [("expand", "red"), ("expand", "blue"), ("expand", "blue"), ("expand", "red"), ("base_kill", "red"),
                   ("base_kill", "blue"), ("win", "red")]
    assert evs[4].where == evs[1].where
    # the flown town hall: expand where it was started, base_kill where it stood when destroyed
    assert evs[3].where == M.cell(m, 30, 30) and evs[5].where == M.cell(m, 170, 30) != evs[3].where
    b = m.buildings[-1]
    assert b.pos(259 * L) == (30, 30) and b.pos(260 * L) == (170, 30)


def test_fight_rule_chain_gap_supply_actor_and_where():
    t = lambda s: int(s * L)  # noqa: E731
    units = [unit(0, 0, 100, 100, died=t(100), supply=2),   # chain 1: red loses 2+2, blue 1+1+1+2
             unit(0, 0, 100, 100, died=t(105), supply=2),
             unit(1, 0, 100, 100, died=t(110)),
             unit(1, 0, 101, 101, died=t(112)),
             unit(1, 0, 30, 170, died=t(115)),
             unit(1, 0, 100, 100, died=t(118), supply=2),
             unit(0, 0, 100, 100, died=t(129), supply=6),   # 11 s later: a new chain, 6 supply only
             unit(1, 0, 100, 100, died=t(131), supply=4, fate="d"),   # not killed by the other player
             unit(0, 0, 100, 100, died=t(300), supply=4),   # chain 3: tie on supply, red loses less value
             unit(1, 0, 100, 100, died=t(305), supply=4, value=300)]
    m = M.decode(record(units=units))
    fights = M.fights(m)
    assert len(fights) == 2
    f = fights[0]
    assert f.loop == t(118) and f.actor == "red" and f.detail["lost_supply"] == [4.0, 5.0]
    assert f.where == M.cell(m, 100, 100)
    assert fights[1].actor == "red" and fights[1].loop == t(305)


def test_events_never_share_a_frame_and_are_shown_from_their_frame():
    t = lambda s: int(s * L)  # noqa: E731
    units = [unit(0, 0, 150, 150, died=t(299.9) - k, supply=2) for k in range(5)]
    rec = record(units=units, buildings=[building(1, int(50 * L), 150, 150, end=t(299.9), fate="k"),
                                         building(0, t(299.95), 40, 160)])
    plugin = P.PLUGIN
    evs = P.events(rec)
    assert [e.type for e in evs] == ["expand", "base_kill", "fight", "expand", "win"]
    frames = plugin.event_frames(rec)
    assert frames == sorted(set(frames))
    for e, f in zip(evs, frames):
        assert M.real_s(e.loop) <= f / plugin.fps < M.real_s(e.loop) + 3


def test_canvas_draws_exactly_the_picture_and_reports_every_change():
    t = lambda s: int(s * L)  # noqa: E731
    units = [unit(k % 2, t(k), 40 + 7 * k, 60 + 3 * k, died=t(20 + k) if k % 3 else None, moves=[(t(15), 100, 90 + k)])
             for k in range(12)]
    rec = record(units=units, buildings=[building(0, t(5), 60, 60, done=t(9), end=t(25), fate="k"),
                                         building(1, t(3), 100, 100, town=False, size=2),
                                         building(0, t(2), 80, 40, moves=f"{t(12)}:120:140;{t(18)}:125:60")])
    c = P.Canvas(rec)
    prev = None
    for frame in range(35):
        loop = frame * L
        changed = c.draw(loop)
        want = np.asarray(P.draw_state(rec, loop))
        assert (c.pixels == want).all(), frame
        if prev is not None:
            diff = (prev != want).any(axis=2)
            covered = np.zeros_like(diff)
            for x0, y0, x1, y1 in changed:
                covered[max(y0, 0):y1, max(x0, 0):x1] = True
            assert not (diff & ~covered).any(), f"frame {frame}: a change outside the reported boxes"
        prev = want.copy()


def test_model_is_side_symmetric_and_cross_fitted():
    t = lambda s: int(s * L)  # noqa: E731
    recs = {}
    for k in range(12):
        stats = []
        for s in range(10, 400, 10):
            a, b = 1000 + 20 * s * (k % 3), 1000 + 15 * s
            stats += [f"{t(s)} 0 40 20 {a} 900 0 0 100 0", f"{t(s)} 1 40 20 {b} 900 0 0 100 0"]
        rec = record(stats=stats, winner="red" if k % 2 else "blue")
        rec["source"] = {"sha256": f"{k:064x}", "id": f"r{k}"}
        recs[f"r{k}"] = rec
    mdl = V.fit_all(recs)
    m = M.decode(recs["r1"])
    coef = V.coef_for(mdl, recs["r1"]["source"]["sha256"])
    p = V.predict(coef, m, t(200))
    swapped = json.loads(json.dumps(recs["r1"]))
    swapped["stats"] = [" ".join([r.split()[0], str(1 - int(r.split()[1]))] + r.split()[2:]) for r in swapped["stats"]]
    assert V.predict(coef, M.decode(swapped), t(200)) == pytest.approx(1 - p)
    # a replay's own fold model does not move when its result changes; the other folds' do
    j = mdl["folds"][recs["r1"]["source"]["sha256"]]
    flipped = dict(recs, r1=dict(recs["r1"], match=dict(recs["r1"]["match"], winner="blue")))
    mdl2 = V.fit_all(flipped)
    assert mdl2["coef"][j] == mdl["coef"][j]
    assert any(mdl2["coef"][i] != mdl["coef"][i] for i in range(V.K) if i != j)


def test_committed_model_covers_every_committed_replay():
    mdl = V.load_model()
    files = P.replay_files()
    assert len(files) == len(mdl["folds"]) == 51
    from video_arena.games.sc2 import replay as R
    assert {R.sha256(f) for f in files} == set(mdl["folds"])


def test_selection_rule_keeps_long_replays_and_is_seeded():
    recs = {f"f{k}": {"source": {"sha256": f"{k:064x}"}, "match": {"end_loop": int((100 + 30 * k) * L)}} for k in range(12)}
    cases, fitting = P.selection(5, 1, recs)
    assert all(P.duration_s(recs[c]) >= P.MIN_CASE_S for c in cases)
    assert set(cases) | set(fitting) == set(recs) and not set(cases) & set(fitting)
    assert P.selection(5, 1, recs) == (cases, fitting) and P.selection(5, 2, recs)[0] != cases
    with pytest.raises(P.SC2Error):
        P.selection(12, 1, recs)


def test_ground_truth_alone_renders_without_sc2reader():
    gts = sorted((paths.default_tasks_root() / "sc2" / "gt").glob("*.json"))
    if not gts:
        pytest.skip("tasks/sc2 has no built cases")
    code = f"""
import sys, json
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "sc2reader" or name.startswith("sc2reader.") or name == "mpyq":
            raise ImportError("blocked: " + name)
sys.meta_path.insert(0, Block())
from video_arena.games.sc2 import plugin as P
gt = json.load(open({str(gts[0])!r}))
steps = P.PLUGIN.replay(gt["record"])
assert [(s.type, s.actor, s.where) for s in steps] == [(e["type"], e["actor"], e["where"]) for e in gt["events"]]
img = P.PLUGIN.frame_image(gt["record"], 30)
assert img.size == (1536, 1536)
assert "sc2reader" not in sys.modules
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=paths.REPO_ROOT)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


def test_a_landed_building_stands_where_it_landed_not_where_it_was_seen_in_the_air():
    """A Terran town hall seen by a damage snapshot while flying, then landing elsewhere and dying there (the
    shape of lotv/lotv1's Planetary Fortress): it stands from the landing at the place recorded after the
    landing, so base_kill's `where` is where it was destroyed (not the cell of the mid-flight snapshot)."""
    from video_arena.games.sc2 import replay as R

    b = {"x": 56, "y": 37, "flights": [[11948, 18704]],
         "known": [(12480, 48, 55), (12720, 51, 42), (20160, 107, 73), (21927, 107, 73)]}
    assert R._moves(b) == [(18704, 107, 73)]
    # no record after the landing: the last place seen in the air; dies in the air: where it died
    assert R._moves({"x": 0, "y": 0, "flights": [[100, 200]], "known": [(120, 5, 5), (150, 9, 9)]}) == [(200, 9, 9)]
    assert R._moves({"x": 0, "y": 0, "flights": [[100, None]], "known": [(120, 5, 5), (150, 9, 9)]}) == [(100, 9, 9)]
    # a flight with nothing recorded in or after it moves nothing; the next flight's records are its own
    assert R._moves({"x": 1, "y": 1, "flights": [[100, 200], [300, 400]], "known": [(350, 7, 7), (450, 8, 8)]}) == \
        [(400, 8, 8)]
