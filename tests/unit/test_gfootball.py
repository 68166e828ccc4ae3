"""Google Research Football plugin: state codec, event rules, V_t model, pacing and renderer, on synthetic
matches (no engine).  The built cases themselves are checked by tests/e2e/test_builtin_cases.py and
tests/e2e/test_gfootball_frames.py."""
from __future__ import annotations

import hashlib
import math
import random

import numpy as np
import pytest

from video_arena.games.gfootball import calibrate as C
from video_arena.games.gfootball import match_state as MS
from video_arena.games.gfootball import plugin as P

GL = MS.GOAL_LINE_X


def _match(n, ball, mode=None, score=None, owner=None):
    """A synthetic state: players in fixed lines, the given ball path / modes / scores / owners."""
    left = [[(-0.8 + 0.15 * k, -0.3 + 0.06 * k) for k in range(11)] for _ in range(n)]
    right = [[(0.8 - 0.15 * k, 0.3 - 0.06 * k) for k in range(11)] for _ in range(n)]
    return MS.encode_state(ball, left, right, mode or [0] * n, score or [(0, 0)] * n,
                           owner or [(-1, -1)] * n, [(1,) * 22] * n)


def _record(state):
    return {"source": {"id": "synthetic"}, "match": {"game_engine_random_seed": 1, "left_difficulty": 0.5,
                                                     "right_difficulty": 0.5, "steps": state["n"] - 1},
            "state": state}


def test_codec_round_trips_within_the_quantum_and_is_compact():
    rng = random.Random(1)
    n = 3001
    ball = [(rng.uniform(-1, 1), rng.uniform(-0.42, 0.42), rng.uniform(0, 5)) for _ in range(n)]
    st = _match(n, ball)
    m = MS.decode_state(st)
    assert m.n == n
    for i in (0, 17, n - 1):
        assert all(abs(a - b) <= 0.5 / MS.XY_Q + 1e-12 for a, b in zip(m.ball[i][:2], ball[i][:2]))
        assert abs(m.ball[i][2] - ball[i][2]) <= 0.5 / MS.Z_Q + 1e-12
    assert MS.encode_state(*_fields(m)) == st   # re-encoding the decoded state is a fixed point


def _fields(m):
    left = [list(p[0]) for p in m.players]
    right = [list(p[1]) for p in m.players]
    return m.ball, left, right, m.game_mode, m.score, m.owner, m.active


def test_corrupt_state_is_a_clear_error():
    st = _match(10, [(0, 0, 0)] * 10)
    with pytest.raises(ValueError):
        MS.decode_state(dict(st, n=11))
    with pytest.raises(ValueError):
        MS.decode_state(dict(st, score=[[3, 1, 0]]))


def test_grid_cells():
    assert MS.cell(-GL, -0.43) == "1a" and MS.cell(GL, 0.43) == "6c"
    assert MS.cell(0.9, 0.0) == "6b" and MS.cell(-0.01, 0.0) == "3b" and MS.cell(0.01, 0.2) == "4c"


def _goal_match():
    """Left's player shoots from (0.8, 0.05) at step 10; the ball crosses the right goal line at step 17,
    the score changes at step 18; then a kick-off."""
    n = 40
    ball, owner, score, mode = [], [], [], []
    for i in range(n):
        if i < 10:
            ball.append((0.8, 0.05, 0.1)); owner.append((0, 5))
        else:
            ball.append((min(0.8 + 0.035 * (i - 10), 1.05), 0.05 - 0.002 * (i - 10), 0.3)); owner.append((-1, -1))
        score.append((1, 0) if i >= 18 else (0, 0))
        mode.append(1 if i >= 25 else 0)
    return _match(n, ball, mode, score, owner)


def test_goal_is_the_line_crossing_credited_side_and_strike_cell_and_not_also_a_shot():
    ev = MS.derive_events(MS.decode_state(_goal_match()))
    assert [(e.type, e.actor, e.where) for e in ev] == [("goal", "left", "6b")]
    assert ev[0].step == 17   # first step with x > the goal line (1.011): 0.8 + 0.035 * 7 = 1.045


def test_a_fast_strike_towards_goal_that_does_not_score_is_a_shot_and_a_pass_is_not():
    n = 30
    ball = [(0.6, 0.1, 0.1)] * 10 + [(0.6 + 0.03 * k, 0.1 - 0.006 * k, 0.2) for k in range(1, 21)]
    owner = [(0, 9)] * 10 + [(-1, -1)] * 15 + [(1, 0)] * 5       # the keeper catches it
    ev = MS.derive_events(MS.decode_state(_match(n, ball, owner=owner)))
    assert [(e.step, e.type, e.actor, e.where) for e in ev] == [(10, "shot", "left", "5b")]
    # the same strike sideways (a pass) or backwards is not a shot
    ball2 = [(0.6, 0.1, 0.1)] * 10 + [(0.6 - 0.03 * k, 0.1, 0.2) for k in range(1, 21)]
    assert MS.derive_events(MS.decode_state(_match(n, ball2, owner=owner))) == []
    # a slow roll towards goal is not a shot
    ball3 = [(0.6, 0.1, 0.1)] * 10 + [(0.6 + 0.004 * k, 0.1, 0.0) for k in range(1, 21)]
    assert MS.derive_events(MS.decode_state(_match(n, ball3, owner=owner))) == []
    # right's shot goes to the left goal
    ball4 = [(-0.6, 0.0, 0.1)] * 10 + [(-0.6 - 0.03 * k, 0.0, 0.2) for k in range(1, 21)]
    owner4 = [(1, 9)] * 10 + [(-1, -1)] * 20
    ev = MS.derive_events(MS.decode_state(_match(n, ball4, owner=owner4)))
    assert [(e.type, e.actor, e.where) for e in ev] == [("shot", "right", "2b")]


def test_corner_free_kick_and_penalty_from_game_mode_changes():
    n = 120
    ball = [(0.9 + 0.01 * i, 0.3, 0.0) for i in range(20)] + [(GL, 0.42, 0.0)] * 20 \
        + [(-0.25, -0.12, 0.0)] * 40 + [(-0.8, 0.0, 0.0)] * 40   # the free kick at right's player 7
    mode = [0] * 22 + [4] * 18 + [0] * 5 + [3] * 20 + [0] * 15 + [6] * 20 + [0] * 20
    owner = [(-1, -1)] * 30 + [(0, 7)] * 10 + [(-1, -1)] * 15 + [(1, 4)] * 25 + [(-1, -1)] * 10 + [(1, 9)] * 30
    ev = MS.derive_events(MS.decode_state(_match(n, ball, mode, owner=owner)))
    got = [(e.step, e.type, e.actor, e.where) for e in ev]
    # the ball is over the right goal line from step 12 (0.9 + 0.12 > 1.011): corner for left at 12
    assert got[0] == (12, "corner", "left", "")
    assert got[1] == (45, "free_kick", "right", MS.cell(-0.25, -0.12))
    assert got[2] == (80, "penalty", "right", "")
    assert len(got) == 3


def test_expected_result_and_goal_model_fit():
    assert P.expected_result(1, 0, 1e-3, 1e-3) == 1.0 and P.expected_result(0, 0, 1e-3, 1e-3) == 0.5
    v = P.expected_result(0, 1500, 1e-3, 1e-3)
    assert abs(v - 0.5) < 1e-9
    assert P.expected_result(1, 1500, 1e-3, 1e-3) > 0.6
    assert 0.5 < P.expected_result(0, 1500, 2e-3, 1e-3) < P.expected_result(1, 1500, 2e-3, 1e-3)
    assert P.expected_result(-1, 3, 1e-3, 1e-3) < 0.01
    rng = random.Random(3)
    rows = []
    for _ in range(400):
        x = rng.uniform(-1, 1)
        mu = 3000 * math.exp(-7.0 + 1.2 * x)
        # Poisson sample (Knuth)
        k, p, lim = 0, 1.0, math.exp(-mu)
        while True:
            p *= rng.random()
            if p <= lim:
                break
            k += 1
        rows.append((k, x, 3000))
    a, b = C.fit_poisson(rows)
    assert abs(a + 7.0) < 0.1 and abs(b - 1.2) < 0.2


def test_v_t_is_the_score_and_the_time_left_the_picture_shows():
    """V_t does not read the AI difficulties (the picture does not show them), and a watcher's visible_values on
    visible_features is V_t: the score after each event and the time left at its video second."""
    rec = _record(_goal_match())
    base = P.PLUGIN.evaluate(rec)
    for left, right in ((0.05, 0.95), (0.95, 0.05)):
        assert P.PLUGIN.evaluate(dict(rec, match=dict(rec["match"], left_difficulty=left, right_difficulty=right))) == base
    features = P.PLUGIN.visible_features(rec)
    assert features == [{"t": P.PLUGIN._frames_of_steps([17])[0] / P.PLUGIN.fps, "goals_left": 1, "goals_right": 0}]
    assert base[0] == 0.5 and base[1] > 0.5
    full = dict(rec, match=dict(rec["match"], steps=P.STEPS))   # visible_values knows the match is STEPS long
    assert P.PLUGIN.visible_values(features, {}) == P.PLUGIN.evaluate(full)


def test_pace_puts_events_on_their_step_frames_and_frames_show_the_right_state():
    rec = _record(_goal_match())
    sched = P.PLUGIN.pace(rec, random.Random(0))
    lead = round(P.PLUGIN.lead_in_s * P.PLUGIN.fps)
    # step 17 -> the last frame at or before it (lead + 8, regularly state 16), which shows step 17 itself
    assert sched.fps == 5 and sched.event_frames == (lead + 8,)
    assert P.PLUGIN.state_at_frame(rec, lead + 8) == 17
    assert P.PLUGIN.state_at_frame(rec, lead + 7) == 14 and P.PLUGIN.state_at_frame(rec, lead + 9) == 18
    assert P.PLUGIN.state_at_frame(rec, lead + 8 - 5) == 6                # 1 s before
    assert P.PLUGIN.state_at_frame(rec, 0) == 0 and P.PLUGIN.state_at_frame(rec, sched.n_frames - 1) == 39
    # colliding steps move to the next free frame, in order
    assert P.PLUGIN._frames_of_steps([3, 4, 5]) == [lead + 1, lead + 2, lead + 3]
    assert P.PLUGIN._frames_of_steps([4, 10]) == [lead + 2, lead + 5]
    images, pos = P.PLUGIN.video(rec, sched)
    assert pos == list(range(sched.n_frames))
    # the frames' states never go back, and each event frame shows exactly its event's step
    states = [P.PLUGIN.state_at_frame(rec, k) for k in range(sched.n_frames)]
    assert states == sorted(states)
    assert [states[f] for f in sched.event_frames] == P.PLUGIN.event_steps(rec)


def test_render_is_deterministic_hud_free_size_and_shows_the_ball_where_the_state_says():
    rec = _record(_goal_match())
    m = P.decoded(rec)
    a, b = P.draw_state(m, 5), P.draw_state(m, 5)
    assert a.size == (1280, 720) and hashlib.sha256(a.tobytes()).digest() == hashlib.sha256(b.tobytes()).digest()
    # the ball (white) is drawn at its pitch position, lifted by its height
    x, y = P.px(*m.ball[5][:2])
    y -= m.ball[5][2] * P.SCALE * 0.5
    assert a.getpixel((round(x), round(y))) == (250, 250, 250) or min(a.getpixel((round(x), round(y)))) > 200
    # a later state differs
    assert P.draw_state(m, 20).tobytes() != a.tobytes()


def test_source_id_does_not_reveal_the_difficulties_and_specs_are_a_seeded_prefix():
    s20 = P.match_specs(20, 20250)
    assert P.match_specs(5, 20250) == s20[:5] and P.match_specs(20, 1) != s20
    assert len({P.spec_id(s) for s in s20}) == 20
    for s in s20:
        assert str(s["left_difficulty"]) not in P.spec_id(s)


def test_media_only_skips_plugins_without_cases_unless_named(tmp_path, capsys):
    from video_arena.cases import build as B

    assert B.main(["--media-only", "--tasks-root", str(tmp_path)]) == 1
    out = capsys.readouterr()
    assert "gfootball: no cases" in out.out and "nothing to re-render" in out.err
    (tmp_path / "gfootball").mkdir()
    (tmp_path / "gfootball" / "game.toml").write_text("")
    assert B.main(["--media-only", "--games", "gfootball", "--tasks-root", str(tmp_path)]) == 1
    out = capsys.readouterr()
    assert "gfootball: FAILED" in out.out + out.err


def test_a_corner_shortly_before_a_goal_keeps_both_and_the_goal_is_not_put_at_the_corner():
    """Seen in a built match: the ball goes over the goal line wide of the posts (a corner), the corner
    is headed in and the engine resets before any step shows the ball in the goal.  The goal is the
    step before the score change, not the corner's crossing, and the corner is not dropped as 'a goal'."""
    n = 80
    ball, mode, score, owner = [], [], [], []
    for i in range(n):
        if i < 10:
            ball.append((-0.95 + 0.0 * i, -0.14, 0.2))            # right attacks the left goal, wide
        elif i < 12:
            ball.append((-1.0 - 0.008 * (i - 9), -0.14, 0.2))     # over the line at step 11, 11.7 m wide
        elif i < 20:
            ball.append((-MS.GOAL_LINE_Q, -0.431, 0.1))           # at the corner flag
        elif i < 40:
            ball.append((-1.0 + 0.001 * (40 - i), -0.02, 1.0))    # the header, stays short of the line
        else:
            ball.append((0.0, 0.0, 0.1))                          # kick-off
        mode.append(4 if 12 <= i < 20 else 1 if i >= 40 else 0)
        score.append((0, 1) if i >= 40 else (0, 0))
        owner.append((-1, -1))
    ev = MS.derive_events(MS.decode_state(_match(n, ball, mode, score, owner)))
    assert [(e.step, e.type, e.actor) for e in ev] == [(11, "corner", "right"), (39, "goal", "right")]
    m = MS.decode_state(_match(n, ball, mode, score, owner))
    assert MS.goal_crossing_step(m, 40, -1) is None and MS.over_line(m.ball[11][0], -1)


def test_sprite_blend_is_pil_paste_for_every_value():
    """draw_sprites blends in numpy; the media's bytes rest on it giving what PIL's paste through an L mask
    gives, for every (picture, sprite, mask) value (256^3 of them, a mask value per column block)."""
    import numpy as np
    from PIL import Image

    v = np.arange(256, dtype=np.uint8)
    dst = np.repeat(v, 256).reshape(256, 256)              # row: picture value
    src = np.tile(v, 256).reshape(256, 256)                # column: sprite value
    for a in range(256):
        mask = np.full((256, 256), a, np.uint8)
        pixels = np.stack([dst, src, dst], axis=2).copy()
        sprite = np.stack([src, dst, 255 - src], axis=2)
        want = Image.fromarray(pixels.copy())
        want.paste(Image.fromarray(sprite), (0, 0), Image.fromarray(mask))
        inv = (255 - mask.astype(np.uint32))[:, :, None]
        P._paste(pixels, (inv, sprite.astype(np.uint32) * mask.astype(np.uint32)[:, :, None] + 128), 128, 128)
        assert np.array_equal(pixels, np.asarray(want)), f"mask {a}"
        # a colour through the mask (the ball's shadow)
        pixels = np.stack([dst, src, dst], axis=2).copy()
        want = Image.fromarray(pixels.copy())
        want.paste((10, 30, 250), (0, 0), Image.fromarray(mask))
        P._paste(pixels, (inv, np.array((10, 30, 250), np.uint32) * mask.astype(np.uint32)[:, :, None] + 128), 128, 128)
        assert np.array_equal(pixels, np.asarray(want)), f"mask {a}, colour"


def test_sprites_off_the_picture_are_clipped_and_report_their_box():
    import numpy as np

    terms = P._blend_terms((250, 250, 250), 5.5, (20, 20, 20), 1.4)
    pixels = np.zeros((40, 60, 3), np.uint8)
    box = P._paste(pixels, terms, -3, 2)
    assert box[0] == 0 and box[1] == 0 and 0 < box[2] < 10 and 0 < box[3] < 10
    assert pixels[box[1]:box[3], box[0]:box[2]].any() and not pixels[:, box[2]:].any()
    assert P._paste(pixels, terms, -50, -50)[2:] == P._paste(pixels, terms, -50, -50)[:2]   # empty


def test_a_kick_is_ringed_on_the_picture_for_four_steps():
    """Where the ball leaves a player (the event rules' release), a magenta ring round its place on the grass, from
    that step for KICK_MARK_STEPS steps: the kick falls between two frames at 5 fps, the ring shows where it was."""
    n = 30
    ball = [(0.6, 0.1, 0.1)] * 10 + [(0.6 + 0.03 * k, 0.1 - 0.006 * k, 0.2) for k in range(1, 21)]
    owner = [(0, 9)] * 10 + [(-1, -1)] * 20
    m = MS.decode_state(_match(n, ball, owner=owner))
    assert m.releases() == [(10, 0)]
    assert [P.kicks_shown(m, i) for i in range(8, 16)] == [[], [], [10], [10], [10], [10], [], []]
    x, y = (round(v) for v in P.px(*m.ball[10][:2]))
    def magenta(i):
        a = np.asarray(P.draw_state(m, i)).astype(int)[y - 14:y + 15, x - 14:x + 15]
        return int(((a[:, :, 0] > 180) & (a[:, :, 1] < 100) & (a[:, :, 2] > 180)).sum())
    assert magenta(12) > 40 and magenta(9) == 0 and magenta(14) == 0
