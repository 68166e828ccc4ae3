"""run-a against an endpoint that is not what it claims (docs/SECURITY.md): the model the server names in
its reply is recorded and the scorer flags a cell served by another model; a redirect that changes the
method or leaves the base URL is never followed (a 302's canned GET page is never the model's answer);
a condition file that is no versioned one is marked non-reference in the score table itself.  The real
openai client over real HTTP against tests/fixtures/openai_test_server.py."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from fixtures.protocol_a_fixtures import cache, fast_retries, server, tree  # noqa: F401 (pytest fixtures)
from fixtures.protocol_a_tree import oracle_reply
from video_arena.protocol_a import runner
from video_arena.core.condition import DEFAULT_CONDITION
from video_arena.scoring import caveats as CV
from video_arena.scoring import cli as score_cli

SHORT = "paShort1"


def run(tree, cache, server, out, *extra) -> int:
    return runner.main(["--model", "test-model", "--base-url", server.base_url, "--out", str(out), "--tasks-root",
                        str(tree), "--cache-dir", str(cache), "--no-progress", "--limit", "1", *extra])


def rec(out) -> dict:
    return json.loads((Path(out) / "chess" / SHORT / "run.json").read_text())


def score(out, tree, capsys) -> tuple[int, str]:
    capsys.readouterr()
    rc = score_cli.main([str(out), "--tasks-root", str(tree), "--bootstrap", "50"])
    return rc, capsys.readouterr().out


def caveat_row(table: str, game: str = "chess") -> list[str]:
    lines = table.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.strip().startswith("caveats "))
    cols = lines[head].split()
    row = next(ln.split() for ln in lines[head + 2:] if ln.split()[:1] == [game])
    return dict(zip(cols, row))


# -- the served model ---------------------------------------------------------------------------------
def test_the_served_model_of_every_reply_is_recorded(tree, cache, server, tmp_path):
    server.script({"content": "", "served_model": "small-model"},  # no visible answer: redrawn
                  {"content": oracle_reply(tree, SHORT), "served_model": "other-model"})
    out = tmp_path / "o"
    assert run(tree, cache, server, out) == 0
    r = rec(out)
    assert r["served_model"] == "other-model"
    assert [a["served_model"] for a in r["attempts"]] == ["small-model", "other-model"]


def test_a_cell_served_by_another_model_is_flagged_in_the_table(tree, cache, server, tmp_path, capsys):
    server.script({"content": oracle_reply(tree, SHORT), "served_model": "gpt-4o-mini"})
    out = tmp_path / "o"
    assert run(tree, cache, server, out) == 0
    rc, table = score(out, tree, capsys)
    assert rc == 0
    assert caveat_row(table)["served"] == "1"
    assert "SERVED ANOTHER MODEL: 1 cell(s)" in table and "test-model -> gpt-4o-mini" in table


def test_the_requested_model_served_is_not_flagged(tree, cache, server, tmp_path, capsys):
    server.script({"content": oracle_reply(tree, SHORT)})  # the test server names the requested model
    out = tmp_path / "o"
    assert run(tree, cache, server, out) == 0
    rc, table = score(out, tree, capsys)
    assert rc == 0 and caveat_row(table)["served"] == "0" and "SERVED ANOTHER MODEL" not in table


@pytest.mark.parametrize("requested, served, differs", [
    ("gpt-4o", "gpt-4o", False), ("gpt-4o", "gpt-4o-2024-08-06", False), ("openai/gpt-4o", "gpt-4o", False),
    ("Qwen/Qwen2.5-VL-7B", "qwen2.5-vl-7b", False), ("claude-x", "claude-x-20250101", False),
    ("gpt-4o", "gpt-4o-mini", True), ("gpt-4o", "gpt-3.5-turbo", True), ("m1", "m1-distilled", True),
    ("gpt-4o", None, False), ("gpt-4o", "", False)])
def test_served_differs(requested, served, differs):
    assert CV.served_differs(requested, served) is differs


# -- redirects ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("status", [301, 302, 303])
def test_a_redirect_that_changes_the_method_is_not_followed(status, tree, cache, server, tmp_path):
    """A 302 turns the POST into a GET: its canned completion must never be recorded as the model's answer."""
    server.script({"redirect": "/v1/canned", "status": status})
    out = tmp_path / "o"
    assert run(tree, cache, server, out) == 0
    r = rec(out)
    assert r["stop_reason"] == "harness_error" and "redirected" in r["error"], r
    assert not (Path(out) / "chess" / SHORT / "answer.json").exists()
    assert len(server.requests) == 1  # not retried, not followed


def test_a_redirect_that_leaves_the_base_url_is_not_followed(tree, cache, server, tmp_path):
    server.script({"redirect": "http://127.0.0.2:9/v1/chat/completions", "status": 307})
    out = tmp_path / "o"
    assert run(tree, cache, server, out) == 0
    r = rec(out)
    assert r["stop_reason"] == "harness_error" and "redirected" in r["error"]


def test_a_method_keeping_redirect_under_the_base_url_is_followed(tree, cache, server, tmp_path):
    server.script({"redirect": "/v1/chat/completions", "status": 307}, {"content": oracle_reply(tree, SHORT)})
    out = tmp_path / "o"
    assert run(tree, cache, server, out) == 0
    assert rec(out)["answer_state"] == "answered" and len(server.requests) == 2


# -- a condition file that is not the reference -------------------------------------------------------
def test_a_custom_condition_under_the_reference_name_is_marked_non_reference(tree, cache, server, tmp_path,
                                                                              capsys):
    """Same name and version as the reference file, another grid (2 fps, 600 stills): it prints as
    video-arena-a-v1, so the table itself must say it is not the benchmark's condition."""
    doc = json.loads(DEFAULT_CONDITION.read_text())
    doc["grid"].update(fps=2, max_frames=600)
    cond = tmp_path / "custom.json"
    cond.write_text(json.dumps(doc))
    server.script({"content": oracle_reply(tree, SHORT)})
    out = tmp_path / "o"
    assert run(tree, cache, server, out, "--condition", str(cond)) == 0
    assert "NON-REFERENCE" in capsys.readouterr().err
    rc, table = score(out, tree, capsys)
    assert rc == 0
    assert caveat_row(table)["non-ref"] == "1" and "NON-REFERENCE CONDITION: 1 Protocol A cell(s)" in table


def test_the_reference_condition_is_not_marked(tree, cache, server, tmp_path, capsys):
    server.script({"content": oracle_reply(tree, SHORT)})
    out = tmp_path / "o"
    assert run(tree, cache, server, out) == 0
    rc, table = score(out, tree, capsys)
    assert rc == 0 and caveat_row(table)["non-ref"] == "0" and "NON-REFERENCE" not in table
