"""A second container runtime for Harbor trials: rootful Podman (Harbor's `-e podman`).

    video-arena image build --runtime podman     # build with Docker (or reuse), then load it into Podman
    video-arena oracle-check --runtime podman        # copy-mode datasets, harbor run -e podman, + a network probe

Harbor's podman environment is its Docker orchestrator with the Podman CLI: `podman` for the engine
and a compose frontend.  Debian bookworm has podman 4.3, which has no `podman compose` (4.7+), so
Harbor falls back to `podman-compose` and passes `--in-pod=false`, which Debian's podman-compose 1.0.3
rejects; the project pins podman-compose 1.5.0 (PyPI) and puts this interpreter's bin folder first
on the PATH of every `harbor` it starts, so Harbor finds that one.

Podman cannot read Docker's images: `load_image` copies the Docker-built sandbox image with
`docker save | podman load` (the image ID, the digest of its config, is the same on both sides and
is checked), and does nothing when Podman already holds that ID under the tag.  Mount-mode tasks are
Docker-only (docs/HARBOR.md); Podman runs copy-mode tasks, the form remote environments need too.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
import resource
from video_arena import paths


class PodmanError(RuntimeError):
    """Podman cannot be used, or the image cannot be loaded (the message says why)."""


def venv_bin() -> Path:
    return Path(sys.executable).parent


def compose_frontend() -> str | None:
    """The podman-compose Harbor will find with harbor_env()'s PATH (this interpreter's first)."""
    return shutil.which("podman-compose", path=os.pathsep.join([str(venv_bin()), os.environ.get("PATH", "")]))


def _probe_ulimits(image: str, nofile: int, nproc: int) -> bool:
    conf = Path(os.environ.get("TMPDIR", "/tmp")) / f"va-podman-probe-{os.getpid()}.conf"
    conf.write_text(f'[containers]\ndefault_ulimits = ["nofile={nofile}:{nofile}", "nproc={nproc}:{nproc}"]\n')
    try:
        p = subprocess.run(["podman", "run", "--rm", "--network", "none", image, "true"], capture_output=True,
                           timeout=120, stdin=subprocess.DEVNULL, env=dict(os.environ, CONTAINERS_CONF=str(conf)))
        return p.returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False
    finally:
        conf.unlink(missing_ok=True)


def containers_conf(image: str = "video-arena/base:latest") -> Path:
    """A containers.conf whose only setting is the containers' open-files and process limits.

    Rootful Podman raises a container's RLIMIT_NOFILE and RLIMIT_NPROC to its own defaults (about a
    million); on a host that itself runs under lower hard limits without CAP_SYS_RESOURCE (a VM or a
    container: nofile 20000 here) every container fails to start (`error setting rlimit type 7:
    operation not permitted`; type 6 for nproc).  Docker's containers inherit dockerd's limits.  The
    open-files limit is this process's hard limit; the process limit is the highest of this process's
    hard limit, 65536, 32768, 16384 and 4096 with which `podman run IMAGE true` starts (measured here:
    32768; higher values fail although the shell's hard limit is 96363).  Probed once per host limits
    and cached in .cache/podman/containers.conf."""

    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    nofile = 1048576 if nofile == resource.RLIM_INFINITY else nofile
    nproc_host = resource.getrlimit(resource.RLIMIT_NPROC)[1]
    nproc_host = 1048576 if nproc_host == resource.RLIM_INFINITY else nproc_host
    key = f"# host hard limits nofile={nofile} nproc={nproc_host}"
    path = paths.REPO_ROOT / ".cache" / "podman" / "containers.conf"
    if path.is_file() and path.read_text().splitlines()[:1] == [key]:
        return path
    candidates = [nproc_host] + [n for n in (65536, 32768, 16384, 4096) if n < nproc_host]
    nproc = next((n for n in candidates if _probe_ulimits(image, nofile, n)), candidates[-1])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{key}\n# written by video_arena.container_host.podman (containers_conf): the trials' limits\n"
                    f'[containers]\ndefault_ulimits = ["nofile={nofile}:{nofile}", "nproc={nproc}:{nproc}"]\n')
    return path


def harbor_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """`env` (default os.environ) with this interpreter's bin folder first on PATH, and (unless the
    caller set one) CONTAINERS_CONF pointing at containers_conf()."""
    out = dict(os.environ if env is None else env)
    out["PATH"] = os.pathsep.join([str(venv_bin()), out.get("PATH", "")])
    out.setdefault("CONTAINERS_CONF", str(containers_conf()))
    return out


def _run(cmd: list[str], timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def podman_status() -> tuple[bool, str]:
    """(usable, why): podman on PATH, rootful (as root), answering, and a compose frontend Harbor accepts."""
    if shutil.which("podman") is None:
        return False, "podman not found on PATH (apt-get install podman; scripts/setup.sh installs it)"
    if os.geteuid() != 0:
        return False, "not root: the project runs rootful Podman (the trials' network_mode none and CPU limits)"
    try:
        info = _run(["podman", "info", "--format", "{{.Version.Version}} {{.Host.Security.Rootless}}"], 30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"podman info did not answer: {exc}"
    if info.returncode != 0:
        return False, f"podman info failed: {(info.stderr or info.stdout).strip().splitlines()[-1:]}"
    version = info.stdout.split()[0] if info.stdout.split() else "?"
    front = compose_frontend()
    if front is None:
        return False, "podman-compose not found (pip install podman-compose==1.5.0; a project dependency)"
    try:
        pc = _run([front, "--version"], 30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"{front} --version failed: {exc}"
    first = (pc.stdout or "").strip().splitlines()[:1]
    if pc.returncode != 0 or not first:
        return False, f"{front} --version failed"
    pc_version = first[0].split()[-1]
    if tuple(int(x) for x in pc_version.split(".")[:2] if x.isdigit()) < (1, 1):
        return False, (f"{front} is podman-compose {pc_version}, which rejects Harbor's --in-pod=false; "
                       "use podman-compose 1.5.0 (the project's pin)")
    return True, f"podman {version} (rootful), podman-compose {pc_version} ({front})"


def image_id(engine: str, tag: str) -> str | None:
    try:
        p = _run([engine, "image", "inspect", "--format", "{{.Id}}", tag], 60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if p.returncode != 0 or not p.stdout.strip():
        return None
    return p.stdout.strip().splitlines()[0].removeprefix("sha256:")


def load_image(tag: str, echo=print) -> str:
    """Make Podman hold Docker's `tag` (the same image ID); returns a one-line summary."""
    docker_id = image_id("docker", tag)
    if docker_id is None:
        raise PodmanError(f"Docker holds no image {tag}: build it first (video-arena image build)")
    have = image_id("podman", tag)
    if have == docker_id:
        return f"podman: {tag} is already loaded (image {docker_id[:12]})"
    echo(f"podman: loading {tag} from Docker (docker save | podman load) ...")
    save = subprocess.Popen(["docker", "save", tag], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    load = subprocess.run(["podman", "load"], stdin=save.stdout, capture_output=True, text=True)
    save.stdout.close()  # type: ignore[union-attr]
    save_err = save.stderr.read().decode(errors="replace") if save.stderr else ""
    if save.wait() != 0:
        raise PodmanError(f"docker save {tag} failed: {save_err.strip()[-300:]}")
    if load.returncode != 0:
        raise PodmanError(f"podman load failed: {(load.stderr or load.stdout).strip()[-300:]}")
    loaded = image_id("podman", tag)
    if loaded != docker_id:
        raise PodmanError(f"after podman load, Podman's {tag} is {loaded and loaded[:12]}, Docker's {docker_id[:12]}")
    return f"podman: loaded {tag} (image {docker_id[:12]}, the same ID as Docker's)"
