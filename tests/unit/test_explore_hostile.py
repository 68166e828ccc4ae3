"""`video-arena explore` and `video-arena timeline` on results folders written by someone else
(docs/SECURITY.md, "Untrusted results folders"): only regular files inside the folder reach the site
(no link on any component; capped counts), Protocol A's files only for Protocol A cells, images opened
with a pixel limit, and absurd but valid answer rows (t = 1e300) drawn and shown as the judge scores
them: the site builds."""
from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import pytest

from scoring_helpers import ORACLE, b_run, make_job, make_tasks, trial, write_cell
from video_arena.digests import sha256_bytes
from video_arena.explore import site as X
from video_arena.scoring import timeline as TL

KEY = "-----BEGIN PRIVATE KEY----- MIIEvQ do-not-publish"


def _site(src: Path, tasks: Path, out: Path) -> str:
    X.build_site([src], out, tasks_root=tasks, jobs=1, progress=False)
    return "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in out.rglob("*.html"))


def _huge_png() -> bytes:
    """A few hundred bytes whose header claims 20000 x 20000 pixels (400 Mpx): a decompression bomb."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 20000, 20000, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\0" * 1024)) + chunk(b"IEND", b""))


@pytest.fixture
def tree(tmp_path):
    tasks = tmp_path / "tasks"
    ids = make_tasks(tasks, {"chess": 2})["chess"]
    return tasks, ids


@pytest.mark.parametrize("target", ["folder", "proc"])
def test_a_linked_logs_folder_never_reaches_the_site(target, tree, tmp_path):
    tasks, ids = tree
    res = tmp_path / "results"
    d = write_cell(res, b_run("chess", ids[0]))
    private = tmp_path / "home-ssh"
    private.mkdir()
    (private / "id_rsa.log").write_text(KEY)
    (d / "logs").symlink_to(private if target == "folder" else Path("/proc/self"))
    d2 = write_cell(res, b_run("chess", ids[1], logs={"stdout": "logs/../../../../home-ssh/id_rsa.log"}))
    (d2 / "logs").mkdir()
    html = _site(res, tasks, tmp_path / "site")
    assert "PRIVATE KEY" not in html and "do-not-publish" not in html
    assert "mountinfo" not in html and "/proc/self" not in html


def test_log_files_are_counted_and_capped(tree, tmp_path):
    tasks, ids = tree
    res = tmp_path / "results"
    d = write_cell(res, b_run("chess", ids[0]))
    (d / "logs").mkdir()
    for i in range(3000):
        (d / "logs" / f"{i:05d}.log").write_text(f"line of log {i}\n")
    html = _site(res, tasks, tmp_path / "site")
    shown = sum(f"line of log {i}\n" in html for i in range(3000))
    assert shown == 8


def test_a_protocol_b_agents_receipt_and_frames_are_not_read_as_stills(tree, tmp_path):
    """A Protocol B agent writes its own agent/ folder: a receipt.json naming 'stills' it put in agent/frames
    (a non-image and a 400 Mpx PNG) is not Protocol A's record: the site builds and shows no stills."""
    tasks, ids = tree
    job = make_job(tmp_path / "jobs", "j")
    bomb, junk = _huge_png(), b"not an image at all"
    for cid in ids:
        t = trial(job, "chess", cid, ORACLE)
        (t / "agent" / "frames").mkdir()
        (t / "agent" / "frames" / "000000.jpg").write_bytes(bomb)
        (t / "agent" / "frames" / "000001.jpg").write_bytes(junk)
        (t / "agent" / "receipt.json").write_text(json.dumps({
            "frames": [{"sha256": sha256_bytes(bomb)}, {"sha256": sha256_bytes(junk)}], "video_ts": [0.0, 1.0]}))
        (t / "agent" / "reply.txt").write_text("agent-written reply REPLY-MARKER")
    html = _site(job, tasks, tmp_path / "site")
    assert "Stills the model received" not in html and "REPLY-MARKER" not in html


def test_a_protocol_a_still_that_is_a_bomb_is_not_drawn(tree, tmp_path):
    tasks, ids = tree
    job = make_job(tmp_path / "jobs", "j")
    bomb = _huge_png()
    t = trial(job, "chess", ids[0], ORACLE, judge_case={"game": "chess", "case_id": ids[0], "protocol": "A",
                                                         "task_name": f"video-arena/chess-{ids[0]}"})
    (t / "agent" / "frames").mkdir()
    (t / "agent" / "frames" / "000000.jpg").write_bytes(bomb)
    (t / "agent" / "receipt.json").write_text(json.dumps({"frames": [{"sha256": sha256_bytes(bomb)}],
                                                           "video_ts": [0.0]}))
    html = _site(job, tasks, tmp_path / "site")
    assert "Stills the model received (1)" in html and "not drawn" in html
    assert not list((tmp_path / "site" / "stills").iterdir())


@pytest.mark.parametrize("t", [1e300, 1.7e308])
def test_an_absurd_but_valid_row_builds_the_site_and_is_shown_as_it_is(t, tree, tmp_path):
    tasks, ids = tree
    res = tmp_path / "results"
    answer = {"events": ORACLE["events"] + [dict(ORACLE["events"][0], t=t)]}
    write_cell(res, b_run("chess", ids[0]), answer)
    write_cell(res, b_run("chess", ids[1]), ORACLE)
    html = _site(res, tasks, tmp_path / "site")
    assert f"{t:g} s" in html
    assert list((tmp_path / "site" / "img").glob("tl-*.png")), "the timelines were drawn"


@pytest.mark.parametrize("t", [1e300, 1.7e308])
def test_the_timeline_command_draws_an_absurd_row(t, tree, tmp_path, capsys):
    tasks, ids = tree
    ans = tmp_path / "answer.json"
    ans.write_text(json.dumps({"events": ORACLE["events"] + [dict(ORACLE["events"][0], t=t)]}))
    out = tmp_path / "tl.png"
    assert TL.main([str(tasks / "chess" / "gt" / f"{ids[0]}.json"), str(ans), "-o", str(out)]) == 0
    assert out.stat().st_size > 1000
    assert "far after the video's end" not in capsys.readouterr().err


def test_the_timeline_command_never_follows_a_link_for_the_answer(tree, tmp_path, capsys):
    tasks, ids = tree
    (tmp_path / "answer.json").symlink_to("/dev/zero")
    rc = TL.main([str(tasks / "chess" / "gt" / f"{ids[0]}.json"), str(tmp_path / "answer.json"), "-o",
                  str(tmp_path / "tl.png")])
    assert rc == 2 and "Traceback" not in capsys.readouterr().err


def test_the_timeline_command_draws_an_answer_with_a_401_digit_time(tree, tmp_path, capsys):
    """A 401-digit integer is a valid JSON number no float holds: the judge refuses the answer (a format
    error), and its other rows are drawn best-effort; never an OverflowError."""
    tasks, ids = tree
    ans = tmp_path / "answer.json"
    rows = ORACLE["events"] + [dict(ORACLE["events"][0], t=-12345.5)]
    ans.write_text(json.dumps({"events": rows}).replace("-12345.5", "1" + "0" * 400))
    out = tmp_path / "tl.png"
    assert TL.main([str(tasks / "chess" / "gt" / f"{ids[0]}.json"), str(ans), "-o", str(out)]) == 0
    assert out.stat().st_size > 1000 and "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize("args", [["--tolerance", "nan"], ["--window", "0", "inf"], ["--neutral", "inf"]])
def test_the_timeline_command_refuses_a_number_that_is_not_finite(args, tree, tmp_path, capsys):
    tasks, ids = tree
    ans = tmp_path / "answer.json"
    ans.write_text(json.dumps(ORACLE))
    rc = TL.main([str(tasks / "chess" / "gt" / f"{ids[0]}.json"), str(ans), "-o", str(tmp_path / "tl.png"), *args])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, err
