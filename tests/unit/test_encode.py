"""The encoder (video_arena.media.encode): `IncrementalYuv420p` gives exactly the reference conversion
`yuv420p` of every frame, on random canvases and on a real gfootball match; positions may be yuv420p
frames; a video encodes to the same bytes whatever the process encoded before (slow: about 15 s)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import av
import numpy as np
import pytest

from video_arena.media import encode as E

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import encode_determinism  # noqa: E402


def _random_boxes(rng, width, height, n):
    out = []
    for _ in range(n):
        w, h = int(rng.integers(1, 30)), int(rng.integers(1, 30))
        x, y = int(rng.integers(-10, width)), int(rng.integers(-10, height))
        out.append((x, y, x + w, y + h))
    return out


def _mismatched_frames(conv: E.IncrementalYuv420p, frames: int, seed: int) -> int:
    """Frames of a random canvas, changed in random boxes (some off the picture, some at its edge), where
    `conv` differs from the reference conversion."""
    rng = np.random.default_rng(seed)
    width, height = 320, 240
    pixels = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
    bad = 0
    for k in range(frames):
        boxes = [] if k == 0 else _random_boxes(rng, width, height, int(rng.integers(1, 6)))
        for x0, y0, x1, y1 in boxes:
            x0, y0, x1, y1 = max(x0, 0), max(y0, 0), min(x1, width), min(y1, height)
            if x1 > x0 and y1 > y0:
                pixels[y0:y1, x0:x1] = rng.integers(0, 256, (y1 - y0, x1 - x0, 3), dtype=np.uint8)
        got = conv.frame(pixels, boxes).to_ndarray()
        want = E.yuv420p(pixels).to_ndarray()
        if not np.array_equal(got, want):
            bad += 1
            conv._buf = want.copy()   # go on from the right frame
    return bad


def test_incremental_conversion_is_the_reference_conversion_on_random_canvases():
    assert _mismatched_frames(E.IncrementalYuv420p(), 300, seed=0) == 0


def test_the_random_check_catches_a_converter_that_ignores_the_chroma_reach(monkeypatch):
    """A changed pixel moves the chroma of its neighbours outside the box: without REACH the check fails."""
    monkeypatch.setattr(E.IncrementalYuv420p, "REACH", 0)
    assert _mismatched_frames(E.IncrementalYuv420p(), 60, seed=1) > 10


def test_reference_conversion_is_the_same_from_a_pil_image_and_from_an_array():
    from PIL import Image

    pixels = np.random.default_rng(2).integers(0, 256, (48, 64, 3), dtype=np.uint8)
    assert np.array_equal(E.yuv420p(pixels).to_ndarray(), E.yuv420p(Image.fromarray(pixels)).to_ndarray())


def test_encode_takes_yuv420p_frames_and_gives_the_bytes_of_the_pictures(tmp_path):
    from PIL import Image

    rng = np.random.default_rng(3)
    pics = [rng.integers(0, 256, (48, 64, 3), dtype=np.uint8) for _ in range(3)]
    E.encode_mp4([Image.fromarray(p) for p in pics], [0, 0, 1, 2, 2], 5, tmp_path / "pil.mp4")
    E.encode_mp4([E.yuv420p(p) for p in pics], [0, 0, 1, 2, 2], 5, tmp_path / "yuv.mp4")
    assert (tmp_path / "pil.mp4").read_bytes() == (tmp_path / "yuv.mp4").read_bytes()
    rgb = av.VideoFrame.from_ndarray(pics[0], format="rgb24")
    with pytest.raises(ValueError, match="yuv420p frames only"):
        E.encode_mp4([rgb], [0], 5, tmp_path / "bad.mp4")
    assert not (tmp_path / "bad.mp4").exists()


@pytest.mark.slow
def test_a_video_encodes_to_the_same_bytes_between_hundreds_of_other_encodes():
    """With x264's macroblock tree on, about 1 in 100 encodes of this video came out different (same
    pixels, other bytes) after noise videos of random sizes, so 600 rounds would show it with
    probability 0.997 (benchmarks/encode_determinism.py measures both settings)."""
    assert "mbtree=0" in E.X264_PARAMS.split(":")
    digests = encode_determinism.interleaved_digests(600)
    assert len(digests) == 1, digests


def test_gfootball_canvas_and_conversion_equal_the_whole_picture_on_a_real_match():
    """MatchCanvas (pitch put back under the old sprites) and IncrementalYuv420p, frame after frame of a
    built case, against draw_state's fresh picture and its whole conversion (event frames jump states)."""
    from video_arena.games.gfootball import plugin as P

    gt_dir = ROOT / "tasks" / "gfootball" / "gt"
    gt = json.loads(sorted(gt_dir.glob("*.json"))[0].read_text(encoding="utf-8"))
    m = P.decoded(gt["record"])
    states = list(range(0, 240, 2)) + [s for s in P.PLUGIN.event_steps(gt["record"])[:3]] + [m.n - 1, m.n - 1]
    canvas, conv = P.MatchCanvas(), E.IncrementalYuv420p()
    for i in states:
        changed = canvas.draw(m, i)
        picture = P.draw_state(m, i)
        assert np.array_equal(canvas.pixels, np.asarray(picture)), f"state {i}"
        assert np.array_equal(conv.frame(canvas.pixels, changed).to_ndarray(), E.yuv420p(picture).to_ndarray()), f"state {i}"
