"""A video from outside is checked as a real container before anything decodes it (media/container.py): a
whitelisted demuxer, never a script (ffconcat), a playlist (m3u8), an image sequence or an external data
reference, a regular file reached through no link; and every ffmpeg run of an import opens it with that
demuxer forced and the file protocol only.  Tiny videos (504x504, a few frames) made here with ffmpeg."""
from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

import pytest

from video_arena.importing import cli as import_cli
from video_arena.media import container as C
from video_arena.media.container import ContainerError, open_container

pytestmark = pytest.mark.usefixtures("no_tasks_env")

PROV = ["--source", "fixture", "--licence", "CC0-1.0", "--value-model", "made up"]
LOG = "t,type,actor,where,v_before,v_after\n1.0,move,black,h8,0.5,0.52\n"


def ffmpeg(out: Path, *codec: str) -> Path:
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=504x504:rate=2",
                    "-t", "3", *codec, str(out)], check=True)
    return out


@pytest.fixture(scope="module")
def videos(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("videos")
    h264 = ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p"]
    out = {"mp4": ffmpeg(d / "real.mp4", *h264), "mkv": ffmpeg(d / "real.mkv", *h264),
           "avi": ffmpeg(d / "real.avi", "-c:v", "mpeg4"), "ts": ffmpeg(d / "real.ts", *h264)}
    (d / "script.mp4").write_text("ffconcat version 1.0\nfile real.mp4\n")
    (d / "playlist.m3u8").write_text("#EXTM3U\n#EXT-X-TARGETDURATION:3\n#EXTINF:3,\nreal.ts\n#EXT-X-ENDLIST\n")
    (d / "playlist.mp4").write_bytes((d / "playlist.m3u8").read_bytes())
    ffmpeg(d / "frame001.png", "-frames:v", "1")
    (d / "frame%03d.png").write_bytes((d / "frame001.png").read_bytes())
    data = bytearray(out["mp4"].read_bytes())
    entry = data.find(b"dref") + 12            # 'dref', version/flags, entry count: the first entry ('url ')
    assert data[entry + 4:entry + 8] == b"url " and data[entry + 11] == 1
    data[entry + 11] = 0                       # not self-contained: its data is in another file
    (d / "dref.mp4").write_bytes(bytes(data))
    (d / "link.mp4").symlink_to(out["mp4"])
    return out | {k: d / n for k, n in (("ffconcat", "script.mp4"), ("m3u8", "playlist.m3u8"),
                                        ("m3u8 named mp4", "playlist.mp4"), ("png", "frame001.png"),
                                        ("image2 pattern", "frame%03d.png"), ("dref", "dref.mp4"),
                                        ("link", "link.mp4"))}


@pytest.mark.parametrize("kind,demuxer", [("mp4", "mov"), ("mkv", "matroska"), ("avi", "avi"), ("ts", "mpegts")])
def test_a_real_container_is_read_with_its_demuxer_forced(videos, kind, demuxer):
    c = open_container(videos[kind])
    assert c.demuxer == demuxer and c.probe["streams"][0]["width"] == 504
    args = c.input_args()
    assert args[-2:] == ["-i", f"file:{videos[kind]}"]
    assert args[args.index("-f") + 1] == demuxer and args[args.index("-protocol_whitelist") + 1] == "file"
    assert args[args.index("-format_whitelist") + 1] == demuxer


@pytest.mark.parametrize("kind,needle", [
    ("ffconcat", "read by ffmpeg's concat demuxer"),
    ("m3u8", "read by ffmpeg's hls demuxer"),
    ("m3u8 named mp4", "read by ffmpeg's hls demuxer"),
    ("png", "read by ffmpeg's png_pipe demuxer"),
    ("image2 pattern", "read by ffmpeg's image2 demuxer"),
    ("dref", "refers to data outside itself (a data reference entry 'url ' without the self-contained flag)"),
    ("link", "a symbolic link"),
])
def test_a_script_playlist_sequence_reference_or_link_is_refused(videos, kind, needle):
    with pytest.raises(ContainerError) as exc:
        open_container(videos[kind])
    assert needle in str(exc.value) and "\n" not in str(exc.value), str(exc.value)


def test_a_fifo_or_a_device_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "v.mp4"
    os.mkfifo(fifo)
    for path, needle in ((fifo, "not a regular file"), (Path("/dev/zero"), "not a regular file")):
        box: dict = {}
        th = threading.Thread(target=lambda p=path: box.setdefault("exc", _refusal(p)), daemon=True)
        th.start()
        th.join(30)
        assert not th.is_alive(), f"blocked on {path}"
        assert needle in box["exc"], box


def _refusal(path: Path) -> str:
    try:
        open_container(path)
    except ContainerError as exc:
        return str(exc)
    return "accepted"


# -- through import-cases -------------------------------------------------------------------------------

@pytest.mark.parametrize("route", ["--video", "--from-tree"])
def test_an_ffconcat_script_named_mp4_is_refused_by_both_routes(videos, tmp_path, capsys, route):
    """It was accepted and re-encoded from the file it names, while the manifest recorded the script's digest."""
    if route == "--video":
        (tmp_path / "events.csv").write_text(LOG)
        argv = ["--game", "gomoku", "--video", str(videos["ffconcat"]), "--events", str(tmp_path / "events.csv")]
    else:
        src = tmp_path / "src" / "gomoku"
        (src / "gt").mkdir(parents=True)
        (src / "media").mkdir()
        (src / "gt" / "Ab3dE5gH.json").write_text('[{"t": 1.0, "type": "move", "actor": "black", "where": "h8", '
                                                  '"v_before": 0.5, "v_after": 0.52}]')
        (src / "media" / "real.mp4").write_bytes(videos["mp4"].read_bytes())
        (src / "media" / "Ab3dE5gH.mp4").write_text("ffconcat version 1.0\nfile real.mp4\n")
        argv = ["--from-tree", str(tmp_path / "src")]
    assert import_cli.main([*argv, "--tasks-root", str(tmp_path / "tree"), *PROV]) == 1
    err = capsys.readouterr().err
    assert "concat demuxer" in err and "nothing was written" in err and "Traceback" not in err, err
    assert err.count("\n") == 1, err
    assert not (tmp_path / "tree").exists() or not list((tmp_path / "tree").rglob("*.mp4"))


def test_a_linked_video_is_refused(videos, tmp_path, capsys):
    (tmp_path / "events.csv").write_text(LOG)
    assert import_cli.main(["--game", "gomoku", "--video", str(videos["link"]), "--events", str(tmp_path / "events.csv"),
                            "--tasks-root", str(tmp_path / "tree"), *PROV]) == 1
    err = capsys.readouterr().err
    assert "a symbolic link" in err and "nothing was written" in err and "Traceback" not in err, err


def test_every_ffmpeg_run_of_an_import_forces_the_demuxer_and_the_file_protocol(videos, tmp_path, capsys, monkeypatch):
    """A real import (probe, re-encode, full decode of the result): no ffmpeg or ffprobe run may sniff a
    format or open anything but a file."""
    runs = []
    real = subprocess.run

    def run(cmd, *a, **kw):
        runs.append(list(cmd))
        return real(cmd, *a, **kw)

    monkeypatch.setattr(C.subprocess, "run", run)
    (tmp_path / "events.csv").write_text(LOG)
    assert import_cli.main(["--game", "gomoku", "--video", str(videos["mkv"]), "--events", str(tmp_path / "events.csv"),
                            "--tasks-root", str(tmp_path / "tree"), *PROV]) == 0, capsys.readouterr().err
    readers = [c for c in runs if "-i" in c]
    assert len(readers) >= 4, runs     # probe the source, convert it, probe the result, decode the result
    for cmd in readers:
        before_input = cmd[:cmd.index("-i")]
        assert cmd[cmd.index("-i") + 1].startswith("file:/"), cmd
        assert before_input[before_input.index("-protocol_whitelist") + 1] == "file", cmd
        assert before_input[before_input.index("-format_whitelist") + 1] in (",".join(C.DEMUXERS), "matroska", "mov"), cmd
    converting = [c for c in readers if c[0] == "ffmpeg"]
    assert converting and all("-f" in c[:c.index("-i")] for c in converting), converting
