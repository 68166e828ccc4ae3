"""The core API as the seed documents it: `import va_core as C`."""
from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import va_core as C

DOC = (
    "# Task\n"
    "Shared line one.\r\n"
    "You see <!--A-->the frames<!--/A--><!--B-->the file match.mp4<!--/B--> of one match.\n"
    "<!-- B-ONLY:START -->\n"
    "Write answer.json as you go.\n"
    "<!-- B-ONLY:END -->\n"
    "<!-- A-ONLY:START -->\n"
    "Reply with one JSON object.\n"
    "<!-- A-ONLY:END -->\n"
    "Shared tail, no newline at end"
)


def test_render_keeps_shared_bytes_and_own_delivery():
    a = C.render_instruction(DOC, "video")
    b = C.render_instruction(DOC, "agentic")
    assert a == ("# Task\nShared line one.\r\nYou see the frames of one match.\n"
                 "Reply with one JSON object.\nShared tail, no newline at end")
    assert b == ("# Task\nShared line one.\r\nYou see the file match.mp4 of one match.\n"
                 "Write answer.json as you go.\nShared tail, no newline at end")
    assert C.render_instruction(DOC, "A") == a and C.render_instruction(DOC, "b") == b


def test_protocol_names():
    with pytest.raises(ValueError, match="unknown protocol"):
        C.render_instruction(DOC, "C")


BAD = {
    "unclosed block": ("x\n<!-- B-ONLY:START -->\ny\n", 2, "never closed"),
    "end without start": ("x\n<!-- A-ONLY:END -->\n", 2, "without a START"),
    "nested blocks": ("<!-- B-ONLY:START -->\n<!-- A-ONLY:START -->\n<!-- A-ONLY:END -->\n<!-- B-ONLY:END -->\n", 2, "nested"),
    "mismatched end": ("<!-- B-ONLY:START -->\n<!-- A-ONLY:END -->\n", 2, "closes"),
    "unknown block": ("a\nb\n<!-- C-ONLY:START -->\n", 3, "unknown marker"),
    "inline unclosed": ("a <!--A-->span\ncontinues<!--/A-->\n", 1, "not closed on the same line"),
    "inline close only": ("a span<!--/B-->\n", 1, "without an opening"),
    "inline nested": ("<!--A--><!--B-->x<!--/B--><!--/A-->\n", 1, "nested"),
    "inline mismatched": ("<!--A-->x<!--/B-->\n", 1, "closes"),
    "raw comment": ("fine\n<!-- TODO: remove -->\n", 2, "comment"),
    "marker with text on line": ("x <!-- B-ONLY:START --> y\n", 1, "comment"),
    "stray close": ("text -->\n", 1, "comment"),
}


@pytest.mark.parametrize("name", sorted(BAD))
@pytest.mark.parametrize("protocol", ["A", "B"])
def test_malformed_markers_fail_closed_with_line_number(name, protocol):
    text, line, words = BAD[name]
    with pytest.raises(C.InstructionMarkerError, match=rf":{line}: .*{words}"):
        C.render_instruction(text, protocol, source="f.md")


PIECES = ["plain text", "<!--A-->", "<!--/A-->", "<!--B-->", "<!--/B-->", "<!-- A-ONLY:START -->",
          "<!-- A-ONLY:END -->", "<!-- B-ONLY:START -->", "<!-- B-ONLY:END -->", "<!--", "-->", "\n", "\r\n",
          "<!-- C-ONLY:START -->", "<!--X-->", " "]


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=25), st.sampled_from(["A", "B"]))
def test_fuzz_renderer_never_leaks_a_marker(pieces, protocol):
    text = "".join(pieces)
    try:
        out = C.render_instruction(text, protocol)
    except C.InstructionMarkerError as exc:
        assert re.search(r":\d+: ", str(exc))
        return
    assert "<!--" not in out and "-->" not in out
    other = "B" if protocol == "A" else "A"
    assert f"{other}-ONLY" not in out


def test_instruction_for_reads_file(tmp_path):
    p = tmp_path / "instruction.md"
    p.write_bytes(DOC.encode())
    assert C.instruction_for("agentic", p) == C.render_instruction(DOC, "B")
    assert len(C.text_digest("x")) == 64


def test_instruction_for_strips_a_byte_order_mark(tmp_path):
    p = tmp_path / "instruction.md"
    p.write_bytes(b"\xef\xbb\xbf" + DOC.encode())
    for protocol in ("video", "agentic"):
        text = C.instruction_for(protocol, p)
        assert text == C.render_instruction(DOC, protocol) and not text.startswith("\ufeff")


# ---------------------------------------------------------------- resolve

def _tree(tmp_path, cases=("Ab3dEf7h",)):
    from video_arena.games.cli import sync
    sync(tmp_path)
    cdir = tmp_path / "chess"
    (cdir / "cases.json").write_text(json.dumps({"game": "chess", "cases": [{"case_id": c} for c in cases]}))
    return tmp_path


def test_resolve_returns_paths(tmp_path, monkeypatch):
    root = _tree(tmp_path)
    r = C.resolve("chess", "Ab3dEf7h", tasks_root=root)
    assert r["instruction"] == root / "chess" / "instruction.md" and r["instruction"].is_file()
    assert r["gt"] == root / "chess" / "gt" / "Ab3dEf7h.json"
    assert r["media"] == root / "chess" / "media" / "Ab3dEf7h.mp4"
    assert r["answer_seed"].read_bytes() == b'{"events": []}\n'
    monkeypatch.setenv("VA_TASKS_ROOT", str(root))
    monkeypatch.setenv("VA_MEDIA_ROOT", str(tmp_path / "m"))
    r2 = C.resolve("chess", "Ab3dEf7h")
    assert r2["tasks_root"] == root and r2["media"] == tmp_path / "m" / "chess" / "media" / "Ab3dEf7h.mp4"


def test_resolve_errors_name_what_exists(tmp_path):
    root = _tree(tmp_path)
    with pytest.raises(C.UnknownGame, match="chess"):
        C.resolve("checkers", "Ab3dEf7h", tasks_root=root)
    with pytest.raises(C.UnknownCase, match="Ab3dEf7h"):
        C.resolve("chess", "zzzzzzzz", tasks_root=root)
    with pytest.raises(C.UnknownGame):
        C.resolve("../chess", "Ab3dEf7h", tasks_root=root)


@pytest.mark.parametrize("game,case", [("chess\n", "Ab3dEf7h"), ("chess", "Ab3dEf7h\n"), ("chess ", "Ab3dEf7h")])
def test_ids_are_matched_whole(tmp_path, game, case):
    root = _tree(tmp_path)
    with pytest.raises((C.UnknownGame, C.UnknownCase)):
        C.resolve(game, case, tasks_root=root)


def test_case_id_with_a_trailing_newline_is_a_bad_case_id(tmp_path):
    from video_arena.core.tasks import CASE_ID_RE, GAME_RE, parse_game_toml

    assert not CASE_ID_RE.match("Ab3dEf7h\n") and not GAME_RE.match("chess\n") and CASE_ID_RE.match("Ab3dEf7h")
    root = _tree(tmp_path, cases=("Ab3dEf7h\n",))
    with pytest.raises(C.TasksTreeError, match="bad case id"):
        C.resolve("chess", "Ab3dEf7h\n", tasks_root=root)
    text = (root / "chess" / "game.toml").read_text()
    assert 'name = "chess"' in text
    with pytest.raises(C.TasksTreeError, match="game name"):
        parse_game_toml(text.replace('name = "chess"', 'name = "chess\\n"'))


def test_game_without_cases_says_so(tmp_path):
    root = _tree(tmp_path, cases=())
    with pytest.raises(C.UnknownCase, match="has no cases"):
        C.resolve("chess", "Ab3dEf7h", tasks_root=root)


def test_bad_cases_file_is_clear(tmp_path):
    root = _tree(tmp_path, cases=("short",))
    with pytest.raises(C.TasksTreeError, match="bad case id"):
        C.resolve("chess", "short", tasks_root=root)


def test_missing_tasks_root(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a directory"):
        C.resolve("chess", "Ab3dEf7h", tasks_root=tmp_path / "nope")


# ---------------------------------------------------------------- answers and the A prompt

def test_extract_most_rows_wins_ties_go_last():
    sketch = '```json\n{"events": [{"t": 0, "type": "move"}]}\n```'
    real = '{"events": [{"t": 1}, {"t": 2}, {"t": 3}]}'
    later_tie = '{"events": [{"t": 7}, {"t": 8}, {"t": 9}]}'
    reply = f"Schema: {sketch}\nAnswer:\n```json\n{real}\n```\nAlso {later_tie} done."
    assert len(C.answer_candidates(reply)) == 3
    assert C.extract_answer(reply) == json.loads(later_tie)


def test_extract_ignores_non_answer_objects_and_garbage():
    reply = 'Here {not json} and {"t": 1} and {"events": "x"} then {"events": [{"t": 5}]} {'
    assert C.answer_candidates(reply) == [{"events": [{"t": 5}]}]
    assert C.extract_answer("no json at all") is None
    assert C.extract_answer("") is None and C.extract_answer(None) is None  # type: ignore[arg-type]
    assert C.extract_answer('{"events": []}') == {"events": []}


def test_extract_nested_rows_are_not_separate_candidates():
    reply = '{"events": [{"t": 1, "events": []}]}'
    assert C.answer_candidates(reply) == [json.loads(reply)]


def test_protocol_a_prompt(tmp_path):
    p = tmp_path / "instruction.md"
    p.write_text(DOC)
    text = C.protocol_a_prompt(p, [0, 10.5, 21.0])
    assert text.startswith(C.render_instruction(DOC, "A"))
    assert "video_ts = [0,10.5,21]" in text and "single request" in text
    assert "answer.json" not in text
    with pytest.raises(ValueError):
        C.protocol_a_prompt(p, [])
    with pytest.raises(ValueError):
        C.protocol_a_prompt(p, [1, 1])
