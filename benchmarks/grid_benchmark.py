"""Benchmark of the Protocol A grid (issue 6, part 9).

Makes a 46-minute 1280x720 30 fps H.264 video (cached), samples it to the 256-frame grid with the
shipped commands (video_arena.media.grid), and prints the time as a ratio to

  * one full decode pass   (`ffmpeg -i V -map 0:v -f null -`; target: ratio <= 0.6)
  * a per-frame ffmpeg loop (one `ffmpeg -ss t_k -i V -frames:v 1 ...` process per still)

It then checks the stills are the reference definition: frame k is the LAST source frame whose pts
<= t_k.  The reference decodes every frame with PyAV (an independent decoder loop, no seeking),
keeps the frame on screen at each t_k, and encodes it with the same scale and JPEG settings; the
shipped stills must be byte-identical.  Exit status 1 when they are not, or when the ratio misses
the target.

Heavy (minutes of CPU).  Run it niced:  nice -n 19 python benchmarks/grid_benchmark.py
"""
from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path

import av

from video_arena import paths
from video_arena.media import grid as G


def make_video(path: Path, minutes: float, gop: int) -> None:
    if path.is_file() and path.stat().st_size > 0:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".part.mp4")
    # testsrc2 changes every frame, so an off-by-one still is a different picture
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi",
                    "-i", "testsrc2=size=1280x720:rate=30", "-t", f"{minutes * 60:g}",
                    "-c:v", "libx264", "-preset", "veryfast", "-g", str(gop), "-bf", "2",
                    "-pix_fmt", "yuv420p", str(tmp)], check=True)
    tmp.rename(path)


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def full_decode(video: Path) -> None:
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", str(video), "-map", "0:v:0",
                    "-f", "null", "-"], check=True)


def per_frame_loop(video: Path, plan: G.GridPlan, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for k, t in enumerate(plan.video_ts):
        subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-ss", f"{float(t):.6f}",
                        "-i", str(video), "-frames:v", "1",
                        "-vf", f"scale={plan.out_w}:{plan.out_h}:flags=bicubic",
                        "-q:v", str(plan.spec.jpeg_q), str(out / f"{k:06d}.jpg")], check=True)


def reference_stills(video: Path, plan: G.GridPlan, out: Path) -> list[str]:
    """Decode every frame with PyAV; the frame on screen at t_k is encoded like the grid's stills."""
    out.mkdir(parents=True, exist_ok=True)
    targets = list(plan.video_ts)
    chosen: list[av.VideoFrame | None] = [None] * len(targets)
    with av.open(str(video)) as c:
        s = c.streams.video[0]
        s.thread_type = "AUTO"
        sar = s.codec_context.sample_aspect_ratio or s.sample_aspect_ratio
        start = Fraction(c.start_time or 0, 1_000_000)
        prev = None
        k = 0
        for f in c.decode(s):
            t = Fraction(f.pts) * s.time_base - start
            while k < len(targets) and t > targets[k]:
                chosen[k] = prev  # the last frame with pts <= t_k
                k += 1
            prev = f
            if k == len(targets):
                break
        while k < len(targets):
            chosen[k] = prev
            k += 1
    shas = []
    for k, f in enumerate(chosen):
        assert f is not None
        raw = f.reformat(format="yuv420p").to_ndarray().tobytes()
        dst = out / f"{k:06d}.jpg"
        # raw video carries no aspect ratio; give it the decoded frame's, so the JPEG header matches
        setsar = f",setsar={sar.numerator}/{sar.denominator}" if sar else ""
        subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "rawvideo", "-pix_fmt", "yuv420p",
                        "-s", f"{f.width}x{f.height}", "-i", "-",
                        "-vf", f"scale={plan.out_w}:{plan.out_h}:flags=bicubic{setsar}", "-frames:v", "1",
                        "-c:v", "mjpeg", "-q:v", str(plan.spec.jpeg_q), "-fflags", "+bitexact",
                        "-flags:v", "+bitexact", "-f", "image2", "-update", "1", str(dst)],
                       input=raw, check=True)
        shas.append(hashlib.sha256(dst.read_bytes()).hexdigest())
    return shas


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=46.0)
    ap.add_argument("--frames", type=int, default=256)
    ap.add_argument("--gop", type=int, default=250, help="keyframe interval of the made video (x264's default)")
    ap.add_argument("--cache", default=str(paths.REPO_ROOT / ".cache" / "bench"))
    ap.add_argument("--skip-loop", action="store_true", help="skip the per-frame loop timing")
    a = ap.parse_args(argv)

    video = Path(a.cache) / f"testsrc2-1280x720-30fps-{a.minutes:g}min-g{a.gop}.mp4"
    print(f"video: {video.name} (making it if missing)", flush=True)
    t_make, _ = timed(lambda: make_video(video, a.minutes, a.gop))
    print(f"  made in {t_make:.1f} s" if t_make > 1 else "  cached", flush=True)

    spec = G.GridSpec(max_frames=a.frames)
    work = Path(tempfile.mkdtemp(prefix="grid-bench-"))
    t_grid, fs = timed(lambda: G.extract_frames(video, spec, work / "grid"))
    n = fs.plan.n
    print(f"grid ({n} stills, mode {fs.mode}: {len(fs.commands)} ffmpeg processes, {G.JOBS} at a time, "
          f"+ 2 ffprobe): {t_grid:.1f} s", flush=True)
    t_full, _ = timed(lambda: full_decode(video))
    print(f"one full decode pass: {t_full:.1f} s", flush=True)
    ok = True
    ratio_full = t_grid / t_full
    print(f"RATIO grid / full decode  = {ratio_full:.3f}  (target <= 0.6: {'ok' if ratio_full <= 0.6 else 'MISSED'})")
    ok &= ratio_full <= 0.6
    if not a.skip_loop:
        t_loop, _ = timed(lambda: per_frame_loop(video, fs.plan, work / "loop"))
        print(f"per-frame ffmpeg loop ({n} processes): {t_loop:.1f} s")
        print(f"RATIO grid / per-frame loop = {t_grid / t_loop:.3f}")
    t_ref, ref = timed(lambda: reference_stills(video, fs.plan, work / "ref"))
    same = sum(a_ == b_ for a_, b_ in zip(fs.frame_sha256, ref))
    print(f"reference (PyAV full decode, last frame with pts <= t_k): {t_ref:.1f} s")
    print(f"IDENTICAL stills: {same}/{n}")
    if same != n:
        bad = [k for k, (x, y) in enumerate(zip(fs.frame_sha256, ref)) if x != y][:10]
        print(f"  differing stills (first 10): {bad}")
        ok = False
    print(f"work dir: {work}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
