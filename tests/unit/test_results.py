"""video_arena/core/results.py: the cell layout, the run record and its one writer, `cell_status`."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from video_arena.core import results as R


def rec(**over) -> dict:
    doc = {"protocol": "B", "model": "m", "game": "chess", "case_id": "Fx7kQ2aB", "stop_reason": "completed",
           "answer_state": "wrote", "n_rows": 2, "wall_s": 1.5, "instruction_sha256": "a" * 64,
           "answer_sha256": "b" * 64, "started_at": "2026-01-01T00:00:00+00:00",
           "finished_at": "2026-01-01T00:00:02+00:00", "audit": {"verdict": "clean"}}
    doc.update(over)
    return doc


def test_run_record_round_trip_keeps_the_protocol_extras(tmp_path):
    written = R.write_run(tmp_path, rec())
    assert written.extras == {"audit": {"verdict": "clean"}}
    got, err = R.read_run(tmp_path)
    assert err == "" and got == written
    assert got.get("audit") == {"verdict": "clean"} and got.get("n_rows") == 2
    doc = json.loads((tmp_path / "run.json").read_text())
    assert list(doc)[:1 + len(R.COMMON_KEYS)] == ["format", *R.COMMON_KEYS] and doc["format"] == R.RUN_FORMAT


def test_a_run_record_carries_its_format_and_one_of_another_format_is_unreadable(tmp_path):
    """run.json's first key is its format and version (like the ground truth's, the manifest's, the receipt's);
    a record without it predates the key and is read as this version; any other value is refused by
    `read_run` (one line), so a reader never guesses at a layout it does not know."""
    R.write_run(tmp_path, rec())
    doc = json.loads((tmp_path / "run.json").read_text())
    assert next(iter(doc)) == "format" and doc["format"] == "video-arena-run/1"
    got, _ = R.read_run(tmp_path)
    assert "format" not in got.extras and got.to_doc() == doc            # read back and written again: the same
    del doc["format"]
    (tmp_path / "run.json").write_text(json.dumps(doc))
    legacy, err = R.read_run(tmp_path)
    assert err == "" and legacy.protocol == "B" and legacy.to_doc()["format"] == R.RUN_FORMAT
    for other in ("video-arena-run/2", "something-else", 7, None, "x" * 10_000):
        (tmp_path / "run.json").write_text(json.dumps({**doc, "format": other}))
        got, err = R.read_run(tmp_path)
        assert got is None and "format" in err and "\n" not in err and len(err) < 300, err
        assert R.cell_status(tmp_path).state == R.UNREADABLE


def test_run_json_names_its_format_and_version(tmp_path):
    R.write_run(tmp_path, rec())
    doc = json.loads((tmp_path / "run.json").read_text())
    assert doc["format"] == R.RUN_FORMAT == "video-arena-run/1"
    got, err = R.read_run(tmp_path)
    assert err == "" and "format" not in got.extras and got.to_doc() == doc


def test_a_run_json_without_a_format_is_read_as_version_1(tmp_path):
    # what every runner wrote before the key existed: the same keys, so the same record
    (tmp_path / "run.json").write_text(json.dumps(rec()))
    got, err = R.read_run(tmp_path)
    assert err == "" and got.n_rows == 2 and got.extras == {"audit": {"verdict": "clean"}}
    assert R.cell_status(tmp_path).state == R.RAN


@pytest.mark.parametrize("fmt", ["video-arena-run/2", "video-arena-gt/1", "", None, 1, ["video-arena-run/1"]])
def test_a_run_json_of_another_format_is_not_read(tmp_path, fmt):
    (tmp_path / "run.json").write_text(json.dumps(rec(format=fmt)))
    got, err = R.read_run(tmp_path)
    assert got is None and "not video-arena-run/1" in err and "\n" not in err
    st = R.cell_status(tmp_path)
    assert st.state == R.UNREADABLE and st.reason == err


def test_the_writer_refuses_another_format(tmp_path):
    with pytest.raises(TypeError, match="format"):
        R.write_run(tmp_path, rec(format="video-arena-run/2"))
    assert R.write_run(tmp_path, rec(format=R.RUN_FORMAT)).extras == {"audit": {"verdict": "clean"}}


def test_the_writer_refuses_a_common_key_of_the_wrong_type(tmp_path):
    for key, bad in (("n_rows", "2"), ("wall_s", True), ("answer_sha256", 5), ("protocol", 1)):
        with pytest.raises(TypeError, match=key):
            R.write_run(tmp_path, rec(**{key: bad}))
    assert not (tmp_path / "run.json").exists()


def test_the_writer_is_surrogate_safe_and_atomic(tmp_path):
    R.write_run(tmp_path, rec(reply_head="cut \ud83d mid-pair"))
    text = (tmp_path / "run.json").read_text(encoding="utf-8")
    assert "\\ud83d" in text  # escaped, still valid JSON with the same value
    assert json.loads(text)["reply_head"] == "cut \ud83d mid-pair"
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]  # no temporary file left


def test_a_reader_takes_wrong_types_as_not_recorded(tmp_path):
    (tmp_path / "run.json").write_text(json.dumps(rec(n_rows="many", answer_sha256=7, protocol=3, game=None)))
    got, _ = R.read_run(tmp_path)
    assert got.n_rows is None and got.answer_sha256 is None and got.protocol == "3"
    assert got.names_other_cell("chess", "Fx7kQ2aB") == "run.json names game None, its folder is 'chess'"


@pytest.mark.parametrize("setup, state, finished", [
    (None, R.NOT_RUN, False),
    ("folder", R.NO_RECORD, False),
    ("[1, 2]", R.UNREADABLE, False),
    ("{not json", R.UNREADABLE, False),
    (rec(stop_reason="harness_error", answer_state=None), R.NEVER_RAN, False),
    (rec(stop_reason=None), R.NEVER_RAN, False),
    (rec(), R.RAN, True),
    (rec(protocol="A", stop_reason="length", answer_state="answered"), R.RAN, True),
])
def test_cell_status_is_the_one_rule(tmp_path, setup, state, finished):
    cdir = R.cell_dir(tmp_path, "chess", "Fx7kQ2aB")
    if setup is not None:
        cdir.mkdir(parents=True)
        if isinstance(setup, dict):
            (cdir / "run.json").write_text(json.dumps(setup))
        elif setup != "folder":
            (cdir / "run.json").write_text(setup)
    st = R.cell_status(cdir)
    assert (st.state, st.finished, st.missing) == (state, finished, not finished)
    assert st.reason or finished


def test_a_symlinked_run_json_is_not_followed(tmp_path):
    other = tmp_path / "elsewhere.json"
    other.write_text(json.dumps(rec()))
    cdir = tmp_path / "c"
    cdir.mkdir()
    os.symlink(other, cdir / "run.json")
    assert R.cell_status(cdir).state == R.UNREADABLE


def test_write_answer_keeps_collected_bytes_exactly(tmp_path):
    raw = b'{"events": []}  \n\n'
    assert R.write_answer(tmp_path, raw).read_bytes() == raw
    R.write_answer(tmp_path, {"events": []})
    assert json.loads((tmp_path / "answer.json").read_text()) == {"events": []}
    assert isinstance(R.cell_dir(Path("x"), "g", "c"), Path)


def test_attempt_history_survives_a_deleted_attempts_folder(tmp_path):
    """The run record carries the history: after attempts/ is deleted, the next re-run still numbers
    its attempt after every earlier one and still lists those that ran (re-draws are never hidden)."""
    cdir = tmp_path / "chess" / "Fx7kQ2aB"
    cdir.mkdir(parents=True)
    R.write_run(cdir, rec(attempt=1, previous_attempts=[]))
    for _ in range(2):  # attempts 2 and 3, each after one that ran
        att = R.start_attempt(cdir, (R.RUN_FILE, R.ANSWER_FILE))
        R.write_run(cdir, rec(**att.record_keys()))
    assert att.n == 3 and len(R.redraws_of(R.read_run(cdir)[0])) == 2
    import shutil
    shutil.rmtree(cdir / R.ATTEMPTS_DIR)
    att = R.start_attempt(cdir, (R.RUN_FILE, R.ANSWER_FILE))
    R.write_run(cdir, rec(**att.record_keys()))
    got = R.read_run(cdir)[0]
    assert att.n == 4 and [p["attempt"] for p in got.extras["previous_attempts"]] == [1, 2, 3]
    assert len(R.redraws_of(got)) == 3
    assert (cdir / R.ATTEMPTS_DIR / "3" / R.RUN_FILE).is_file()  # the files moved keep their number
