"""Ctrl-C and SIGTERM while an import is at work, on a real `video-arena import-cases` process: the signal
comes once the staged video is being written (ffmpeg converting a video for --video and --from-tree, the
plugin rendering one for --opendota); the command prints one line, exits 130 or 143, and leaves no
`.import-*` staging folder, no partial video and no child process.  Ctrl-C goes to the whole process group
(as a terminal sends it), SIGTERM to the command alone (as `kill` or a supervisor sends it)."""
from __future__ import annotations

import gzip
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("no_tasks_env")]

REPO = Path(__file__).resolve().parents[2]
OPENDOTA = REPO / "tests" / "fixtures" / "opendota"
PROV = ["--source", "fixture", "--licence", "CC0-1.0", "--value-model", "made up"]
LOG = "t,type,actor,where,v_before,v_after\n1.0,move,black,h8,0.5,0.52\n"


@pytest.fixture(scope="module")
def long_video(tmp_path_factory) -> Path:
    """Half a minute of 504x504 video at 25 fps: made in seconds (ultrafast), converted for longer (preset medium)."""
    out = tmp_path_factory.mktemp("video") / "match.mp4"
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=504x504:rate=25",
                    "-t", "30", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", str(out)], check=True)
    return out


def interrupted(tree: Path, argv: list[str], signum: int, group: bool) -> str:
    """Run import-cases, send `signum` once a staged video is being written, return its stderr."""
    env = {k: v for k, v in os.environ.items() if k not in ("VA_MEDIA_ROOT", "VA_TASKS_ROOT")}
    env["PYTHONPATH"] = str(REPO)
    p = subprocess.Popen([sys.executable, "-m", "video_arena.cli", "import-cases", "--tasks-root", str(tree), *argv],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while not any(f.stat().st_size > 0 for f in tree.glob(".import-*/**/*.mp4") if f.is_file()):
            assert p.poll() is None, f"the import ended before its video was staged: {p.stderr.read()}"
            assert time.monotonic() < deadline, "no staged video after 180 s"
            time.sleep(0.05)
        if group:
            os.killpg(p.pid, signum)
        else:
            p.send_signal(signum)
        _, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    assert p.returncode == 128 + signum, (p.returncode, err)
    with pytest.raises(ProcessLookupError):    # ffmpeg or any other child went with it
        os.killpg(p.pid, 0)
    assert not list(tree.glob(".import-*")) and not list(tree.rglob("*.mp4")), sorted(tree.rglob("*"))
    return err


def test_ctrl_c_while_ffmpeg_converts_a_video(tmp_path, long_video):
    (tmp_path / "events.csv").write_text(LOG)
    err = interrupted(tmp_path / "tree", ["--game", "gomoku", "--video", str(long_video), "--events",
                                          str(tmp_path / "events.csv"), *PROV], signal.SIGINT, group=True)
    assert err == "import-cases: interrupted; nothing was written\n", err


def test_sigterm_while_ffmpeg_converts_a_tree_video(tmp_path, long_video):
    src = tmp_path / "src" / "gomoku"
    (src / "gt").mkdir(parents=True)
    (src / "media").mkdir()
    (src / "gt" / "Ab3dE5gH.json").write_text('[{"t": 1.0, "type": "move", "actor": "black", "where": "h8", '
                                              '"v_before": 0.5, "v_after": 0.52}]')
    (src / "media" / "Ab3dE5gH.mp4").write_bytes(long_video.read_bytes())
    err = interrupted(tmp_path / "tree", ["--from-tree", str(tmp_path / "src"), *PROV], signal.SIGTERM, group=False)
    assert err == "import-cases: terminated; nothing was written\n", err


@pytest.mark.parametrize("signum,group,verb", [(signal.SIGTERM, False, "terminated"), (signal.SIGINT, True, "interrupted")])
def test_a_signal_while_an_opendota_match_renders(tmp_path, signum, group, verb):
    """SIGTERM here once left the staging folder with a partial video: the match-file route installed no handler."""
    files = []
    for part in ("parsed", "api"):
        f = tmp_path / f"7490235544_{part}.json"
        f.write_bytes(gzip.decompress((OPENDOTA / f"7490235544_{part}.json.gz").read_bytes()))
        files.append(str(f))
    err = interrupted(tmp_path / "tree", ["--game", "dota2", "--opendota", *files, "--licence", "MIT"], signum, group)
    assert err == f"import-cases: {verb}; nothing was written\n", err
