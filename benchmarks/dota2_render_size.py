"""The DOTA 2 video's cost by picture size: why the map is drawn at 512x512 (docs/CASES.md, DOTA 2, Render).

    python benchmarks/dota2_render_size.py [--sizes 512,768] [--cases Prukxrdh,0rIGOup5,UaSAz6kt]

Renders the given committed cases with the shipped renderer and encoder at each size (the sprites scaled
with it), in this process, and prints the CPU seconds (user + sys, getrusage), per frame, extrapolated to
the 20 cases' frames, and each size's ratio to the first.  Shared-machine load inflates CPU seconds less
than wall time, but it does: compare the ratios.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from video_arena import paths  # noqa: E402
from video_arena.games.dota2 import plugin as P  # noqa: E402
from video_arena.games.dota2 import render as D  # noqa: E402
from video_arena.media.encode import encode_mp4  # noqa: E402


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def at_size(size: int, shipped: dict) -> None:
    D.SIZE, D.SCALE = size, size / (D.MAP_HI - D.MAP_LO)
    D.HALF = {k: round(v * size / shipped["size"]) for k, v in shipped["half"].items()}
    D.map_layer.cache_clear()
    D.map_array.cache_clear()
    D._patch.cache_clear()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="512,768")
    ap.add_argument("--cases", default="Prukxrdh,0rIGOup5,UaSAz6kt")
    a = ap.parse_args(argv)
    gdir = paths.default_tasks_root() / "dota2"
    total = sum(json.loads(p.read_text())["video"]["n_frames"] for p in (gdir / "gt").glob("*.json"))
    shipped = {"size": D.SIZE, "half": dict(D.HALF)}
    print(f"dota2 render by size (load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}, {os.cpu_count()} cores)")
    first = None
    with tempfile.TemporaryDirectory() as tmp:
        for size in [int(s) for s in a.sizes.split(",")]:
            at_size(size, shipped)
            used, frames = 0.0, 0
            for cid in a.cases.split(","):
                gt = json.loads((gdir / "gt" / f"{cid}.json").read_text(encoding="utf-8"))
                sched = P.PLUGIN.pace(gt["record"], None)
                c0 = cpu()
                images, index = P.PLUGIN.video(gt["record"], sched)
                encode_mp4(images, index, sched.fps, Path(tmp) / f"{size}-{cid}.mp4")
                used += cpu() - c0
                frames += sched.n_frames
            first = first or used
            print(f"  {size}x{size}: {frames} frames, {used:.1f} s CPU, {1000 * used / frames:.2f} ms a frame; "
                  f"the 20 cases' {total} frames extrapolated: {used / frames * total:.0f} s CPU; "
                  f"{used / first:.2f} x the first size")
    return 0


if __name__ == "__main__":
    sys.exit(main())
