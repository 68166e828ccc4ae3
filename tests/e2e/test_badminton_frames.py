"""Badminton built-in cases: the decoded video shows each event when the ground truth says.

winner, error  at t the shuttle is down at its end point (on the floor, or in the net for an error `net`), in
               the zone `where` names (a winner: that third of the loser's half, inside the singles lines; an
               error `out`: outside them; `net`: at the net), and the decoded frame shows it there; 1 s before
               it is in the air (at least 0.3 m up: in flight, or in the server's hand before a serve) and the
               decoded frame shows it there
game           the players change ends afterwards (but after the last game): player_a (the red player) is on
               the other side of the net in the decoded frame of the next game's set-up than at the game row
fault          the umpire's call: no landing to check (the frame is still checked against the re-render)
Every checked frame is also compared with the re-render of the scene the record gives at that frame.
"""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from video_arena import paths
from video_arena.cases import build as B
from video_arena.games.badminton import plugin as P
from video_arena.games.badminton import records as R
from video_arena.games.badminton import render as RD
from video_arena.games.badminton import scene as SC
from video_arena.media import frames as F

pytestmark = pytest.mark.slow

TASKS = paths.default_tasks_root()
CASES_FILE = TASKS / "badminton" / "cases.json"
CASE_IDS = [c["case_id"] for c in json.loads(CASES_FILE.read_text())["cases"]] if CASES_FILE.is_file() else []
N_CASES = int(os.environ.get("VA_BADMINTON_FRAME_CASES", "2"))   # every case: VA_BADMINTON_FRAME_CASES=20
AFTER_GAME_S = SC.GAME_REST_S + SC.GAME_SETUP_S / 2


def _gt(cid):
    return json.loads((TASKS / "badminton" / "gt" / f"{cid}.json").read_text(encoding="utf-8"))


def _shuttle_shown(frame: np.ndarray, shuttle) -> bool:
    """The decoded frame differs from the empty court round the shuttle's place (the white disc and its ring)."""
    sx, sy, _, _, s = RD.shuttle_screen(shuttle)
    r = max(2, int(round(0.09 * s)))
    xi, yi = int(round(sx)), int(round(sy))
    got = frame[yi - r:yi + r + 1, xi - r:xi + r + 1].astype(int)
    bg = RD.background_pixels()[yi - r:yi + r + 1, xi - r:xi + r + 1].astype(int)
    return got.size > 0 and float(np.abs(got - bg).max()) > 60 and int(got.max()) > 200


def _red_side(frame: np.ndarray) -> str:
    """Which side of the net the red player (player_a) stands in the decoded frame: by the red shirt's pixels."""
    red = (frame[:, :, 0] > 150) & (frame[:, :, 1] < 110) & (frame[:, :, 2] < 110)
    ys = np.nonzero(red)[0]
    assert ys.size > 30, "no red player in the frame"
    net_y = RD.project(R.COURT_W / 2, R.NET_Y, 0.0)[1]
    return "near" if float(np.median(ys)) > net_y - 60 else "far"


def _zone_ok(kind: str, where: str, actor: str, rec: dict, i_rally: int, end) -> bool:
    x, y, z = end
    ends = R.ends_of(rec, i_rally)
    if kind == "winner":
        loser = "b" if actor == "player_a" else "a"
        near = ends[loser] == "near"
        d = y - R.NET_Y if near else R.NET_Y - y
        third = "front" if d < R.NET_Y / 3 else "mid" if d < 2 * R.NET_Y / 3 else "back"
        return z == 0 and 0 < d <= R.COURT_L / 2 and SC.X0 <= x <= SC.X1 and third == where
    if where == "out":
        return z == 0 and not SC._in_court((x, y))
    return where == "net" and y == R.NET_Y and 0 < z < SC.NET_H


@pytest.mark.skipif(not CASE_IDS, reason="tasks/badminton has no built cases")
@pytest.mark.parametrize("case_id", CASE_IDS[:N_CASES])
def test_frames_at_each_event_and_one_second_before_show_it(tmp_path, case_id):
    gt = _gt(case_id)
    rec, fps = gt["record"], gt["video"]["fps"]
    mp4 = TASKS / "badminton" / "media" / f"{case_id}.mp4"
    entry = next(e for e in json.loads((TASKS / "badminton" / "manifest.json").read_text())["cases"] if e["case_id"] == case_id)
    if not (mp4.is_file() and B.sha256_file(mp4) == entry.get("media_sha256")):
        B.media_only_case("badminton", case_id, TASKS, tmp_path)
        mp4 = tmp_path / "badminton" / "media" / f"{case_id}.mp4"
    p = SC.plan(rec)
    events = gt["events"]
    last_game = max(i for i, e in enumerate(events) if e["type"] == "game")
    assert last_game == len(events) - 1
    times = []
    for i, e in enumerate(events):
        times += [e["t"], e["t"] - 1.0] if e["type"] != "game" else [e["t"], e["t"] + AFTER_GAME_S] if i < last_game else [e["t"]]
    got = F.decode_frames(mp4, times)
    seen = set()
    i_rally = -1
    for i, e in enumerate(events):
        what = f"{case_id} event {i} {e['type']} {e['actor']} {e['where']} at {e['t']}"
        f = round(e["t"] * fps)
        if e["type"] == "game" and i == last_game:   # the match is over: nobody changes ends
            checks = [(e["t"], f)]
        elif e["type"] == "game":
            after = round((e["t"] + AFTER_GAME_S) * fps)
            a0, a1 = SC.frame_scene(p, f).a, SC.frame_scene(p, after).a
            assert (a0[1] > R.NET_Y) != (a1[1] > R.NET_Y), what
            assert _red_side(got[e["t"]]) != _red_side(got[e["t"] + AFTER_GAME_S]), what
            checks = [(e["t"], f), (e["t"] + AFTER_GAME_S, after)]
        else:
            i_rally += 1
            sc, before = SC.frame_scene(p, f), SC.frame_scene(p, f - fps)
            assert sc.shuttle == p.rallies[i_rally].end_point, what
            if e["type"] != "fault":
                assert _zone_ok(e["type"], e["where"], e["actor"], rec, i_rally, sc.shuttle), f"{what}: {sc.shuttle}"
                assert before.shuttle[2] > 0.3, f"{what}: the shuttle 1 s before is at {before.shuttle}"
                assert _shuttle_shown(got[e["t"]], sc.shuttle), f"{what}: no shuttle at its end point"
                assert _shuttle_shown(got[e["t"] - 1.0], before.shuttle), f"{what}: no shuttle 1 s before"
            checks = [(e["t"], f), (e["t"] - 1.0, f - fps)]
        for t, k in checks:
            assert F.frame_distance(got[t], P.PLUGIN.frame_image(rec, k)) < 4, f"{what}: the frame at {t} is not the re-render"
        seen.add(e["type"])
    assert {"winner", "error", "game"} <= seen
