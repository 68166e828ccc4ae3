#!/usr/bin/env python3
"""Generate a Video-Arena Harbor dataset: see `video-arena make-harbor --help` (video_arena.harbor.generate)."""
import sys

from video_arena.harbor.generate import main

if __name__ == "__main__":
    sys.exit(main())
