"""`video-arena image ACTION`: build, base and wheelhouse run in image.py, push in registry.py.

The dispatch lives here, above both, so that image.py (building) and registry.py (references, push)
do not import each other.
"""
from __future__ import annotations

import sys

from video_arena.harbor import image, registry


def main(argv: list[str] | None = None) -> int:
    parser = image._parser()
    args = parser.parse_args(argv)
    if args.action is None:
        parser.print_help()
        return 2
    if args.action == "push":
        return registry.push_main(args)
    return image.run_action(args)


if __name__ == "__main__":
    sys.exit(main())
