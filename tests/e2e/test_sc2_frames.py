"""StarCraft II built-in cases: the decoded video shows each event where and when the ground truth says.

For every event the test draws the match twice at the same moment: as it was (the re-render of the record)
and with the event undone or done too early, and checks that the decoded frame matches the first over the
pixels where the two differ:

expand     at t the new town hall's footprint is there (undone: the town hall removed); a second before it is
           absent (done too early: the town hall already standing)
base_kill  at t the town hall is gone (undone: it still stands); a second before it stands (done too early: removed)

"A second before" is the frame before the event's moment (1 s at the video's 1 fps): t itself is the first
frame at or after the moment, one later when an earlier event took that frame (match.py, plugin.event_frames),
so t - 1 can be after the moment.
fight      at t the discs of every unit that died in the fight are gone (undone: those units still alive
           where they died); 1 s before its first death they are there (done too early: removed)

All cases: VA_SC2_FRAME_CASES=20 (default 2).
"""
from __future__ import annotations

import copy
import json
import math
import os

import numpy as np
import pytest

from video_arena import paths
from video_arena.cases import build as B
from video_arena.games.sc2 import match as M
from video_arena.games.sc2 import plugin as P
from video_arena.media import frames as F

pytestmark = pytest.mark.slow

TASKS = paths.default_tasks_root()
CASES_FILE = TASKS / "sc2" / "cases.json"
CASE_IDS = [c["case_id"] for c in json.loads(CASES_FILE.read_text())["cases"]] if CASES_FILE.is_file() else []
N_CASES = int(os.environ.get("VA_SC2_FRAME_CASES", "2"))


def _gt(cid):
    return json.loads((TASKS / "sc2" / "gt" / f"{cid}.json").read_text(encoding="utf-8"))


def _building_variant(rec, k, *, init=None, end=None, remove=False):
    out = copy.deepcopy(rec)
    if remove:
        del out["buildings"][k]
        return out
    f = out["buildings"][k].split()
    if init is not None:
        f[3] = str(init)
    if end is not None:
        f[5], f[6] = str(end), "-" if end < 0 else f[6]
    out["buildings"][k] = " ".join(f)
    return out


def _units_variant(rec, ks, *, alive=False):
    out = copy.deepcopy(rec)
    ks = set(ks)
    if alive:
        for k in ks:
            head, pts = out["units"][k].split("|")
            h = head.split()
            h[4] = "-"
            out["units"][k] = " ".join(h) + "|" + pts
    else:
        out["units"] = [u for i, u in enumerate(out["units"]) if i not in ks]
    return out


def _shows(frame, rec, alt, loop, what):
    want, other = P.draw_state(rec, loop), P.draw_state(alt, loop)
    d_ok, d_bad = F.masked_distances(frame, want, other)
    assert not np.isnan(d_ok), f"{what}: the variant draws the same picture"
    assert d_ok < 25 and d_bad > 2 * d_ok, f"{what}: frame matches the wrong picture ({d_ok:.1f} vs {d_bad:.1f})"


@pytest.mark.skipif(not CASE_IDS, reason="tasks/sc2 has no built cases")
@pytest.mark.parametrize("case_id", CASE_IDS[:N_CASES])
def test_expand_base_kill_and_fight_frames(tmp_path, case_id):
    gt = _gt(case_id)
    rec, fps = gt["record"], gt["video"]["fps"]
    mp4 = TASKS / "sc2" / "media" / f"{case_id}.mp4"
    entry = next(e for e in json.loads((TASKS / "sc2" / "manifest.json").read_text())["cases"] if e["case_id"] == case_id)
    if not (mp4.is_file() and B.sha256_file(mp4) == entry.get("media_sha256")):
        B.media_only_case("sc2", case_id, TASKS, tmp_path)
        mp4 = tmp_path / "sc2" / "media" / f"{case_id}.mp4"
    evs = P.events(rec)
    plugin = P.PLUGIN
    assert [(e.type, e.actor, e.where) for e in evs] == [(e["type"], e["actor"], e["where"]) for e in gt["events"]]
    checks = []   # (video time, record variant that must NOT be shown, what)
    for e, row in zip(evs, gt["events"]):
        t = row["t"]
        what = f"{case_id} {e.type} {e.actor} {e.where} at {t}"
        moment = M.real_s(e.loop)
        assert moment <= t + 1e-9, what
        before = (math.ceil(moment * fps - 1e-9) - 1) / fps   # the last frame before the event's moment
        if e.type in ("expand", "base_kill"):
            k = e.detail["building"]
            b = M.decode(rec).buildings[k]
            if e.type == "expand":
                checks += [(t, _building_variant(rec, k, remove=True), what + ": footprint at t"),
                           (before, _building_variant(rec, k, init=0), what + ": no footprint a second before")]
            else:
                assert b.end >= 0
                checks += [(t, _building_variant(rec, k, end=-1), what + ": town hall gone at t"),
                           (before, _building_variant(rec, k, remove=True), what + ": town hall standing a second before")]
        elif e.type == "fight":
            ks = e.detail["units"]
            first = M.real_s(e.detail["first"])
            t_before = (int(first * fps) - fps) / fps   # a frame at least 1 s before the first death
            checks += [(t, _units_variant(rec, ks, alive=True), what + ": the dead units' discs gone at t")]
            # and what the picture is drawn from: no disc of the fight's dead at t, every one of them
            # that was born already there a second before the first death
            m, v = P.decoded(rec), P.View(P.decoded(rec).area)
            drawn = P.sprites(m, v, plugin.loop_at_frame(rec, round(t * fps)))
            assert not any(("u", k) in drawn for k in ks), what + ": a dead unit still drawn at t"
            if t_before >= 0:
                loop0 = plugin.loop_at_frame(rec, round(t_before * fps))
                drawn0 = P.sprites(m, v, loop0)
                assert all(("u", k) in drawn0 for k in ks if m.units[k].born <= loop0), what + ": a unit missing before"
            if t_before >= 0:
                checks += [(t_before, _units_variant(rec, ks), what + ": the units there 1 s before the first death")]
    got = F.decode_frames(mp4, [c[0] for c in checks])
    for t, alt, what in checks:
        loop = plugin.loop_at_frame(rec, round(t * fps))
        _shows(got[t], rec, alt, loop, what)
    assert {e.type for e in evs} >= {"win"}


@pytest.mark.skipif(not CASE_IDS, reason="tasks/sc2 has no built cases")
def test_the_cases_hold_every_event_type():
    seen = {e["type"] for cid in CASE_IDS for e in _gt(cid)["events"]}
    assert seen == {"expand", "base_kill", "fight", "win"}, seen
