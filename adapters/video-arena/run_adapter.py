#!/usr/bin/env python3
"""Generate the Video-Arena Harbor dataset (Harbor's adapter entry point; the same tasks as `video-arena make-harbor`).

    python adapters/video-arena/run_adapter.py --output-dir harbor/video-arena                # Protocol B
    python adapters/video-arena/run_adapter.py --output-dir harbor/video-arena-a --protocol A
    python adapters/video-arena/run_adapter.py --output-dir harbor/video-arena-docker-b --net docker

Harbor's own flags (--output-dir, --limit, --overwrite) and the toolkit's (--protocol, --net, --media, --games,
--tasks-root); a bad one is one line and exit 2, like every toolkit command.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from adapter import REPO, VideoArenaAdapter  # noqa: E402

DEFAULT_OUTPUT_DIR = REPO / "harbor" / "video-arena"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="run_adapter.py", description=__doc__.splitlines()[0])
    ap.add_argument("--output-dir", type=Path, default=DEFAULT_OUTPUT_DIR, help="where the tasks are written")
    ap.add_argument("--limit", type=int, default=None, help="the first N cases of each game")
    ap.add_argument("--overwrite", action="store_true", help="replace a dataset this adapter wrote there")
    ap.add_argument("--protocol", choices=("A", "B"), default="B")
    ap.add_argument("--net", choices=("strict", "docker", "phase"), default="strict")
    ap.add_argument("--media", choices=("mount", "copy"), default="mount")
    ap.add_argument("--games", default=None, help="comma-separated games (default: every game with cases)")
    ap.add_argument("--tasks-root", type=Path, default=None)
    a = ap.parse_args(argv)
    if a.limit is not None and a.limit < 1:
        ap.error("--limit must be at least 1")
    games = [g for g in a.games.split(",") if g] if a.games else None
    return VideoArenaAdapter(a.output_dir, protocol=a.protocol, net=a.net, media=a.media, overwrite=a.overwrite,
                             limit=a.limit, games=games, tasks_root=a.tasks_root).run()


if __name__ == "__main__":
    raise SystemExit(main())
