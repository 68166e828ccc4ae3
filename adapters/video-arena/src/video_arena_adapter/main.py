"""Harbor's adapter entry point for Video-Arena: Harbor's standard flags, everything else passed to
`video-arena make-harbor` (--protocol, --net, --media, --games, --tasks-root, --base-image, ...).

    PYTHONPATH=adapters/video-arena/src python -m video_arena_adapter.main --output-dir harbor/video-arena

Run it in the project's environment (it imports the `video_arena` package).  The output is
byte-for-byte what `video-arena make-harbor --out DIR` writes with the same options."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from video_arena import paths
from video_arena_adapter.adapter import VideoArenaAdapter

#: the dataset folder the docs and the committed job configs (configs/harbor/) name
DEFAULT_OUTPUT_DIR = paths.REPO_ROOT / "harbor" / "video-arena"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="video_arena_adapter.main", description=__doc__.split("\n\n")[0],
                                 epilog="Any other option is make-harbor's (video-arena make-harbor --help).")
    ap.add_argument("--output-dir", type=Path, default=DEFAULT_OUTPUT_DIR, help="the dataset folder to write")
    ap.add_argument("--limit", type=int, default=None, help="the first N cases of each game")
    ap.add_argument("--overwrite", action="store_true", help="replace an existing dataset")
    ap.add_argument("--task-ids", nargs="+", default=None,
                    help="not supported: choose games with --games and a prefix of each with --limit")
    a, extra = ap.parse_known_args(argv)
    if a.task_ids:
        ap.error("--task-ids is not supported: choose games with --games and cases with --limit")
    return VideoArenaAdapter(a.output_dir, overwrite=a.overwrite, limit=a.limit, extra=extra).run()


if __name__ == "__main__":
    sys.exit(main())
