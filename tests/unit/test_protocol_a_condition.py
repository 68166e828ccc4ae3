"""The versioned Protocol A condition file: its values are the protocol's, its digest is stable."""
from __future__ import annotations

import json

import pytest

from video_arena.core.condition import (DEFAULT_CONDITION, ConditionError, find_condition, load_condition,
                                              versioned_conditions)
from video_arena.core.request import RequestOptions, reference_body, request_sha256


def test_the_shipped_condition_is_the_protocol():
    c = load_condition()
    g = c.grid()
    assert (g.fps, g.max_frames, g.longest_side, g.jpeg_q) == (1.0, 256, 768, 4)
    assert c.tolerance_s == 3 and c.max_tokens == 48000 and c.temperature == 0
    assert c.transport == "image_parts" and c.max_retries == 3
    assert c.doc["retry"]["rate_limit_and_timeout_s"] == [1, 2, 4]
    assert c.doc["retry"]["server_error_s"] == [10, 20, 40]
    assert c.body_cap_bytes and c.body_cap_bytes > 20_000_000
    assert DEFAULT_CONDITION in versioned_conditions()


def test_digest_ignores_formatting_but_not_values(tmp_path):
    c = load_condition()
    doc = json.loads(DEFAULT_CONDITION.read_text())
    p = tmp_path / "same.json"
    p.write_text(json.dumps(doc, indent=7, sort_keys=False))
    assert load_condition(p).sha256 == c.sha256
    doc["generation"]["max_tokens"] = 8192
    p.write_text(json.dumps(doc))
    assert load_condition(p).sha256 != c.sha256
    assert find_condition(c.sha256).source == c.source
    assert find_condition(load_condition(p).sha256) is None
    (tmp_path / "kept").mkdir()
    (tmp_path / "kept" / f"{load_condition(p).sha256}.json").write_text(p.read_text())
    assert find_condition(load_condition(p).sha256, [tmp_path / "kept"]).max_tokens == 8192


@pytest.mark.parametrize("path,value", [
    (("protocol",), "B"), (("grid", "jpeg_q"), 1), (("grid", "max_frames"), 0),
    (("transport", "kind"), "gif"), (("retry", "server_error_s"), []), (("generation", "max_tokens"), 0),
])
def test_malformed_conditions_are_refused(tmp_path, path, value):
    doc = json.loads(DEFAULT_CONDITION.read_text())
    d = doc
    for k in path[:-1]:
        d = d[k]
    d[path[-1]] = value
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(ConditionError):
        load_condition(p)


def test_retry_scale_is_an_env_knob(monkeypatch):
    c = load_condition()
    monkeypatch.delenv("VA_A_RETRY_SCALE", raising=False)
    assert [c.retry_delay("rate_limit", i) for i in range(4)] == [1, 2, 4, 4]
    assert [c.retry_delay("server", i) for i in range(3)] == [10, 20, 40]
    monkeypatch.setenv("VA_A_RETRY_SCALE", "0.5")
    assert c.retry_delay("timeout", 2) == 2.0


def test_request_hash_depends_on_every_input():
    c = load_condition()
    o = RequestOptions(model="m", max_tokens=48000, temperature=0)
    base = request_sha256(reference_body(c, o, "p", ["a" * 64, "b" * 64]))
    assert base == request_sha256(reference_body(c, o, "p", ["a" * 64, "b" * 64]))
    variants = [
        reference_body(c, o, "p", ["b" * 64, "a" * 64]),  # order of stills
        reference_body(c, o, "p2", ["a" * 64, "b" * 64]),
        reference_body(c, RequestOptions(model="m2", max_tokens=48000, temperature=0), "p", ["a" * 64, "b" * 64]),
        reference_body(c, RequestOptions(model="m", max_tokens=48000, temperature=0, reasoning_effort="low"),
                       "p", ["a" * 64, "b" * 64]),
        reference_body(c, RequestOptions(model="m", max_tokens=48000, temperature=0, enable_thinking=False),
                       "p", ["a" * 64, "b" * 64]),
        reference_body(c, RequestOptions(model="m", max_tokens=48000, temperature=0, extra_body={"top_k": 1}),
                       "p", ["a" * 64, "b" * 64]),
    ]
    assert len({base, *map(request_sha256, variants)}) == 1 + len(variants)
