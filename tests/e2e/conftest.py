"""Fixtures of the end-to-end tests that need Docker.

`docker`: makes the local Docker host usable (starts dockerd as root, links the compose plugin) or
skips every test that asks for it with one loud, greppable line `DOCKER E2E NOT RUN: <why>`, printed
immediately and again in the summary, and written to .cache/docker-e2e-status (which .ci/run
prints). Set VA_REQUIRE_DOCKER=1 to fail instead of skipping.

`sandbox_image`: the sandbox image `video-arena/base:latest`, built unless an image built from the
same Dockerfile, pins and base exists already.

Under pytest-xdist each worker has its own session: the daemon start, the image build and the Podman
load are made once by whichever worker comes first, the others wait on a file lock and then reuse it.
"""
from __future__ import annotations

import contextlib
import os

import pytest
from filelock import FileLock

from video_arena.container_host.docker_host import NOT_RUN_MARKER, ensure_docker
from video_arena.paths import REPO_ROOT

# .ci/run prints this file's line after pytest when it says the Docker tests did not run.
STATUS_FILE = REPO_ROOT / ".cache" / "docker-e2e-status"

_not_run_key = pytest.StashKey[list]()


@contextlib.contextmanager
def _shared(name: str):
    """One worker at a time does what `name` stands for (the first does it, the rest find it done)."""
    STATUS_FILE.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(STATUS_FILE.parent / f"e2e-{name}.lock")):
        yield


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _loud(config: pytest.Config, line: str) -> None:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line("")
        reporter.write_line(line, red=True, bold=True)


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_not_run_key] = []
    if not _is_worker(config):
        STATUS_FILE.unlink(missing_ok=True)  # never report a previous session's outcome


def _write_status(line: str) -> None:
    try:
        STATUS_FILE.parent.mkdir(parents=True, exist_ok=True)
        STATUS_FILE.write_text(line + "\n")
    except OSError:
        pass


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    lines = list(config.stash.get(_not_run_key, []))
    # Under xdist the workers skip; the controller, which prints this summary, reads what they wrote.
    try:
        written = STATUS_FILE.read_text().strip()
    except OSError:
        written = ""
    if NOT_RUN_MARKER in written and written not in lines:
        lines.append(written)
    for line in lines:
        terminalreporter.write_sep("=", line.split(":", 1)[0] or NOT_RUN_MARKER, red=True, bold=True)
        terminalreporter.write_line(line, red=True, bold=True)


@pytest.fixture(scope="session")
def docker(request: pytest.FixtureRequest) -> str:
    """A usable Docker host (daemon + compose); returns its versions, or skips loudly."""
    with _shared("docker"):
        ok, reason = ensure_docker(start=True)
    if ok:
        _write_status(f"docker e2e: Docker usable: {reason}")
        return reason
    line = f"{NOT_RUN_MARKER}: {reason}"
    _write_status(line)
    _loud(request.config, line)
    request.config.stash[_not_run_key].append(line)
    if os.environ.get("VA_REQUIRE_DOCKER", "") not in ("", "0"):
        pytest.fail(line, pytrace=False)
    pytest.skip(line)


@pytest.fixture(scope="session")
def sandbox_image(docker) -> str:
    """The tag of a current `video-arena/base:latest` image (built here if needed), or of the image
    VA_IMAGE_TAG names (a candidate checked before it is tagged latest; used as it is)."""
    from video_arena.container_host.image import DEFAULT_TAG, ImageBuildError, build_image, image_exists

    candidate = os.environ.get("VA_IMAGE_TAG", "")
    if candidate:
        if not image_exists(candidate):
            pytest.fail(f"VA_IMAGE_TAG={candidate}: no such image", pytrace=False)
        return candidate
    try:
        with _shared("image"):
            result = build_image(tag=DEFAULT_TAG, reuse=True)
    except ImageBuildError as exc:
        pytest.fail(f"the sandbox image does not build: {exc}", pytrace=False)
    return result.tag


PODMAN_NOT_RUN_MARKER = "PODMAN E2E NOT RUN"


@pytest.fixture(scope="session")
def podman_image(request: pytest.FixtureRequest, sandbox_image) -> str:
    """The sandbox image loaded into rootful Podman (docker save | podman load), or a loud skip:
    `PODMAN E2E NOT RUN: <why>` immediately and in the summary. VA_REQUIRE_PODMAN=1 fails instead."""
    from video_arena.container_host.podman import PodmanError, load_image, podman_status

    ok, reason = podman_status()
    if ok:
        try:
            with _shared("podman"):
                load_image(sandbox_image, echo=lambda *_: None)
            return sandbox_image
        except PodmanError as exc:
            ok, reason = False, str(exc)
    line = f"{PODMAN_NOT_RUN_MARKER}: {reason}"
    _loud(request.config, line)
    request.config.stash[_not_run_key].append(line)
    if os.environ.get("VA_REQUIRE_PODMAN", "") not in ("", "0"):
        pytest.fail(line, pytrace=False)
    pytest.skip(line)
