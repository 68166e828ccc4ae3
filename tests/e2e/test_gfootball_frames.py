"""Google Research Football built-in cases: the frame at each event's time and the frame 1 s before
show the event (checked on the decoded video and on the recorded state it was drawn from).

goal       at t the ball is over the goal line inside the goal mouth, or, when no recorded step shows it
           over the line (headless, the engine can reset to the kick-off first), within 3 m of the goal
           mouth with the score changing within 2 steps; 1 s before it is on the pitch
corner     at t the ball is over a goal line; 1 s before it is on the pitch
shot       at t the ball is at the striker (the strike cell); by the next frame (0.2 s) it has flown at
           >= 14 m/s towards the goal it is aimed at
free_kick  at t play is stopped for the free kick (engine game mode); 1 s before it was not yet restarting
penalty    at t play is stopped for the penalty (engine game mode); 1 s before it was not
In every case the decoded frame shows the white ball where the state puts it.
"""
from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest

from video_arena import paths
from video_arena.cases import build as B
from video_arena.media import frames as F
from video_arena.games.gfootball import match_state as MS
from video_arena.games.gfootball import plugin as P

pytestmark = pytest.mark.slow

TASKS = paths.default_tasks_root()
CASES_FILE = TASKS / "gfootball" / "cases.json"
CASE_IDS = [c["case_id"] for c in json.loads(CASES_FILE.read_text())["cases"]] if CASES_FILE.is_file() else []
N_CASES = int(os.environ.get("VA_GFOOTBALL_FRAME_CASES", "3"))   # every case: VA_GFOOTBALL_FRAME_CASES=20


def _gt(cid):
    return json.loads((TASKS / "gfootball" / "gt" / f"{cid}.json").read_text(encoding="utf-8"))


def _ball_px(m, s):
    bx, by, bz = m.ball[s]
    x, y = P.px(bx, by)
    return x, y - max(0.0, bz) * P.SCALE * 0.5


def _ball_visible(frame: np.ndarray, x: float, y: float) -> bool:
    xi, yi = int(round(x)), int(round(y))
    patch = frame[max(0, yi - 2):yi + 3, max(0, xi - 2):xi + 3].astype(int)
    return patch.size > 0 and int(patch.min(axis=2).max()) > 200


@pytest.mark.skipif(not CASE_IDS, reason="tasks/gfootball has no built cases")
@pytest.mark.parametrize("case_id", CASE_IDS[:N_CASES])
def test_frames_at_each_event_and_one_second_before_show_it(tmp_path, case_id):
    gt = _gt(case_id)
    rec, fps = gt["record"], gt["video"]["fps"]
    mp4 = TASKS / "gfootball" / "media" / f"{case_id}.mp4"
    entry = next(e for e in json.loads((TASKS / "gfootball" / "manifest.json").read_text())["cases"] if e["case_id"] == case_id)
    if not (mp4.is_file() and B.sha256_file(mp4) == entry.get("media_sha256")):
        B.media_only_case("gfootball", case_id, TASKS, tmp_path)
        mp4 = tmp_path / "gfootball" / "media" / f"{case_id}.mp4"
    m = P.decoded(rec)
    events = gt["events"]
    times = [e["t"] for e in events] + [e["t"] - 1.0 for e in events]
    got = F.decode_frames(mp4, times)
    plugin = P.PLUGIN
    seen, unseen_crossings = set(), []   # (unseen crossings: goals whose crossing no step shows)
    for i, e in enumerate(events):
        s = plugin.state_at_frame(rec, round(e["t"] * fps))
        s0 = plugin.state_at_frame(rec, round((e["t"] - 1.0) * fps))
        bx, by, _ = m.ball[s]
        bx0 = m.ball[s0][0]
        what = f"event {i} {e['type']} at {e['t']} (state {s})"
        if e["type"] == "goal":
            sign = 1 if e["actor"] == "left" else -1
            change = next(j for j in range(s, m.n) if m.score[j] != m.score[max(0, s - 1)])   # this goal's
            if MS.goal_crossing_step(m, change, sign) is not None:
                assert MS.in_goal(m, s, sign), what
            else:
                unseen_crossings.append(i)
                assert change - s <= 2, what
                assert (MS.GOAL_LINE_X - bx * sign) * MS.X_M < 3.0 and abs(by * MS.Y_M) < MS.GOAL_HALF_WIDTH_M + 3.0, what
            assert abs(bx0) < MS.GOAL_LINE_Q, what
        elif e["type"] == "corner":
            assert abs(bx) >= MS.GOAL_LINE_Q and abs(bx0) < MS.GOAL_LINE_Q, what
        elif e["type"] == "shot":
            s1 = min(m.n - 1, s + MS.STEPS_PER_S)
            sign = 1 if e["actor"] == "left" else -1
            assert e["where"] in (MS.cell(bx, by), MS.cell(*m.ball[max(0, s - 1)][:2])), what
            # the strike as game.toml defines it: over the next SHOT_SPEED_STEPS steps (the next frame) the
            # ball flies at >= SHOT_MIN_SPEED_MPS towards that goal (a block or save may stop it soon after)
            k = MS.SHOT_SPEED_STEPS
            (x0, y0), (x1, y1) = MS.to_metres(bx, by), MS.to_metres(*m.ball[s + k][:2])
            assert (x1 - x0) * sign > 0 and math.hypot(x1 - x0, y1 - y0) / k * MS.STEPS_PER_S >= MS.SHOT_MIN_SPEED_MPS, what
            assert s1 > s
        elif e["type"] == "free_kick":
            assert m.game_mode[s] == MS.FREE_KICK, what
            assert m.game_mode[s0] != MS.FREE_KICK, what
        elif e["type"] == "penalty":
            assert m.game_mode[s] == MS.PENALTY and m.game_mode[s0] != MS.PENALTY, what
        for t, st in ((e["t"], s), (e["t"] - 1.0, s0)):
            assert _ball_visible(got[t], *_ball_px(m, st)), f"{what}: no ball in the decoded frame at {t}"
        seen.add(e["type"])


@pytest.mark.skipif(not CASE_IDS, reason="tasks/gfootball has no built cases")
def test_the_cases_hold_every_event_type_but_the_rare_penalty():
    seen = {e["type"] for cid in CASE_IDS for e in _gt(cid)["events"]}
    assert {"goal", "shot", "corner", "free_kick"} <= seen, seen
