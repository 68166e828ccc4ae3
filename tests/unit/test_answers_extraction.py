"""Answer extraction (video_arena/core/answers.py): the same candidates as the plain "decode at every
`{`" scan on ordinary replies, and work linear in the reply on hostile ones (counted in characters
handed to the JSON decoder, not timed; benchmarks/answer_extraction_benchmark.py times it)."""
from __future__ import annotations

import importlib.util
import json
import random
from pathlib import Path

import pytest

from video_arena.core import answers
from video_arena.core.answers import answer_candidates, extract_answer

ROW = {"t": 1.5, "type": "move", "actor": "white", "where": "e4", "delta": "flat", "state": "even"}


def _load_benchmark():
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "answer_extraction_benchmark.py"
    spec = importlib.util.spec_from_file_location("answer_extraction_benchmark", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


#: The former scan (decode at every `{`, one character on after a failure): quadratic on hostile
#: replies, the reference on ordinary ones.
reference_objects = _load_benchmark().former_scan


def reference_candidates(text: str):
    return [o for o in reference_objects(text) if isinstance(o.get("events"), list)]


def _answer(rng: random.Random, n: int) -> dict:
    rows = []
    for _ in range(n):
        r = dict(ROW, t=round(rng.uniform(0, 600), 1), where=rng.choice(["e4", "d5", "", "zone {a}"]))
        if rng.random() < 0.2:
            r["note"] = rng.choice(["a } brace", "[x]", "quote \" inside", "{}", "\\ backslash"])
        rows.append(r)
    return {"events": rows}


def _fragment(rng: random.Random) -> str:
    k = rng.randrange(9)
    a = _answer(rng, rng.randrange(0, 6))
    if k == 0:
        return "Here is my analysis of the match {roughly}. "
    if k == 1:
        return "```json\n" + json.dumps(a, indent=rng.choice([None, 1, 2])) + "\n```\n"
    if k == 2:  # cut off by the token limit
        s = json.dumps(a)
        return s[: rng.randrange(1, len(s))]
    if k == 3:  # a wrapper cut off after a complete answer inside it
        s = json.dumps({"analysis": "done", "answer": a, "notes": ["x", {"y": 1}]})
        return s[: rng.randrange(len(s) // 2, len(s))]
    if k == 4:
        return json.dumps({"answer": a})  # an answer inside a complete wrapper is not top-level
    if k == 5:
        return '{"events": "not a list"} {} {"events": []} '
    if k == 6:
        return "{ broken { json " + json.dumps(a) + " } } "
    if k == 7:
        return json.dumps(a) + "\n"
    return '[{"events": [1]}] {"k": [1, 2, {"events": [' + json.dumps(ROW) + ']}'


def test_same_candidates_as_the_reference_scan_on_ordinary_replies():
    rng = random.Random(20261130)
    for _ in range(400):
        reply = "".join(_fragment(rng) for _ in range(rng.randrange(1, 8)))
        assert answer_candidates(reply) == reference_candidates(reply), reply
        assert extract_answer(reply) == (max(reversed(reference_candidates(reply)), key=lambda o: len(o["events"]),
                                             default=None)), reply


def test_windows_never_change_the_result_of_long_objects():
    # objects far longer than the first window, with strings, numbers and literals on every boundary
    rng = random.Random(7)
    for n in (40, 400, 3000):
        a = _answer(rng, n)
        text = "intro " + json.dumps(a) + " and a sketch " + json.dumps({"events": [ROW]})
        assert answer_candidates(text) == [a, {"events": [ROW]}]
        cut = json.dumps({"answer": a, "tail": "x" * 5000})[:-3]  # a wrapper cut inside a long string
        assert answer_candidates(cut) == [a]


def test_a_truncated_wrapper_yields_the_complete_answer_inside():
    a = {"events": [ROW, ROW]}
    text = '```json\n{"reasoning": "...", "result": ' + json.dumps(a) + ', "extra": [1, 2'
    assert extract_answer(text) == a
    assert answer_candidates(text) == reference_candidates(text) == [a]


def test_a_brace_inside_a_string_of_a_broken_object_starts_nothing():
    # The one place the scan differs from decoding at every `{`: the `{` inside the string is not
    # a start (the reference decodes {", ": 1} there, reading the closing quote as a key's start).
    text = '{"a": "x {", ": 1} oops'
    assert answer_candidates(text) == []
    assert reference_objects(text) == [{', ': 1}]


def test_an_answer_after_a_too_deep_nest_is_still_found():
    a = {"events": [ROW]}
    text = '{"a":' * 5000 + "\n" + json.dumps(a) + "\n" + '[' * 3000 + json.dumps(a)
    assert answer_candidates(text) == [a, a]


def test_unicode_and_escapes_survive():
    a = {"events": [dict(ROW, where="雀 \u00e9 \\ \" \n")]}
    assert extract_answer("前文 " + json.dumps(a, ensure_ascii=False) + " 后文") == a


class _Counter:
    def __init__(self, monkeypatch):
        self.chars = 0
        orig = json.JSONDecoder.raw_decode

        def counting(dec, s, idx=0):
            self.chars += len(s) - idx
            return orig(dec, s, idx)

        monkeypatch.setattr(json.JSONDecoder, "raw_decode", counting)


HOSTILE = {
    "nested objects": '{"a":' * 20000,
    "nested lists in objects": '{"a":[' * 20000,
    "nested answers": '{"events":[' * 10000,
    "bare braces": "{" * 100000,
    "keys without colons": '{"{"' * 25000,
    "unterminated strings": '{"a": "' * 20000,
    "cut literals": '{"a": tru' * 10000,
    "truncated rows": ('{"events": [' + json.dumps(ROW)[:-1]) * 2000,
    "nest then close": '{"a":' * 3000 + "1" + "}" * 3000,
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_work_is_linear_in_the_reply(monkeypatch, name):
    text = HOSTILE[name]
    c = _Counter(monkeypatch)
    answer_candidates(text)
    assert c.chars <= 50 * len(text) + 4096, (name, c.chars, len(text))  # the former scan: ~len**2 / 8


def test_the_reference_scan_is_not_linear(monkeypatch):
    # the counter tells the two apart: the former scan hands the decoder the whole rest each time
    text = HOSTILE["keys without colons"][:20000]
    c = _Counter(monkeypatch)
    reference_objects(text)
    assert c.chars > 100 * len(text)


def test_first_window_is_below_the_decoders_depth_limit():
    # a RecursionError on the first window would leave no smaller window to fall back on
    s = "[" * answers._MIN_WINDOW
    try:
        json.JSONDecoder().raw_decode('{"a":' + s)
    except RecursionError:  # pragma: no cover - the assumption broke
        pytest.fail("the decoder's depth limit is below _MIN_WINDOW")
    except ValueError:
        pass


def test_a_block_after_an_unterminated_string_is_found():
    a = {"events": [ROW, ROW]}
    text = '{"events": [{"t": 1, "where": "e4}\nSorry, corrected:\n' + json.dumps(a) + "\n"
    assert answer_candidates(text) == reference_candidates(text) == [a]
