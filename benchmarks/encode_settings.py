#!/usr/bin/env python3
"""What x264 presets and keyframe spacing cost on the built-in cases' mostly static pictures.

Renders one committed case of a game (from its ground truth; no engine) and prints the CPU split of
the shipped pipeline (drawing the positions, converting each to yuv420p once, x264), then encodes the
video with each candidate `preset/keyint_frames[/x264-params]` (the shipped settings are
`shipped`) and prints per candidate: CPU ms per frame, CPU time and file size as ratios to the base
(`--base`, default the shipped settings), the mean / worst per-frame mean absolute difference
(0..255, RGB) between every decoded frame and the position it must show, and the worst "move margin":
at every event's frame, over the pixels where the position differs from the one before, the mean
difference to the previous position minus the mean difference to the new one (a setting that blurs
or lags a move shows a small or negative margin).

    nice -n 19 python benchmarks/encode_settings.py chess [--case N] [--base medium/120] shipped veryfast/120 ...

CPU time (getrusage), not wall time, so a busy machine skews the ratios less. The shipped candidate
goes through video_arena.media.encode itself (the benchmark checks it gives encode_mp4's bytes).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
from pathlib import Path

import av
import numpy as np

from video_arena import paths
from video_arena.cases import build as B
from video_arena.media import encode as E
from video_arena.media.frames import masked_distances
from video_arena.media.pacing import positions_at_frames
from video_arena.digests import sha256_file


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def parse(cand: str, fps: int) -> tuple[str, int, str]:
    if cand == "shipped":
        return E.PRESET, E.KEYFRAME_S * fps, E.X264_PARAMS
    preset, keyint, *rest = cand.split("/", 2)
    return preset, int(keyint), rest[0] if rest else ""


def yuv_frames(images) -> list:
    """Each position as a yuv420p frame, converted once; fresh frames for each encoder, as in the pipeline.
    (Keyframes a few bytes different, the same decoded pixels, in a later encoder of the same process
    were most likely x264's macroblock tree reading memory earlier encoders left behind:
    the shipped settings turn it off, docs/CASES.md "Determinism".)"""
    return [av.VideoFrame.from_image(im).reformat(format="yuv420p") for im in images]


def encode(frames, pof, fps: int, out: str, preset: str, keyint: int, extra: str) -> None:
    c = av.open(out, "w", format="mp4", container_options={"fflags": "+bitexact"})
    s = c.add_stream("libx264", rate=fps, options={"crf": str(E.CRF), "preset": preset, "threads": "1",
                                                    "x264-params": E.x264_params(fps, keyint, extra)})
    s.width, s.height, s.pix_fmt = frames[0].width, frames[0].height, "yuv420p"
    s.codec_context.thread_count = 1
    for k, p in enumerate(pof):
        f = frames[p]
        f.pts = k
        for pk in s.encode(f):
            c.mux(pk)
    for pk in s.encode():
        c.mux(pk)
    c.close()


def fidelity(out: str, images, refs, pof) -> tuple[float, float, float]:
    diffs, margins = [], []
    with av.open(out) as c:
        for k, fr in enumerate(c.decode(video=0)):
            arr = fr.to_ndarray(format="rgb24")
            diffs.append(float(np.abs(arr.astype(np.int16) - refs[pof[k]]).mean()))
            if k and pof[k] != pof[k - 1]:
                d_new, d_old = masked_distances(arr, images[pof[k]], images[pof[k - 1]])
                if d_new == d_new:  # nan: the two positions look the same (e.g. a pass)
                    margins.append(d_old - d_new)
    if len(diffs) != len(pof):
        raise SystemExit(f"{out}: {len(diffs)} frames decoded, {len(pof)} encoded")
    return sum(diffs) / len(diffs), max(diffs), min(margins, default=float("nan"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("game")
    ap.add_argument("candidates", nargs="*", default=["medium/120"],
                    help="preset/keyint_frames[/x264-params], or `shipped` (always run)")
    ap.add_argument("--base", default="shipped", help="the candidate the ratios are relative to (default: shipped)")
    ap.add_argument("--case", type=int, default=None, help="index of the case by length (default: the median)")
    ap.add_argument("--tasks-root", default=None)
    a = ap.parse_intermixed_args(argv)
    root = Path(a.tasks_root) if a.tasks_root else paths.default_tasks_root()
    gts = sorted((root / a.game / "gt").glob("*.json"), key=lambda p: json.loads(p.read_text())["video"]["n_frames"])
    if not gts:
        print(f"{a.game}: no ground truth under {root}", file=sys.stderr)
        return 2
    gt = json.loads(gts[len(gts) // 2 if a.case is None else a.case].read_text())
    plugin = B._plugin(a.game)
    sched = B.schedule_of_gt(gt)
    pof = positions_at_frames(sched.event_frames, sched.n_frames)
    t = cpu_s()
    images = [im.convert("RGB") for im in plugin.render(gt["record"])]
    t_draw = cpu_s() - t
    t = cpu_s()
    yuv_frames(images)
    t_conv = cpu_s() - t
    refs = [np.asarray(im, dtype=np.int16) for im in images]
    print(f"{a.game}/{gt['case_id']}: {sched.n_frames} frames at {sched.fps} fps, {len(images)} positions, "
          f"{images[0].width}x{images[0].height}; CPU draw {t_draw:.2f} s, yuv conversion {t_conv:.2f} s")
    cands = list(dict.fromkeys([a.base, "shipped"] + a.candidates))
    base = None
    with tempfile.TemporaryDirectory() as tmp:
        for i, cand in enumerate(cands):
            preset, keyint, extra = parse(cand, sched.fps)
            out = os.path.join(tmp, f"{i}.mp4")
            frames = yuv_frames(images)  # fresh frames for every encoder, as in the pipeline (see yuv_frames)
            t = cpu_s()
            encode(frames, pof, sched.fps, out, preset, keyint, extra)
            dt = cpu_s() - t
            size = os.path.getsize(out)
            mean, worst, margin = fidelity(out, images, refs, pof)
            base = base or (dt, size)
            label = f"{cand} ({preset}/{keyint}/{extra})" if cand == "shipped" else cand
            print(f"{label:58s} {1000 * dt / len(pof):6.2f} ms/frame  x264 {dt:6.2f} s  cpu x{dt / base[0]:5.2f}  "
                  f"size x{size / base[1]:5.2f} ({size / len(pof):6.0f} B/frame)  "
                  f"diff mean {mean:.3f} worst {worst:.3f}  move margin >= {margin:.1f}")
            if cand == "shipped":
                real = os.path.join(tmp, "encode_mp4.mp4")
                E.encode_mp4(iter(images), pof, sched.fps, real)
                if sha256_file(real) != sha256_file(out):
                    raise SystemExit("the shipped candidate does not give encode_mp4's bytes: the benchmark is stale")
    return 0


if __name__ == "__main__":
    sys.exit(main())
