"""The container runtimes Harbor's trials run on, as one table (docs/HARBOR.md, "Running at scale").

Each row says what the rest of the toolkit needs to know of a runtime: which task form it runs, how
`harbor run` is pointed at it (its arguments and environment), what must happen before a job (the
image built with Docker, then, for Podman, loaded into it), whether its jobs may run side by side, and
whether oracle-check adds a network probe trial from inside its sandbox.  A new runtime is a new row.

    docker  mount-mode datasets (the host's video bind-mounted), Harbor's default environment; jobs
            side by side (a trial mostly waits on Docker, so on 2 cores four jobs take about as long
            as one)
    podman  copy-mode datasets (no host path), `harbor run -e podman` with this interpreter's
            podman-compose first on PATH (podman.py); the Docker-built image loaded into Podman; jobs
            one after another (four side by side once failed a copy-mode upload inside Podman's
            copier: "chdir .../merged/app: no such file or directory", the container's root not mounted
            yet); a network probe trial (netprobe.py)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from video_arena.container_host import podman


class RuntimeUnusable(RuntimeError):
    """The runtime cannot run trials here (the message says why)."""


def _no_preparation(image: str) -> list[str]:
    return []


def _load_into_podman(image: str) -> list[str]:
    ok, why = podman.podman_status()
    if not ok:
        raise RuntimeUnusable(f"Podman is not usable: {why}")
    try:
        loaded = podman.load_image(image)
    except podman.PodmanError as exc:
        raise RuntimeUnusable(str(exc)) from exc
    return [f"podman: {why}", loaded]


@dataclass(frozen=True)
class Runtime:
    name: str
    #: the dataset form it runs: "mount" (the provider sees host paths) or "copy"
    media_mode: str
    #: its jobs (agent x protocol) may run at the same time
    side_by_side: bool
    #: oracle-check runs one probe trial from inside its sandbox (no interface but lo, no route)
    network_probe: bool
    #: what `harbor run` is given to use it (none: Harbor's default, Docker)
    harbor_args: tuple[str, ...]
    #: the environment of every `harbor run` on it, from the caller's
    harbor_env: Callable[[dict[str, str]], dict[str, str]]
    #: after Docker and the sandbox image are there: what else it needs; returns what was done, one
    #: line each; raises RuntimeUnusable
    prepare: Callable[[str], list[str]]


RUNTIMES: dict[str, Runtime] = {
    "docker": Runtime("docker", media_mode="mount", side_by_side=True, network_probe=False, harbor_args=(),
                      harbor_env=dict, prepare=_no_preparation),
    "podman": Runtime("podman", media_mode="copy", side_by_side=False, network_probe=True,
                      harbor_args=("-e", "podman"), harbor_env=podman.harbor_env, prepare=_load_into_podman),
}
