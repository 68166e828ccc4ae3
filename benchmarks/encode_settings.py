#!/usr/bin/env python3
"""What x264 presets and keyframe spacing cost on the built-in cases' mostly static pictures.

Renders one committed case of a game (from its ground truth; no engine), encodes it with the shipped
settings (video_arena.cases.encode) and with each candidate `preset/keyint_frames[/x264-params]`, and
prints per candidate: CPU ms per frame, CPU time and file size as ratios to the shipped settings, and
the mean / worst per-frame mean absolute difference (0..255, RGB) between every decoded frame and
the position it must show (so a setting that blurs or lags a move shows up).

    nice -n 19 python benchmarks/encode_settings.py chess [--case N] medium/120 veryfast/120 ...

CPU time (getrusage), not wall time, so a busy machine skews the ratios less.
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
from video_arena.cases import encode as E
from video_arena.cases.pacing import positions_at_frames


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def encode(frames, pof, fps: int, out: str, preset: str, keyint: int, extra: str) -> None:
    c = av.open(out, "w", format="mp4", container_options={"fflags": "+bitexact"})
    params = f"keyint={keyint}:min-keyint={fps}" + (f":{extra}" if extra else "")
    s = c.add_stream("libx264", rate=fps, options={"crf": str(E.CRF), "preset": preset, "threads": "1",
                                                    "x264-params": params})
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


def fidelity(out: str, refs, pof) -> tuple[float, float]:
    diffs = []
    with av.open(out) as c:
        for k, fr in enumerate(c.decode(video=0)):
            diffs.append(float(np.abs(fr.to_ndarray(format="rgb24").astype(np.int16) - refs[pof[k]]).mean()))
    if len(diffs) != len(pof):
        raise SystemExit(f"{out}: {len(diffs)} frames decoded, {len(pof)} encoded")
    return sum(diffs) / len(diffs), max(diffs)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("game")
    ap.add_argument("candidates", nargs="*", default=["veryfast/120"], help="preset/keyint_frames[/x264-params]")
    ap.add_argument("--case", type=int, default=None, help="index of the case by length (default: the median)")
    ap.add_argument("--tasks-root", default=None)
    a = ap.parse_args(argv)
    root = Path(a.tasks_root) if a.tasks_root else paths.default_tasks_root()
    gts = sorted((root / a.game / "gt").glob("*.json"), key=lambda p: json.loads(p.read_text())["video"]["n_frames"])
    if not gts:
        print(f"{a.game}: no ground truth under {root}", file=sys.stderr)
        return 2
    gt = json.loads(gts[len(gts) // 2 if a.case is None else a.case].read_text())
    sched = B.schedule_of_gt(gt)
    pof = positions_at_frames(sched.event_frames, sched.n_frames)
    images = [im.convert("RGB") for im in B._plugin(a.game).render(gt["record"])]
    frames = [av.VideoFrame.from_image(im).reformat(format="yuv420p") for im in images]
    refs = [np.asarray(im, dtype=np.int16) for im in images]
    print(f"{a.game}/{gt['case_id']}: {sched.n_frames} frames at {sched.fps} fps, {len(images)} positions, "
          f"{images[0].width}x{images[0].height}")
    shipped = f"{E.PRESET}/{E.KEYFRAME_S * sched.fps}"
    base = None
    with tempfile.TemporaryDirectory() as tmp:
        for i, cand in enumerate([shipped] + [c for c in a.candidates if c != shipped]):
            preset, keyint, *rest = cand.split("/", 2)
            out = os.path.join(tmp, f"{i}.mp4")
            t = cpu_s()
            encode(frames, pof, sched.fps, out, preset, int(keyint), rest[0] if rest else "")
            dt = cpu_s() - t
            size = os.path.getsize(out)
            mean, worst = fidelity(out, refs, pof)
            base = base or (dt, size)
            print(f"{cand:32s} {1000 * dt / len(pof):6.2f} ms/frame  cpu x{dt / base[0]:5.2f}  "
                  f"size x{size / base[1]:5.2f} ({size / len(pof):6.0f} B/frame)  "
                  f"diff mean {mean:.3f} worst {worst:.3f}" + ("   (shipped)" if i == 0 else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
