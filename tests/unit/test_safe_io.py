"""video_arena/safe_io.py's hostile-input helpers: JSON parsed with bounds on its nesting and its numbers (one
line naming where, never a RecursionError, an OverflowError or Python's 4300-digit ValueError), a symbolic
link found on any component of a path below a root, and a regular file opened without following a link
or blocking on a FIFO."""
from __future__ import annotations

import os
import threading

import pytest

from video_arena import safe_io
from video_arena.safe_io import JSONLimitError, link_below, loads_bounded, open_regular


def test_json_within_the_bounds_reads_as_json():
    doc = {"match_id": 18446744073709551615, "t": [0.5, -3, 1e300], "deep": [[[[{"a": None}]]]], "ok": True}
    assert loads_bounded(safe_io.json_text(doc).encode()) == doc


@pytest.mark.parametrize("text,needle", [
    ("[" * 200_000 + "]" * 200_000, "nested deeper than 64 levels"),
    ('{"a":' * 200_000 + "1" + "}" * 200_000, "nested deeper than 64 levels"),
    ("[" * 65 + "]" * 65, "nested deeper than 64 levels (at [0][0]"),
    ('{"duration": ' + "9" * 401 + "}", "an integer of 401 digits at duration (at most 20)"),
    ('{"objectives": [{"time": -' + "1" * 401 + "}]}", "an integer of 401 digits at objectives[0].time"),
    ('{"t": ' + "7" * 5000 + "}", "not valid JSON (Exceeds the limit (4300 digits)"),
    ('{"v": 1e400}', "a number too large for a float at v"),
    ('{"v": NaN}', "not valid JSON (NaN is not a JSON number)"),
    ('{"v": -Infinity}', "not valid JSON (-Infinity is not a JSON number)"),
    ("{'v': 1}", "not valid JSON (Expecting property name"),
])
def test_json_beyond_a_bound_is_one_line_saying_what_and_where(text, needle):
    with pytest.raises(JSONLimitError) as exc:
        loads_bounded(text)
    assert needle in str(exc.value) and "\n" not in str(exc.value), str(exc.value)
    assert len(str(exc.value)) < 300


def test_the_bounds_are_the_callers_to_choose():
    assert loads_bounded("[[1]]", max_depth=2) == [[1]]
    with pytest.raises(JSONLimitError, match="deeper than 1 levels"):
        loads_bounded("[[1]]", max_depth=1)
    with pytest.raises(JSONLimitError, match="an integer of 3 digits"):
        loads_bounded("[100]", max_int_digits=2)


def test_a_link_on_any_component_below_the_root_is_found(tmp_path):
    root, elsewhere = tmp_path / "root", tmp_path / "elsewhere"
    (elsewhere / "gt").mkdir(parents=True)
    (elsewhere / "gt" / "x.json").write_text("{}")
    (root / "chess").mkdir(parents=True)
    assert link_below(root, root / "chess" / "gt" / "x.json") is None      # nothing there: no link
    (root / "chess" / "gt").symlink_to(elsewhere / "gt")
    assert link_below(root, root / "chess" / "gt" / "x.json") == root / "chess" / "gt"
    (root / "go").mkdir()
    (root / "go" / "v.mp4").symlink_to(elsewhere / "gt" / "x.json")
    assert link_below(root, root / "go" / "v.mp4") == root / "go" / "v.mp4"
    linked_root = tmp_path / "linked-root"
    linked_root.symlink_to(root)
    assert link_below(linked_root, linked_root / "go") is None              # the root is the caller's


def test_a_regular_file_is_opened_without_following_a_link_or_blocking(tmp_path):
    f = tmp_path / "f"
    f.write_bytes(b"abc")
    fd, st = open_regular(f)
    os.close(fd)
    assert st.st_size == 3
    (tmp_path / "link").symlink_to(f)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path in (tmp_path / "link", fifo, tmp_path, "/dev/zero"):
        box: dict = {}

        def attempt(p=path):
            try:
                os.close(open_regular(p)[0])
                box["got"] = "opened"
            except OSError as exc:
                box["got"] = exc

        th = threading.Thread(target=attempt, daemon=True)
        th.start()
        th.join(30)
        assert not th.is_alive(), f"open_regular blocked on {path}"
        assert isinstance(box["got"], OSError), (path, box)


def test_a_value_is_shown_cut_with_its_length():
    assert safe_io.shown(12) == "12" and safe_io.shown("ab") == "'ab'"
    assert safe_io.shown(10 ** 400) == "1" + "0" * 19 + "... (401 characters)"
