"""The build part of video_arena/container_host/image.py that needs no daemon: the size report, the build
digest's inputs and the base's slimming."""
from __future__ import annotations

import shutil
import stat
import textwrap

import pytest

from video_arena.container_host import image as I

HISTORY = (
    "0\t/bin/sh -c #(nop)  LABEL org.opencontainers.image.title=video-arena/base\n"
    "45440\t/bin/sh -c set -eux;     for tool in ffmpeg ffprobe; do command -v \"$tool\"; done\n"
    "594000000\t/bin/sh -c #(nop) COPY dir:0fd94a03357529cde8 in /usr/local/lib/python3.11/dist-packages/ \n"
    "460000000\t|1 DEBIAN_FRONTEND=noninteractive /bin/sh -c set -eux;     apt-get update;     apt-get install\n"
    "74000000\t\n"
)


@pytest.fixture
def fake_history(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    docker = bin_dir / "docker"
    docker.write_text("#!/bin/sh\n" + textwrap.dedent("""\
        case "$1" in
          history) printf '%s' "$FAKE_HISTORY" ;;
          image) echo 1128000000 ;;
          *) exit 1 ;;
        esac
        """))
    docker.chmod(docker.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("FAKE_HISTORY", HISTORY)


def test_size_report_gives_the_total_and_the_big_layers_oldest_first(fake_history):
    assert I.layer_sizes("x") == [(74000000, "base image"),
                                  (460000000, "apt-get update; apt-get install"),
                                  (594000000, "COPY in /usr/local/lib/python3.11/dist-packages/")]
    report = I.size_report("x")
    assert report.startswith("size of x: 1128000000 bytes (1.13 GB); layers of 1 MB or more: 74 MB base image; ")
    assert "45440" not in report and "LABEL" not in report


def test_every_file_of_the_context_but_the_wheels_is_in_the_build_digest(tmp_path):
    ctx = I.stage_context(None, [], tmp_path / "ctx")
    assert (ctx / "dpkg.cfg").is_file()
    before = I.build_digest(ctx, "sha256:a")
    (ctx / "wheelhouse" / "x-1.0-py3-none-any.whl").write_bytes(b"w")
    online_changed = I.build_digest(ctx, "sha256:a")
    (ctx / "wheelhouse" / "x-1.0-py3-none-any.whl").write_bytes(b"other bytes")
    assert I.build_digest(ctx, "sha256:a") == online_changed != before  # wheels: only offline vs online
    with open(ctx / "dpkg.cfg", "a") as fh:
        fh.write("path-exclude /usr/share/zoneinfo/*\n")
    assert I.build_digest(ctx, "sha256:a") != online_changed


def test_base_slimming_drops_translations_and_keeps_copyrights(tmp_path):
    root = tmp_path / "root"
    for rel in ("usr/share/locale/de/LC_MESSAGES/coreutils.mo", "usr/share/doc/bash/copyright",
                "usr/share/doc/bash/README", "usr/share/man/man1/ls.1.gz", "usr/share/zoneinfo/UTC"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x")
    for rel in ("usr/sbin", "etc/apt"):
        (root / rel).mkdir(parents=True)
    I._slim_rootfs(root, "http://mirror.example/debian", "http://mirror.example/debian-security")
    left = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    assert "usr/share/doc/bash/copyright" in left and "usr/share/zoneinfo/UTC" in left
    assert not [p for p in left if p.startswith(("usr/share/locale/", "usr/share/man/"))]
    assert "README" not in " ".join(left)
    assert "path-exclude /usr/share/locale/*" in (root / "etc/dpkg/dpkg.cfg.d/docker-slim").read_text()
    shutil.rmtree(root)

