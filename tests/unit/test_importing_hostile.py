"""import-cases given hostile inputs (docs/SECURITY.md): it writes only under its --tasks-root (a media
root elsewhere is refused unless named with --media-root, then named in the report), never through a
link out of the tree, never blocks on a FIFO or reads a device unbounded, cleans its staging folders on
SIGTERM, and a valid but absurd time or a damaged manifest is a one-line error, never a traceback.

The video conversion is replaced by a stand-in here (the checks under test come before or after it);
tests/e2e/test_importing_e2e.py converts real videos."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from video_arena.importing import cli as import_cli
from video_arena.importing import media as M

pytestmark = pytest.mark.usefixtures("no_tasks_env")

LOG = """t,type,actor,where,v_before,v_after
2.0,winner,player_a,back,0.5,0.56
5.5,error,player_b,net,0.56,0.6
"""
PROV = ["--source", "fixture", "--licence", "CC0-1.0", "--value-model", "made up"]


def fake_prepare(src, dst, size, fps=None):
    """What media.prepare returns for a 10 s video at 2 fps (the stand-in bytes are never decoded)."""
    Path(dst).write_bytes(b"\0stand-in video")
    return {"method": "re-encode", "fps": fps or 2, "n_frames": 20, "width": size[0], "height": size[1],
            "source": {}, "encoder": {"tool": "stand-in"}}


@pytest.fixture
def stand_in(monkeypatch):
    monkeypatch.setattr(M, "prepare", fake_prepare)


def args(tmp_path: Path, *extra: str, log: str = LOG, tree: Path | None = None) -> list[str]:
    (tmp_path / "events.csv").write_text(log)
    (tmp_path / "match.mp4").write_bytes(b"source video")
    return ["--tasks-root", str(tree or tmp_path / "tree"), "--game", "badminton", "--video",
            str(tmp_path / "match.mp4"), "--events", str(tmp_path / "events.csv"), *PROV, *extra]


def files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): (b"" if p.is_dir() else p.read_bytes())
            for p in sorted(root.rglob("*"))} if root.exists() else {}


def refused(capsys, argv: list[str], *needles: str, rc: int = 1) -> str:
    assert import_cli.main(argv) == rc
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.startswith("import-cases: ") and err.count("\n") == 1, err
    for n in needles:
        assert n in err, (n, err)
    return err


# --------------------------------------------------------------------------------------------------
def test_an_exported_media_root_outside_the_tree_is_refused(tmp_path, capsys, monkeypatch, stand_in):
    """$VA_MEDIA_ROOT exported for Harbor (another tree) while importing into --tasks-root ext: the videos
    would overwrite that tree's under a report saying "imported into ext"."""
    other = tmp_path / "other-tree"
    (other / "badminton" / "media").mkdir(parents=True)
    before = files(other)
    monkeypatch.setenv("VA_MEDIA_ROOT", str(other))
    refused(capsys, args(tmp_path), "VA_MEDIA_ROOT", "--media-root", "nothing was written")
    assert files(other) == before and not (tmp_path / "tree").exists()


def test_an_explicit_media_root_elsewhere_is_named(tmp_path, capsys, stand_in):
    media = tmp_path / "media-root"
    assert import_cli.main(args(tmp_path, "--media-root", str(media))) == 0
    out = capsys.readouterr().out
    assert f"(videos under {media})" in out
    assert len(list((media / "badminton" / "media").glob("*.mp4"))) == 1
    assert not list((tmp_path / "tree").rglob("*.mp4"))


@pytest.mark.parametrize("link", ["gt", "media", "game"])
def test_a_link_out_of_the_tree_is_never_followed(link, tmp_path, capsys, stand_in):
    tree, outside = tmp_path / "tree", tmp_path / "outside"
    outside.mkdir()
    (tree / "badminton").mkdir(parents=True)
    where = {"gt": tree / "badminton" / "gt", "media": tree / "badminton" / "media", "game": tree / "badminton"}[link]
    if link == "game":
        (tree / "badminton").rmdir()
    where.symlink_to(outside)
    refused(capsys, args(tmp_path, tree=tree), "symbolic link", "nothing was written")
    assert list(outside.iterdir()) == []
    assert not list(tree.glob(".import-*"))


def test_a_time_too_large_for_the_frame_count_is_one_line(tmp_path, capsys, stand_in):
    """t = 1e308 at 2 fps: valid JSON and a finite float, but t * fps overflows a frame number."""
    log = LOG + "1e308,winner,player_a,back,0.6,0.66\n"
    refused(capsys, args(tmp_path, log=log), "after the end of the video", "nothing was written")
    assert not (tmp_path / "tree").exists() or not list((tmp_path / "tree").rglob("*.json"))


@pytest.mark.parametrize("manifest", ['["x"]', '{"cases": "abc"}', '{"cases": [1]}'])
def test_a_manifest_that_is_not_one_is_one_line(manifest, tmp_path, capsys, stand_in):
    tree = tmp_path / "tree"
    assert import_cli.main(args(tmp_path, tree=tree)) == 0
    capsys.readouterr()
    (tree / "badminton" / "manifest.json").write_text(manifest)
    before = files(tree)
    refused(capsys, args(tmp_path, tree=tree), "manifest.json", "nothing was written")
    assert files(tree) == before


# --------------------------------------------------------------------------------------------------
# --from-tree: a FIFO or a device where a ground truth should be
# --------------------------------------------------------------------------------------------------
def _seed_tree(src: Path) -> Path:
    gt = src / "badminton" / "gt"
    gt.mkdir(parents=True)
    (src / "badminton" / "media").mkdir()
    (src / "badminton" / "media" / "Ab3dE5gH.mp4").write_bytes(b"video")
    return gt / "Ab3dE5gH.json"


def test_a_fifo_ground_truth_does_not_block(tmp_path, capsys, stand_in):
    gt = _seed_tree(tmp_path / "src")
    os.mkfifo(gt)
    box = {}
    th = threading.Thread(target=lambda: box.setdefault("rc", import_cli.main(
        ["--from-tree", str(tmp_path / "src"), "--tasks-root", str(tmp_path / "tree"), *PROV])), daemon=True)
    th.start()
    th.join(60)
    assert not th.is_alive(), "import-cases blocked on a FIFO"
    assert box["rc"] == 1
    err = capsys.readouterr().err
    assert "not a regular file" in err and "nothing was written" in err and "Traceback" not in err


def test_a_ground_truth_linked_to_dev_zero_is_refused_not_read(tmp_path):
    """Run in a child limited to 3 GiB of address space: an unbounded read of /dev/zero would end in a
    MemoryError there, never exhaust the machine."""
    gt = _seed_tree(tmp_path / "src")
    gt.symlink_to("/dev/zero")
    code = ("import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30)); "
            "from video_arena.importing import cli; sys.exit(cli.main(sys.argv[1:]))")
    p = subprocess.run([sys.executable, "-c", code, "--from-tree", str(tmp_path / "src"), "--tasks-root",
                        str(tmp_path / "tree"), *PROV], capture_output=True, text=True, timeout=120,
                       env={k: v for k, v in os.environ.items() if k not in ("VA_MEDIA_ROOT", "VA_TASKS_ROOT")})
    assert p.returncode == 1, p.stderr
    assert "symbolic link" in p.stderr and "Traceback" not in p.stderr and "MemoryError" not in p.stderr


# --------------------------------------------------------------------------------------------------
def test_sigterm_during_an_import_leaves_no_staging_folder(tmp_path):
    """SIGTERM arrives while the video is being converted: the staging folders (.import-*) are removed."""
    code = ("import os, signal, sys, time\n"
            "from video_arena.importing import media as M\n"
            "def prepare(*a, **k):\n"
            "    os.kill(os.getpid(), signal.SIGTERM)\n"
            "    time.sleep(30)\n"
            "M.prepare = prepare\n"
            "from video_arena.importing import cli\n"
            "sys.exit(cli.main(sys.argv[1:]))\n")
    tree = tmp_path / "tree"
    tree.mkdir()
    p = subprocess.run([sys.executable, "-c", code, *args(tmp_path, "--media-root", str(tmp_path / "media"),
                                                          tree=tree)],
                       capture_output=True, text=True, timeout=120,
                       env={k: v for k, v in os.environ.items() if k not in ("VA_MEDIA_ROOT", "VA_TASKS_ROOT")})
    assert p.returncode == 143, (p.returncode, p.stderr)
    assert "terminated; nothing was written" in p.stderr
    assert files(tree) == {} and files(tmp_path / "media") == {}


# --------------------------------------------------------------------------------------------------
# numbers and nesting Python cannot take: one line, exit 1, nothing written
# --------------------------------------------------------------------------------------------------
BIG = "9" * 401


@pytest.mark.parametrize("events,values,needle", [
    ('[{"t": ' + BIG + ', "type": "winner", "actor": "player_a", "where": "back", "v_before": 0.5, "v_after": 0.6}]',
     None, "events.json: an integer of 401 digits at [0].t"),
    ('{"events": [{"t": 2, "type": "winner", "actor": "player_a", "where": "back", "v_before": 0.5, "v_after": 1'
     + "0" * 400 + "}]}", None, "an integer of 401 digits at events[0].v_after"),
    ('{"events": ' + "[" * 200_000 + "]" * 200_000 + "}", None, "events.json: nested deeper than 64 levels"),
    ('[{"t": 2, "type": "winner", "actor": "player_a", "where": "back"}]', '[[0, 0.5], [' + BIG + ', 0.6]]',
     "values.json: an integer of 401 digits at [1][0]"),
    ('[{"t": 2, "type": "winner", "actor": "player_a", "where": "back"}]', '{"v_series": [[0, 0.5], [2, -' + BIG + ']]}',
     "values.json: an integer of 401 digits at v_series[1][1]"),
    ("t,type,actor,where,v_before,v_after\n" + BIG + ",winner,player_a,back,0.5,0.6\n", None,
     "events.csv line 2: 't' must be finite, got '9999999999999999999... (403 characters)"),
])
def test_a_401_digit_number_or_deep_nesting_in_a_log_is_one_line(tmp_path, capsys, stand_in, events, values, needle):
    """A 401-digit JSON integer loads (Python reads up to 4300 digits) but overflows the first float() it
    meets: once an OverflowError traceback; 200,000 levels of nesting were a RecursionError."""
    name = "events.csv" if events.startswith("t,") else "events.json"
    argv = args(tmp_path, log=events)
    (tmp_path / name).write_text(events)
    argv[argv.index("--events") + 1] = str(tmp_path / name)
    if values is not None:
        (tmp_path / "values.json").write_text(values)
        argv += ["--values", str(tmp_path / "values.json")]
    err = refused(capsys, argv, needle, "nothing was written")
    assert err.count("\n") == 1 and len(err) < 400, err
    assert not (tmp_path / "tree").exists()


# --------------------------------------------------------------------------------------------------
# --from-tree through a link: refused on any component below the source tree's root
# --------------------------------------------------------------------------------------------------
def _tree_with_one_case(src: Path) -> Path:
    """A seed-layout tree with one badminton case; returns its ground-truth file."""
    gt = _seed_tree(src)
    gt.write_text(json.dumps([{"t": 2.0, "type": "winner", "actor": "player_a", "where": "back",
                               "v_before": 0.5, "v_after": 0.56}]))
    return gt


@pytest.mark.parametrize("link", ["gt", "media", "game", "video", "ground truth"])
def test_a_source_tree_read_through_a_link_is_refused(tmp_path, capsys, stand_in, link):
    """`gt/` linked into another tree imported that tree's ground truths; a video linked to a host file was
    imported as the case's video."""
    src, other = tmp_path / "src", tmp_path / "other"
    _tree_with_one_case(src)
    other_gt = _tree_with_one_case(other)
    host_video = tmp_path / "host-video.mp4"
    host_video.write_bytes(b"a video of the host")
    game = src / "badminton"
    if link == "gt":
        shutil.rmtree(game / "gt")
        (game / "gt").symlink_to(other_gt.parent)
    elif link == "media":
        shutil.rmtree(game / "media")
        (game / "media").symlink_to(other / "badminton" / "media")
    elif link == "game":
        shutil.rmtree(game)
        game.symlink_to(other / "badminton")
    elif link == "video":
        (game / "media" / "Ab3dE5gH.mp4").unlink()
        (game / "media" / "Ab3dE5gH.mp4").symlink_to(host_video)
    else:
        (game / "gt" / "Ab3dE5gH.json").unlink()
        (game / "gt" / "Ab3dE5gH.json").symlink_to(other_gt)
    err = refused(capsys, ["--from-tree", str(src), "--tasks-root", str(tmp_path / "tree"), *PROV],
                  "is a symbolic link", "--from-tree reads only folders and files reached through no link",
                  "nothing was written")
    assert err.count("\n") == 1, err
    assert not (tmp_path / "tree").exists()


# --------------------------------------------------------------------------------------------------
# signals while the staging folder is made or removed
# --------------------------------------------------------------------------------------------------
def test_a_signal_while_the_staging_folder_is_made_leaves_none(tmp_path, capsys, monkeypatch, stand_in):
    """SIGTERM right after the staging folder was made (before the import could hold it) once left it."""
    from video_arena.importing import importer as I

    real = I.tempfile.mkdtemp

    def mkdtemp(**kw):
        made = real(**kw)
        os.kill(os.getpid(), signal.SIGTERM)
        return made

    monkeypatch.setattr(I.tempfile, "mkdtemp", mkdtemp)
    tree = tmp_path / "tree"
    tree.mkdir()
    assert import_cli.main(args(tmp_path, tree=tree)) == 143
    err = capsys.readouterr().err
    assert err == "import-cases: terminated; nothing was written\n", err
    assert files(tree) == {}


def test_a_signal_during_the_clean_up_does_not_cut_it_short(tmp_path, capsys, monkeypatch, stand_in):
    """Ctrl-C while a failed import removes its staging folder (a second Ctrl-C, or a SIGTERM from a
    supervisor): the clean-up finishes, one line is printed."""
    from video_arena.importing import importer as I

    def prepare(src, dst, size, fps=None):
        Path(dst).write_bytes(b"partial video")
        raise I.ImportCaseError("video x.mp4 does not decode: stand-in")

    real = I.shutil.rmtree

    def rmtree(path, **kw):
        os.kill(os.getpid(), signal.SIGINT)
        return real(path, **kw)

    monkeypatch.setattr(M, "prepare", prepare)
    monkeypatch.setattr(I.shutil, "rmtree", rmtree)
    tree = tmp_path / "tree"
    tree.mkdir()
    assert import_cli.main(args(tmp_path, tree=tree)) == 130
    err = capsys.readouterr().err
    assert err == "import-cases: interrupted; nothing was written\n", err
    assert files(tree) == {}


def test_ctrl_c_during_the_commit_lets_it_finish(tmp_path, capsys, monkeypatch, stand_in):
    """Ctrl-C while the files are renamed into place once left a half-updated tree (only SIGTERM waited):
    the commit finishes, the case is whole, the line says so."""
    from video_arena.importing import importer as I

    real, calls = I._move, []

    def move(staged, final):
        calls.append(final)
        if len(calls) == 1:
            os.kill(os.getpid(), signal.SIGINT)
        return real(staged, final)

    monkeypatch.setattr(I, "_move", move)
    tree = tmp_path / "tree"
    assert import_cli.main(args(tmp_path, tree=tree)) == 130
    err = capsys.readouterr().err
    assert err == "import-cases: interrupted after the import had completed\n", err
    cases = json.loads((tree / "badminton" / "cases.json").read_text())["cases"]
    assert len(cases) == 1 and len(calls) > 2
    cid = cases[0]["case_id"]
    assert (tree / "badminton" / "gt" / f"{cid}.json").is_file() and (tree / "badminton" / "media" / f"{cid}.mp4").is_file()
    assert not list(tree.glob(".import-*"))
