#!/usr/bin/env python3
"""Protocol B natively: thin entry point of `video-arena run-b` (video_arena.protocol_b.runner)."""
import sys

from video_arena.protocol_b.runner import main

if __name__ == "__main__":
    sys.exit(main())
