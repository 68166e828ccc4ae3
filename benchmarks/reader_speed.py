#!/usr/bin/env python3
"""How fast each game's pixel reader reads a video, on one core: its CPU time over the video's duration.

For every game with a reader (video_arena/games/<game>/reader.py; --games to choose), one case (the
median duration of the game's cases, or --case GAME=ID) is read by the reader the perception agent runs,
in this process pinned to one core (ffmpeg's decoding inherits the pin). CPU time is this process's and
its children's (ffmpeg), user + system. The goal (issue 39) is at most a tenth of the video's duration.

    python benchmarks/reader_speed.py [--games chess,go] [--case chess=So1adqQp] [--core 0] [--media-root DIR]
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from video_arena import paths  # noqa: E402
from video_arena.core import tasks as T  # noqa: E402
from video_arena.core.tasks import TasksTree  # noqa: E402
from video_arena.games import pixel_reader as PX  # noqa: E402
from video_arena.games import readers as RD  # noqa: E402

GOAL = 0.1   # reader CPU / video duration


def cpu_now() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def median_case(tasks_root: Path, game: str) -> tuple[str, float]:
    cases = sorted(T.load_cases(game, tasks_root), key=lambda c: (float(c["duration_s"]), c["case_id"]))
    c = cases[len(cases) // 2]
    return c["case_id"], float(c["duration_s"])


def measure(video: Path, game: str) -> tuple[float, float, int]:
    """(CPU s, wall s, events) of the game's reader on the video."""
    reader = RD.load_reader(game)
    with tempfile.TemporaryDirectory() as tmp:
        writer = PX.Writer(Path(tmp) / "answer.json")
        c0, w0 = cpu_now(), time.perf_counter()
        states = reader.read(video, writer, lambda msg: None)
        writer.flush()
        return cpu_now() - c0, time.perf_counter() - w0, len(states)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", help="comma-separated games (default: every game with a reader)")
    ap.add_argument("--case", action="append", default=[], help="GAME=CASE_ID instead of the median case")
    ap.add_argument("--core", type=int, default=0, help="the core to pin to (default 0)")
    ap.add_argument("--tasks-root")
    ap.add_argument("--media-root")
    args = ap.parse_args(argv)
    tasks_root = paths.tasks_root(args.tasks_root)
    media_root = paths.media_root(tasks_root, args.media_root)
    games = args.games.split(",") if args.games else [g for g in RD.reader_games() if (tasks_root / g).is_dir()]
    chosen = dict(c.split("=", 1) for c in args.case)
    os.sched_setaffinity(0, {args.core})
    print(f"reader speed on core {args.core} of {os.cpu_count()}, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("| game | case | video s | events | reader CPU s | wall s | CPU / video | goal | ratio to goal |")
    print("|---|---|---|---|---|---|---|---|---|")
    worst = 0.0
    for g in games:
        if g in chosen:
            cid = chosen[g]
            duration = next(float(c["duration_s"]) for c in T.load_cases(g, tasks_root) if c["case_id"] == cid)
        else:
            cid, duration = median_case(tasks_root, g)
        video = TasksTree(tasks_root, media_root).media(g, cid)
        if not video.is_file():
            print(f"| {g} | {cid} | {duration:g} | - | video missing under {media_root} | | | | |")
            continue
        cpu, wall, n = measure(video, g)
        share = cpu / duration
        worst = max(worst, share / GOAL)
        print(f"| {g} | {cid} | {duration:g} | {n} | {cpu:.1f} | {wall:.1f} | {share:.4f} (1/{1 / share:.0f}) | "
              f"{GOAL:g} | {share / GOAL:.2f} |")
    print(f"worst ratio to goal: {worst:.2f} ({'within' if worst <= 1 else 'over'} the goal)")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
