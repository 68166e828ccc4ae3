"""`video-arena image ACTION`: build, base and wheelhouse run in image.py, push in registry.py.

The dispatch lives here, above both, so that image.py (building) and registry.py (references, push)
do not import each other.
"""
from __future__ import annotations

import sys

from video_arena.container_host import image, registry
from video_arena.container_host.runtimes import RUNTIMES, RuntimeUnusable


def main(argv: list[str] | None = None) -> int:
    parser = image._parser()
    args = parser.parse_args(argv)
    if args.action is None:
        parser.print_help()
        return 2
    if args.action == "push":
        return registry.push_main(args)
    rc = image.run_action(args)
    if rc == 0 and args.action == "build":
        return prepare_runtime(args.runtime, args.tag)
    return rc


def prepare_runtime(runtime: str, tag: str) -> int:
    """`image build --runtime R`: what the runtime needs beyond Docker's image (runtimes.py: Podman loads
    it, docker save | podman load)."""
    try:
        for line in RUNTIMES[runtime].prepare(tag):
            print(line)
    except RuntimeUnusable as exc:
        print(f"video-arena image: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
