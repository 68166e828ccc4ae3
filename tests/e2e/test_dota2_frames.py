"""DOTA 2 built-in cases: the decoded video shows each event where and when the ground truth says.

For every event the test draws the map twice at the same moment: as it was (the re-render of the record)
and with the event undone or done too early, and checks that the decoded frame matches the first over the
pixels where the two differ:

tower, barracks, ancient   at t the building is a grey outline (undone: it still stands); a second before
                           it stands, white in its last seconds (done too early: already an outline)
roshan                     at t Roshan's disc has the killer's colour (undone: the colour it had before);
                           a second before it has not (done too early: the killer's colour already)

All cases: VA_DOTA2_FRAME_CASES=20 (default 2).
"""
from __future__ import annotations

import dataclasses
import json
import os

import numpy as np
import pytest
from PIL import Image

from video_arena import paths
from video_arena.cases import build as B
from video_arena.games.dota2 import plugin as P
from video_arena.games.dota2 import render as D
from video_arena.media import frames as F

pytestmark = pytest.mark.slow

TASKS = paths.default_tasks_root()
CASES_FILE = TASKS / "dota2" / "cases.json"
CASE_IDS = [c["case_id"] for c in json.loads(CASES_FILE.read_text())["cases"]] if CASES_FILE.is_file() else []
N_CASES = int(os.environ.get("VA_DOTA2_FRAME_CASES", "2"))


def _picture(tl: D.Timeline, frame: int) -> Image.Image:
    return Image.fromarray(D.draw(D.sprites(tl, frame)))


def _shows(frame_rgb: np.ndarray, want: Image.Image, other: Image.Image, what: str) -> None:
    d_ok, d_bad = F.masked_distances(frame_rgb, want, other)
    assert not np.isnan(d_ok), f"{what}: the variant draws the same picture"
    assert d_ok < 25 and d_bad > 2 * d_ok, f"{what}: frame matches the wrong picture ({d_ok:.1f} vs {d_bad:.1f})"


@pytest.mark.skipif(not CASE_IDS, reason="tasks/dota2 has no built cases")
@pytest.mark.parametrize("case_id", CASE_IDS[:N_CASES])
def test_buildings_fall_and_roshan_dies_on_their_frames(tmp_path, case_id):
    gt = json.loads((TASKS / "dota2" / "gt" / f"{case_id}.json").read_text(encoding="utf-8"))
    rec = gt["record"]
    mp4 = TASKS / "dota2" / "media" / f"{case_id}.mp4"
    entry = next(e for e in json.loads((TASKS / "dota2" / "manifest.json").read_text())["cases"] if e["case_id"] == case_id)
    if not (mp4.is_file() and B.sha256_file(mp4) == entry.get("media_sha256")):
        B.media_only_case("dota2", case_id, TASKS, tmp_path)
        mp4 = tmp_path / "dota2" / "media" / f"{case_id}.mp4"
    m, tl = P.decoded(rec), P.timeline(rec)
    fps = gt["video"]["fps"]
    checks = []   # (frame, the timeline the frame must show, a variant it must not, what)
    for e, row in zip(m.events, gt["events"]):
        f = round(row["t"] * fps)
        what = f"{case_id} {e.type} {e.actor} {e.where} at {row['t']}"
        if e.building:
            standing = dataclasses.replace(tl, fall={k: v for k, v in tl.fall.items() if k != e.building})
            early = dataclasses.replace(tl, fall=tl.fall | {e.building: f - fps})
            checks += [(f, tl, standing, what + ": an outline at t"), (f - fps, tl, early, what + ": standing a second before")]
        else:
            kills = [k for k in tl.roshan_kills if k[0] != f]
            undone = dataclasses.replace(tl, roshan_kills=kills)
            early = dataclasses.replace(tl, roshan_kills=kills + [(f - fps, e.actor)])
            checks += [(f, tl, undone, what + ": the killer's colour at t"), (f - fps, tl, early, what + ": not yet a second before")]
    got = F.decode_frames(mp4, sorted({c[0] / fps for c in checks}))
    for frame, want, other, what in checks:
        _shows(got[frame / fps], _picture(want, frame), _picture(other, frame), what)
    # and the picture says what the record says: every building that fell by the end is an outline there
    end = _picture(tl, gt["video"]["n_frames"] - 1)
    assert (np.asarray(end) == np.asarray(P.PLUGIN.frame_image(rec, gt["video"]["n_frames"] - 1))).all()
    sprs = D.sprites(tl, gt["video"]["n_frames"] - 1)
    assert {k for k, s in sprs.items() if isinstance(k, str) and s.shape.startswith("outline-")} == set(tl.fall)
