"""Protocol A runner (thin entry point): see `video-arena run-a --help` and docs/PROTOCOLS.md."""
import sys

from video_arena.protocol_a.runner import main

if __name__ == "__main__":
    sys.exit(main())
