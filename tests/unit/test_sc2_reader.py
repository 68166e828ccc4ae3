"""The StarCraft II pixel reader on a small synthetic video drawn in the render's colours and sizes: a town hall
that appears is an `expand` of the side whose colour fills it, one that vanishes under a yellow cross a
`base_kill` by the other side, the `win` comes 4 s before the video ends, and each visible state counts the
town halls standing (the real cases: tests/e2e/test_baselines_e2e.py)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

from video_arena.games import pixel_reader as PX
from video_arena.games.readers import load_reader
from video_arena.games.sc2 import plugin as SP

SIZE = 256


def _hall(d: ImageDraw.ImageDraw, x: int, y: int, side: int, new: bool) -> None:
    fill = (SP.BUILDING_NEW_RGB if new else SP.BUILDING_RGB)[side]
    d.rectangle([x - 25, y - 25, x + 24, y + 24], fill=fill, outline=SP.EDGE, width=2)
    d.ellipse([x - 14, y - 14, x + 14, y + 14], outline=SP.RING_RGB, width=4)


def _frame(k: int) -> np.ndarray:
    img = Image.new("RGB", (SIZE, SIZE), SP.GROUND)
    d = ImageDraw.Draw(img)
    _hall(d, 40, 200, 0, False)             # red's main: b1... a2 (x 40, y 200 from the top)
    _hall(d, 210, 40, 1, False)             # blue's main
    d.ellipse([100, 100, 120, 120], fill=SP.SIDE_RGB[0])      # a red army disc
    if 2 <= k < 5:
        _hall(d, 200, 200, 1, True)         # blue starts a town hall at g2 (under construction: pale)
    if 5 <= k < 8:                          # ... and it dies: a yellow cross where it stood
        for i in range(-24, 25):
            for w in (-1, 0, 1):
                for x, y in ((200 + i + w, 200 + i), (200 - i + w, 200 + i)):
                    img.putpixel((x, y), SP.MARK_RGB)
    return np.asarray(img)


@pytest.fixture(scope="module")
def video(tmp_path_factory) -> Path:
    if not shutil.which("ffmpeg"):
        pytest.skip("no ffmpeg")
    out = tmp_path_factory.mktemp("sc2") / "match.mp4"
    raw = b"".join(_frame(k).tobytes() for k in range(12))
    subprocess.run(["ffmpeg", "-v", "error", "-f", "rawvideo", "-pix_fmt", "rgb24", "-s", f"{SIZE}x{SIZE}", "-r", "1",
                    "-i", "-", "-c:v", "libx264", "-pix_fmt", "yuv420p", "-crf", "23", str(out)], input=raw, check=True)
    return out


def test_the_reader_finds_the_expansion_the_destroyed_town_hall_and_the_end(video: Path, tmp_path: Path):
    writer = PX.Writer(tmp_path / "answer.json")
    states = load_reader("sc2").read(video, writer, lambda msg: None)
    assert [(r["t"], r["type"], r["actor"], r["where"]) for r in writer.rows] == [
        (2.0, "expand", "blue", "g2"), (5.0, "base_kill", "red", "g2"), (7.0, "win", "red", "")]
    assert [(s["bases_red"], s["bases_blue"], s["winner"]) for s in states] == [(1, 2, ""), (1, 1, ""), (1, 1, "red")]
    assert all(s["army_red"] > 0 and s["army_blue"] == 0 for s in states)


def test_a_dead_units_supply_follows_the_renders_disc_radius():
    R = load_reader("sc2")
    for supply in (2.0, 4.0, 8.0):
        r = 5 + 1.5 * supply ** 0.5
        assert R.supply_of(np.pi * r * r) == pytest.approx(supply, rel=0.05)
    assert R.supply_of(np.pi * 16) == 1.0      # a worker's disc


def test_the_visible_v_t_is_side_symmetric_and_takes_only_the_visible_state():
    from video_arena.games.sc2 import model as V

    plugin = SP.PLUGIN
    f = {"t": 600.0, "bases_red": 3, "bases_blue": 2, "army_red": 40.0, "army_blue": 25.0, "winner": ""}
    swapped = {**f, "bases_red": 2, "bases_blue": 3, "army_red": 25.0, "army_blue": 40.0}
    start, v, w = plugin.visible_values([f, swapped], {})
    assert start == 0.5
    assert 0.5 < v < 1 and w == pytest.approx(1 - v, abs=1e-12)
    assert plugin.visible_values([{**f, "winner": "blue"}], {})[1] == 0.0
    assert set(f) == {"t", *V.VISIBLE, "winner"}
    assert "no built-in case" in V.load_visible_model()["fitted_on"]
