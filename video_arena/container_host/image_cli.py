"""`video-arena image ACTION`: build, base and wheelhouse run in image.py, push in registry.py.

The dispatch lives here, above both, so that image.py (building) and registry.py (references, push)
do not import each other.
"""
from __future__ import annotations

import sys

from video_arena.container_host import image, registry


def main(argv: list[str] | None = None) -> int:
    parser = image._parser()
    args = parser.parse_args(argv)
    if args.action is None:
        parser.print_help()
        return 2
    if args.action == "push":
        return registry.push_main(args)
    rc = image.run_action(args)
    if rc == 0 and args.action == "build" and args.runtime == "podman":
        return load_into_podman(args.tag)
    return rc


def load_into_podman(tag: str) -> int:
    """`image build --runtime podman`: the Docker-built image into Podman (video_arena/container_host/podman.py)."""
    from video_arena.container_host.podman import PodmanError, load_image, podman_status

    ok, why = podman_status()
    if not ok:
        print(f"video-arena image: error: Podman is not usable: {why}", file=sys.stderr)
        return 1
    try:
        print(load_image(tag))
    except PodmanError as exc:
        print(f"video-arena image: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
