"""The Protocol A grid: arithmetic, the "last frame with pts <= t" rule on a variable-frame-rate
video, scaling, JPEG settings, and the stills cache."""
from __future__ import annotations

import json
import subprocess
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest
from PIL import Image

from video_arena.media import grid as G


def test_grid_is_1fps_for_short_matches():
    ts, fps = G.grid_times(Fraction(12), G.GridSpec())
    assert fps == 1 and ts == [Fraction(k) for k in range(12)]
    ts, fps = G.grid_times("12.2", G.GridSpec())
    assert len(ts) == 13 and ts[-1] == 12  # every k/fps < d
    ts, _ = G.grid_times(256, G.GridSpec())
    assert len(ts) == 256 and ts[-1] == 255


def test_grid_caps_at_256_uniformly_over_the_whole_match():
    d = Fraction(2760)  # 46 minutes
    ts, fps = G.grid_times(d, G.GridSpec())
    assert len(ts) == 256 and fps == Fraction(256, 2760)
    gaps = {b - a for a, b in zip(ts, ts[1:])}
    assert gaps == {d / 256}
    assert ts[0] == 0 and ts[-1] < d and d - ts[-1] == d / 256
    assert G.recall_ceiling(fps, 3) == pytest.approx(6 * 256 / 2760)  # ~0.557
    assert G.recall_ceiling(1, 3) == 1.0
    ts, fps = G.grid_times(Fraction(257), G.GridSpec())
    assert len(ts) == 256 and fps == Fraction(256, 257)
    ts, _ = G.grid_times(Fraction(2760), G.GridSpec(max_frames=250))
    assert len(ts) == 250


def test_output_size_never_upscales():
    assert G.output_size(548, 548, 768) == (548, 548)
    assert G.output_size(1280, 720, 768) == (768, 432)
    assert G.output_size(1536, 1536, 768) == (768, 768)
    assert G.output_size(720, 1280, 768) == (432, 768)


def test_source_index_is_the_last_frame_at_or_before_t():
    pts = [Fraction(0), Fraction(1, 2), Fraction(1), Fraction(3, 2), Fraction(7, 2)]
    times = [Fraction(0), Fraction(1), Fraction(2), Fraction(3), Fraction(4)]
    assert G.source_indices(pts, times) == [0, 2, 3, 3, 4]
    assert G.seek_point(pts, 2) == Fraction(3, 4) and G.seek_point(pts, 0) == 0


def _vfr_video(path: Path, times_ms: list[int]) -> list[int]:
    """A video whose frame i is a flat gray of level 20 + 9*i, shown from times_ms[i] (VFR)."""
    levels = [20 + 9 * i for i in range(len(times_ms))]
    with av.open(str(path), "w") as c:
        s = c.add_stream("libx264", rate=1000)
        s.width, s.height, s.pix_fmt = 64, 48, "yuv420p"
        s.time_base = Fraction(1, 1000)
        s.options = {"g": "5", "bf": "2"}
        for t, lv in zip(times_ms, levels):
            f = av.VideoFrame.from_ndarray(np.full((48, 64, 3), lv, np.uint8), format="rgb24")
            f.pts, f.time_base = t, Fraction(1, 1000)
            for p in s.encode(f):
                c.mux(p)
        for p in s.encode():
            c.mux(p)
    return levels


@pytest.mark.parametrize("mode", ["seek", "pass"])
def test_stills_are_the_frame_on_screen_at_t_on_a_vfr_video(tmp_path, mode):
    # frames at 0, 0.4, 1.0 (exactly on the grid), 1.05, 2.9, 3.0, 3.001, 6.5 s, ...
    times = [0, 400, 1000, 1050, 2900, 3000, 3001, 6500, 7200, 9999, 10000, 10500]
    levels = _vfr_video(tmp_path / "v.mp4", times)
    info = G.probe(tmp_path / "v.mp4")
    assert [float(p) for p in info.pts] == [t / 1000 for t in times]
    assert info.key_pts and info.key_pts[0] == 0
    fs = G.extract_frames(tmp_path / "v.mp4", G.GridSpec(), tmp_path / "out", info=info, mode=mode)
    assert fs.mode == mode
    # expected: for t = 0..10 the last frame with pts <= t
    expect = [max(i for i, tm in enumerate(times) if tm <= 1000 * k) for k in range(len(fs.plan.video_ts))]
    assert fs.plan.ts_floats() == list(range(11))
    assert fs.plan.source_index == expect
    got = []
    for p in fs.paths():
        img = np.asarray(Image.open(p).convert("L"), dtype=float)
        got.append(int(np.argmin([abs(img.mean() - lv) for lv in levels])))
    assert got == expect
    assert fs.plan.out_w == 64 and fs.plan.out_h == 48  # never upscaled
    # a source frame shown at two grid times (6.5 s at t=7 and... none here) is still one file per still
    assert len(set(fs.frame_sha256)) == len(set(expect))


def test_both_modes_give_byte_identical_stills(tmp_path):
    src = tmp_path / "v.mp4"
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i",
                    "testsrc2=size=320x240:rate=3/2", "-t", "9", "-c:v", "libx264", "-preset", "ultrafast",
                    "-g", "7", "-bf", "2", "-pix_fmt", "yuv420p", str(src)], check=True)
    info = G.probe(src)
    # 2 FPS grid on a 1.5 fps source: several stills share a source frame
    spec = G.GridSpec(fps=2.0)
    a = G.extract_frames(src, spec, tmp_path / "a", info=info, mode="seek")
    b = G.extract_frames(src, spec, tmp_path / "b", info=info, mode="pass")
    n = a.plan.n
    assert n >= 18 and len(set(a.plan.source_index)) < n
    assert a.frame_sha256 == b.frame_sha256
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == [f"{k:06d}.jpg" for k in range(n)]


def test_mode_choice_follows_the_decode_cost():
    d = 2760  # 46 minutes at 30 fps: 256 stills 10.8 s apart
    pts = [Fraction(k, 30) for k in range(30 * d)]
    plan = G.plan_grid(G.MediaInfo(duration=Fraction(d), width=1280, height=720, pts=pts), G.GridSpec())
    gop_250 = [Fraction(k * 250, 30) for k in range(30 * d // 250 + 1)]  # x264's default keyint
    gop_60s = [Fraction(k * 60) for k in range(d // 60)]                  # the case encoder's
    seek, one_pass = G.decode_costs(plan, pts, gop_250)
    assert one_pass == max(plan.source_index) + 1 and seek < 0.6 * one_pass
    assert G.choose_mode(plan, pts, gop_250) == "seek"
    assert G.choose_mode(plan, pts, gop_60s) == "pass"  # a minute-long GOP: one pass decodes less
    # a short match on the 1 FPS grid with 8 s GOPs: one pass
    short = [Fraction(k, 30) for k in range(30 * 600)]
    plan = G.plan_grid(G.MediaInfo(duration=Fraction(600), width=1280, height=720, pts=short), G.GridSpec())
    assert G.choose_mode(plan, short, gop_250) == "pass"


def test_stills_are_scaled_jpegs_at_the_condition_quality(tmp_path):
    src = tmp_path / "big.mp4"
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i",
                    "testsrc2=size=1280x720:rate=10", "-t", "3", "-c:v", "libx264", "-preset", "ultrafast",
                    "-pix_fmt", "yuv420p", str(src)], check=True)
    q4 = G.extract_frames(src, G.GridSpec(), tmp_path / "q4")
    q8 = G.extract_frames(src, G.GridSpec(jpeg_q=8), tmp_path / "q8")
    assert q4.plan.n == 3
    for p in q4.paths():
        im = Image.open(p)
        assert im.format == "JPEG" and im.size == (768, 432)
        assert b"Lavc" not in p.read_bytes()  # bit-exact: no encoder version in the file
    assert sum(q8.frame_bytes) < sum(q4.frame_bytes)
    # stills are reproducible byte for byte
    again = G.extract_frames(src, G.GridSpec(), tmp_path / "again")
    assert again.frame_sha256 == q4.frame_sha256


def test_commands_are_shared_with_the_sandbox_script(tmp_path):
    info = G.MediaInfo(duration=Fraction(70), width=1280, height=720,
                       pts=[Fraction(k, 30) for k in range(70 * 30)])
    plan = G.plan_grid(info, G.GridSpec())
    ex = G.frame_commands("/app/match.mp4", plan, info.pts, "/tmp/va_a/frames", mode="seek")
    assert len(ex.cmds) == 3 and not ex.renames  # 70 stills, 32 per process
    assert sum(c.count("-i") for c in ex.cmds) == 70
    script = G.shell_script(ex, "/tmp/va_a/frames")
    import shlex
    for c in ex.cmds:
        assert shlex.join(c) in script
    assert "/tmp/va_a/frames/000069.jpg" in script and "-q:v 4" in script
    assert "scale=768:432" in script
    ex = G.frame_commands("/app/match.mp4", plan, info.pts, "/tmp/va_a/frames", mode="pass")
    script = G.shell_script(ex, "/tmp/va_a/frames")
    assert shlex.join(ex.cmds[0]) in script and "mv /tmp/va_a/frames/u000069.jpg /tmp/va_a/frames/000069.jpg" in script


def test_the_sandbox_script_runs_and_fails_loudly(tmp_path):
    src = tmp_path / "v.mp4"
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=64x48:rate=5",
                    "-t", "40", "-c:v", "libx264", "-preset", "ultrafast", str(src)], check=True)
    info = G.probe(src)
    plan = G.plan_grid(info, G.GridSpec())
    for mode in ("seek", "pass"):
        out = tmp_path / mode
        subprocess.run(["bash", "-c", G.shell_script(G.frame_commands(str(src), plan, info.pts, str(out), mode=mode),
                                                     str(out))], check=True)
        assert G.hash_frames(out, 40) == G.hash_frames(G.extract_frames(src, G.GridSpec(), tmp_path / "h").frames_dir, 40)
    bad = G.frame_commands(str(tmp_path / "missing.mp4"), plan, info.pts, str(tmp_path / "x"), mode="seek")
    assert subprocess.run(["bash", "-c", G.shell_script(bad, str(tmp_path / "x"))]).returncode != 0


def test_cache_reuses_one_extraction(tmp_path):
    times = list(range(0, 5000, 250))
    _vfr_video(tmp_path / "v.mp4", times)
    cache = G.FrameCache(tmp_path / "cache")
    a = cache.get(tmp_path / "v.mp4", G.GridSpec())
    stamp = {p: p.stat().st_mtime_ns for p in a.paths()}
    b = cache.get(tmp_path / "v.mp4", G.GridSpec())
    assert b.frames_dir == a.frames_dir and b.frame_sha256 == a.frame_sha256
    assert {p: p.stat().st_mtime_ns for p in b.paths()} == stamp
    entry = json.loads((a.frames_dir.parent / "entry.json").read_text())
    assert entry["frame_sha256"] == a.frame_sha256
    c = cache.get(tmp_path / "v.mp4", G.GridSpec(jpeg_q=6))
    assert c.frames_dir != a.frames_dir
    assert a.media_sha256 == G.sha256_file(tmp_path / "v.mp4")


def test_missing_media_is_a_grid_error(tmp_path):
    with pytest.raises(G.GridError):
        G.probe(tmp_path / "nope.mp4")


def test_a_full_256_still_grid_is_the_same_both_ways(tmp_path):
    src = tmp_path / "v.mp4"
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=96x64:rate=2",
                    "-t", "400", "-c:v", "libx264", "-preset", "ultrafast", "-g", "9", str(src)], check=True)
    info = G.probe(src)
    a = G.extract_frames(src, G.GridSpec(), tmp_path / "a", info=info, mode="pass")
    b = G.extract_frames(src, G.GridSpec(), tmp_path / "b", info=info, mode="seek")
    assert a.plan.n == 256 and float(a.plan.fps_eff) == pytest.approx(256 / 400)
    assert a.frame_sha256 == b.frame_sha256 and len(set(a.frame_sha256)) == 256
