#!/usr/bin/env python3
"""Validate a generated Harbor dataset offline: see `video-arena validate --help` (video_arena.harbor.validate)."""
import sys

from video_arena.harbor.validate import main

if __name__ == "__main__":
    sys.exit(main())
