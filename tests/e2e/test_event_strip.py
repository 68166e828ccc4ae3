"""`video-arena games strip`: the decoded frames around an event, as a picture (real video, real decode)."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from video_arena import paths
from video_arena.cases import build as B
from video_arena.media import frames as F

pytestmark = pytest.mark.slow
TASKS = paths.default_tasks_root()
GAME = "gomoku"


def _cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "video_arena.cli", "games", "strip", *args],
                          capture_output=True, text=True, env=env)


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    cid = json.loads((TASKS / GAME / "cases.json").read_text())["cases"][0]["case_id"]
    root = tmp_path_factory.mktemp("tree")
    (root / GAME / "gt").mkdir(parents=True)
    (root / GAME / "gt" / f"{cid}.json").write_bytes((TASKS / GAME / "gt" / f"{cid}.json").read_bytes())
    B.media_only_case(GAME, cid, TASKS, root)
    return root, cid


def test_strip_shows_the_decoded_frames_around_the_event(case, tmp_path):
    root, cid = case
    out = tmp_path / "s.png"
    r = _cli(GAME, "--case", cid, "--type", "move", "--nth", "3", "--tasks-root", str(root), "-o", str(out))
    assert r.returncode == 0, r.stderr
    gt = json.loads((root / GAME / "gt" / f"{cid}.json").read_text())
    e = [x for x in gt["events"] if x["type"] == "move"][2]
    img = np.asarray(Image.open(out).convert("RGB")).astype(int)
    n = len(F.STRIP_OFFSETS_S)
    w = img.shape[1] // n
    assert img.shape[1] == 420 * n
    # the panel at the event is the decoded frame at t (scaled), and differs from the panel 1 s before
    got = F.decode_frames(root / GAME / "media" / f"{cid}.mp4", [e["t"], e["t"] - 1.0])
    mid = n // 2
    h = round(got[e["t"]].shape[0] * w / got[e["t"]].shape[1])
    want = np.asarray(Image.fromarray(got[e["t"]]).resize((w, h), Image.Resampling.BILINEAR)).astype(int)
    panel = img[24:24 + h, mid * w:(mid + 1) * w]
    inner = (slice(4, -4), slice(4, -4))   # inside the red frame drawn round the event's panel
    assert np.abs(panel[inner] - want[inner]).mean() < 1.0
    before = img[24:24 + h, 0:w]
    assert np.abs(before[inner] - panel[inner]).mean() > 0.05


def test_strip_bad_inputs_are_one_line_errors(case, tmp_path):
    root, cid = case
    out = tmp_path / "x.png"
    for args, needle in [((GAME, "--case", "nope", "--event", "0"), "no ground truth"),
                         ((GAME, "--case", cid, "--event", "100000"), "out of range"),
                         ((GAME, "--case", cid, "--type", "teleport"), "0 'teleport' events"),
                         ((GAME, "--case", cid), "exactly one of --event or --type")]:
        r = _cli(*args, "--tasks-root", str(root), "-o", str(out))
        assert r.returncode == 2 and needle in r.stderr and "Traceback" not in r.stderr, (args, r.stderr)
        assert not out.exists()
