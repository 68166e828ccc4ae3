"""Issue 22 on the Protocol A side: --extra-body may not change a condition field; run-a and run-b refuse
to resume into an --out written under another condition (naming the difference); request verification
and the media-hash check are on by default in `score`; a context overflow has its own column; every
Harbor --ak option of the ProtocolA agent reaches the request (the agent run against a local stand-in
for the container, the real openai client and the local test server over HTTP)."""
from __future__ import annotations

import asyncio
import contextlib
import io
import json
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from fixtures.openai_test_server import OpenAITestServer, VLLMLike, count_images
from fixtures.protocol_a_fixtures import cache, fast_retries, tree  # noqa: F401 (pytest fixtures)
from fixtures.protocol_a_tree import oracle_reply
from video_arena.digests import sha256_file
from video_arena.protocol_a import runner
from video_arena.core.provenance import verify_cell
from video_arena.scoring import cli as score_cli

SHORT, LONG = "paShort1", "paLong02"


@pytest.fixture
def server(tree):
    with OpenAITestServer(default={"content": oracle_reply(tree, SHORT)}) as srv:
        yield srv


def run_a(tree, cache, server, out, *extra, limit=True):
    argv = ["--model", "test-model", "--base-url", server.base_url, "--out", str(out), "--tasks-root", str(tree),
            "--cache-dir", str(cache), "--no-progress", *(["--limit", "1"] if limit else []), *extra]
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = runner.main(argv)
    return rc, err.getvalue()


def score(results, tree, *extra):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = score_cli.main([str(results), "--tasks-root", str(tree), "--quiet", "--bootstrap", "0", *extra])
    return rc, out.getvalue(), err.getvalue()


# -- --extra-body may not change a condition field ------------------------------------------------------
@pytest.mark.parametrize("extra,named", [
    ('{"temperature": 0.9, "max_tokens": 512}', "max_tokens, temperature"),
    ('{"model": "other"}', "model"),
    ('{"chat_template_kwargs": {"enable_thinking": true}}', "chat_template_kwargs.enable_thinking"),
    ('{"reasoning_effort": "high"}', "reasoning_effort"),
    ('{"max_completion_tokens": 10}', "max_completion_tokens"),
])
def test_extra_body_may_not_override_the_condition(tree, cache, server, tmp_path, extra, named):
    rc, err = run_a(tree, cache, server, tmp_path / "o", "--extra-body", extra)
    assert rc == 2 and not server.requests
    assert f"--extra-body may not set {named}" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_extra_body_of_other_keys_is_sent_and_recorded(tree, cache, server, tmp_path):
    rc, _ = run_a(tree, cache, server, tmp_path / "o", "--extra-body", '{"top_k": 1}')
    assert rc == 0 and server.requests[0]["body"]["top_k"] == 1
    run = json.loads((tmp_path / "o" / "chess" / SHORT / "run.json").read_text())
    assert run["request_params"]["extra_body"] == {"top_k": 1}
    assert server.requests[0]["body"]["temperature"] == run["request_params"]["temperature"] == 0


# -- resuming into another condition -------------------------------------------------------------------
@pytest.mark.parametrize("second,named", [
    (["--max-tokens", "512"], "max_tokens 48000 (recorded) vs 512 (this run)"),
    (["--enable-thinking", "true"], "enable_thinking null (recorded) vs true (this run)"),
    (["--reasoning-effort", "high"], "reasoning_effort null (recorded) vs high (this run)"),
    (["--extra-body", '{"top_k": 1}'], "extra_body_sha256 none (recorded)"),
    (["--model", "other-model"], "model test-model (recorded) vs other-model (this run)"),
])
def test_run_a_refuses_to_resume_into_another_condition(tree, cache, server, tmp_path, second, named):
    out = tmp_path / "o"
    assert run_a(tree, cache, server, out)[0] == 0
    argv = second if second[0] != "--model" else []
    rc, err = run_a(tree, cache, server, out, *argv) if argv else (None, None)
    if second[0] == "--model":
        err_io = io.StringIO()
        with contextlib.redirect_stderr(err_io):
            rc = runner.main(["--model", "other-model", "--base-url", server.base_url, "--out", str(out),
                              "--tasks-root", str(tree), "--cache-dir", str(cache), "--no-progress", "--limit", "1"])
        err = err_io.getvalue()
    assert rc == 2 and len(server.requests) == 1, err
    assert "finished cell of another condition" in err and named in err, err


def test_run_a_resumes_under_the_same_condition(tree, cache, server, tmp_path):
    out = tmp_path / "o"
    assert run_a(tree, cache, server, out)[0] == 0
    rc, err = run_a(tree, cache, server, out)
    assert rc == 0 and len(server.requests) == 1 and "1 already done" in err


def _run_b_resume(tree: Path, tmp_path: Path, recorded: dict, max_turns: int) -> tuple[int, str, Path]:
    """run-b into an --out holding one finished cell recorded with `recorded` on top of this run's settings."""
    from video_arena.protocol_b import runner as b_runner
    out = tmp_path / "b"
    cell = out / "chess" / SHORT
    cell.mkdir(parents=True)
    (cell / "run.json").write_text(json.dumps({
        "protocol": "B", "model": "m", "game": "chess", "case_id": SHORT, "stop_reason": "completed",
        "max_turns": 100, "timeout_min": 120, "agent_cmd": "true {prompt} {max_turns}",
        "isolation": {"mode": "none"}, "reasoning_effort": None} | recorded))
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = b_runner.main(["--agent-cmd", "true {prompt} {max_turns}", "--out", str(out), "--model", "m",
                            "--tasks-root", str(tree), "--limit", "1", "--max-turns", str(max_turns), "--no-isolation",
                            "--skip-preflight", "--no-progress", "--sandbox-root", str(tmp_path / "sb")])
    return rc, err.getvalue(), cell


def test_run_b_refuses_to_resume_into_another_condition(tree, tmp_path):
    rc, err, cell = _run_b_resume(tree, tmp_path, {}, 200)
    assert rc == 2, err
    assert "max_turns 100 (recorded) vs 200 (this run)" in err
    assert json.loads((cell / "run.json").read_text())["max_turns"] == 100  # nothing was run


def test_run_b_refuses_to_resume_across_a_judge_version(tree, tmp_path):
    """`score` refuses a table of two judge versions, so a resume that would make one is refused up front
    (not accepted, to be refused by `score` after the whole run)."""
    rc, err, _ = _run_b_resume(tree, tmp_path, {"toolkit": {"judge_version": "0.9"}}, 100)
    assert rc == 2, err
    assert "judge_version 0.9 (recorded) vs" in err


# -- verification and the media-hash check are on by default ---------------------------------------------
def _manifest(tree: Path, media_sha: str) -> None:
    (tree / "chess" / "manifest.json").write_text(json.dumps(
        {"format": "video-arena-cases-manifest/1", "game": "chess",
         "cases": [{"case_id": SHORT, "media_sha256": media_sha}]}))


def test_media_hash_check_reads_the_manifest(tree, cache, server, tmp_path):
    t = tmp_path / "t"
    shutil.copytree(tree, t)
    out = tmp_path / "o"
    assert run_a(t, cache, server, out)[0] == 0
    c = out / "chess" / SHORT
    _manifest(t, sha256_file(t / "chess" / "media" / f"{SHORT}.mp4"))
    assert verify_cell(c, t) == (True, "ok")
    _manifest(t, "0" * 64)  # the case's video is not the one the stills were sampled from
    ok, why = verify_cell(c, t)
    assert not ok and "other media than the case's" in why and "the manifest says 000000000000" in why


def test_score_verifies_requests_by_default_and_says_when_it_does_not(tree, cache, server, tmp_path):
    out = tmp_path / "o"
    assert run_a(tree, cache, server, out)[0] == 0
    c = out / "chess" / SHORT
    rc, text, err = score(out, tree)
    assert rc == 0 and "CAVEAT (--no-verify-requests)" not in text
    receipt = json.loads((c / "receipt.json").read_text())
    receipt["frames"][0]["sha256"] = "f" * 64  # a still that was not sent
    (c / "receipt.json").write_text(json.dumps(receipt))
    rc, text, err = score(out, tree, "--json", str(tmp_path / "s.json"))
    doc = json.loads((tmp_path / "s.json").read_text())
    cell = [x for x in doc["systems"][0]["cells"] if x["case_id"] == SHORT][0]
    assert cell["status"] == "unverified" and "request hash mismatch" in cell["reason"]
    assert doc["systems"][0]["requests_verified"] is True
    rc, text, err = score(out, tree, "--no-verify-requests", "--json", str(tmp_path / "s2.json"))
    assert rc == 0 and "CAVEAT (--no-verify-requests): 1 Protocol A cell(s) scored without rebuilding" in text
    doc = json.loads((tmp_path / "s2.json").read_text())
    assert doc["systems"][0]["requests_verified"] is False
    assert [x for x in doc["systems"][0]["cells"] if x["case_id"] == SHORT][0]["status"] == "scored"


# -- the table: a context overflow in its own column, an image-cap degradation counted ------------------------
def _table_row(text: str, game: str) -> dict[str, str]:
    hdr = next(ln for ln in text.splitlines() if ln.split()[:1] == ["game"])
    row = next(ln for ln in text.splitlines() if ln.split()[:1] == [game])
    names = hdr.split()
    return dict(zip(names[:8], row.split()[:8]))


def test_a_context_overflow_scores_zero_and_is_counted_in_its_own_column(tree, cache, tmp_path):
    """Issue 28, done when: a server that overflows on the longer half of the cases (the 256-still
    case) and answers the rest perfectly gives a game mean equal to the share of cells answered (the
    overflowed cell 0.0, not missing), and the table, the CSV and the JSON show the overflow count."""
    out = tmp_path / "o"

    def reply(body):
        return {"content": oracle_reply(tree, LONG if count_images(body) > 12 else SHORT)}

    with OpenAITestServer(default=VLLMLike(max_model_len=60000, reply=reply)) as srv:
        assert run_a(tree, cache, srv, out, limit=False)[0] == 0
    run = json.loads((out / "chess" / LONG / "run.json").read_text())
    assert run["stop_reason"] == "context_overflow" and run["on_overflow"] == "stop"
    rc, text, err = score(out, tree, "--csv", str(tmp_path / "g.csv"), "--json", str(tmp_path / "s.json"))
    assert rc == 0, err
    row = _table_row(text, "chess")
    assert row["scored"] == "2/2" and row["miss"] == "0" and row["ovfl"] == "1", text
    assert row["reward"] == "0.500" and row["fmt"] == "0", text     # 1 of 2 cells answered, the other 0.0
    import csv
    rows = {r["game"]: r for r in csv.DictReader((tmp_path / "g.csv").open())}
    assert rows["chess"]["context_overflow"] == "1" and rows["OVERALL"]["context_overflow"] == "1"
    assert float(rows["chess"]["reward"]) == 0.5 and float(rows["chess"]["t1_f1"]) == 0.5
    doc = json.loads((tmp_path / "s.json").read_text())["systems"][0]
    assert doc["games"]["chess"]["caveats"]["context_overflow"] == 1 and doc["context_overflow"] == 1
    [cell] = [c for c in doc["cells"] if c["case_id"] == LONG]
    assert cell["status"] == "scored" and cell["context_overflow"] is True
    assert (cell["reward"], cell["t1_f1"], cell["t2_zero_filled"], cell["t3_zero_filled"]) == (0.0, 0.0, 0.0, 0.0)
    rc, md, err = score(out, tree, "--report", "md")
    assert "| context overflow (0.0) |" in md and "| chess | 2/2 | 0 | 0 | 0 | 1 |" in md, md


def test_on_overflow_is_a_compared_condition_field(tree, cache, tmp_path):
    """stop and degrade are two conditions: resuming one into the other's --out is refused, and a
    table holding both is refused by score (--allow-mixed: a DIAGNOSTIC naming on_overflow)."""
    out = tmp_path / "o"

    def reply(body):
        return {"content": oracle_reply(tree, LONG if count_images(body) > 12 else SHORT)}

    with OpenAITestServer(default=VLLMLike(max_model_len=60000, reply=reply)) as srv:
        assert run_a(tree, cache, srv, out)[0] == 0   # --limit 1: the short case
        rc, err = run_a(tree, cache, srv, out, "--on-overflow", "degrade", limit=False)
        assert rc == 2 and "on_overflow stop (recorded) vs degrade (this run)" in err, err
    run = json.loads((out / "chess" / SHORT / "run.json").read_text())
    run["on_overflow"] = "degrade"   # as if written by a run with --on-overflow degrade
    (out / "chess" / "paLong02").mkdir()
    (out / "chess" / "paLong02" / "run.json").write_text(json.dumps(dict(run, case_id=LONG)))
    (out / "chess" / "paLong02" / "answer.json").write_text((out / "chess" / SHORT / "answer.json").read_text())
    run["on_overflow"] = "stop"
    (out / "chess" / SHORT / "run.json").write_text(json.dumps(run))
    rc, text, err = score(out, tree, "--no-verify-requests")
    assert rc == 2 and "on_overflow: " in err, err


def test_score_shows_an_image_cap_as_a_degradation_not_a_mix(tree, cache, tmp_path):
    out = tmp_path / "o"

    def reply(body):
        return {"content": oracle_reply(tree, LONG if count_images(body) > 12 else SHORT)}

    with OpenAITestServer(default=VLLMLike(max_images=64, reply=reply)) as srv:
        assert run_a(tree, cache, srv, out, limit=False)[0] == 0
    rc, text, err = score(out, tree, "--cells-csv", str(tmp_path / "c.csv"))
    assert rc == 0 and "REFUSED" not in err, err
    import csv
    cells = {r["case_id"]: r for r in csv.DictReader((tmp_path / "c.csv").open())}
    assert cells[LONG]["status"] == "scored" and cells[LONG]["degradations"] == "max_frames"
    assert cells[LONG]["grid"] == cells[SHORT]["grid"] == "fps1-n256-ls768-q4"


# -- every Harbor --ak option of the ProtocolA agent ----------------------------------------------------------
class LocalEnvironment:
    """Harbor's environment interface over the local machine (the container's /app and /tmp/va_a are
    folders under `root`): what ProtocolA needs of it (exec, download_file, download_dir, upload_file)."""

    def __init__(self, root: Path):
        self.root = root

    async def exec(self, command, cwd=None, env=None, timeout_sec=None, user=None):
        p = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=timeout_sec)
        return SimpleNamespace(return_code=p.returncode, stdout=p.stdout, stderr=p.stderr)

    async def download_file(self, source_path, target_path):
        shutil.copyfile(source_path, target_path)

    async def download_dir(self, source_dir, target_dir):
        shutil.copytree(source_dir, target_dir, dirs_exist_ok=True)

    async def upload_file(self, source_path, target_path):
        shutil.copyfile(source_path, target_path)


def run_agent(tree, tmp_path, server, monkeypatch, **ak):
    from harbor.models.agent.context import AgentContext

    from video_arena.protocol_a import harbor_agent as HA
    root = tmp_path / "container"
    (root / "app").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(tree / "chess" / "media" / f"{SHORT}.mp4", root / "app" / "match.mp4")
    (root / "app" / "answer.json").write_text('{"events": []}')
    monkeypatch.setattr(HA, "MEDIA", str(root / "app" / "match.mp4"))
    monkeypatch.setattr(HA, "ANSWER", str(root / "app" / "answer.json"))
    monkeypatch.setattr(HA, "WORK", str(root / "tmp" / "va_a"))
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    logs = tmp_path / f"chess-{SHORT}__abc" / "agent"
    logs.mkdir(parents=True, exist_ok=True)
    agent = HA.ProtocolA(logs_dir=logs, model_name="openai/test-model", **ak)
    instruction = (tree / "chess" / "instruction.md").read_text()
    from video_arena.core.instruction import instruction_for
    ctx = AgentContext()
    asyncio.run(agent.run(instruction_for("video", tree / "chess" / "instruction.md") if instruction else "",
                          LocalEnvironment(root), ctx))
    return json.loads((logs / "run.json").read_text()), server.requests[-1]["body"], root, ctx


@pytest.mark.parametrize("ak,check", [
    ({"enable_thinking": "true"},
     lambda run, body: body["chat_template_kwargs"] == {"enable_thinking": True} and run["enable_thinking"] is True),
    ({"enable_thinking": "false"},
     lambda run, body: body["chat_template_kwargs"] == {"enable_thinking": False}),
    ({"temperature": "0.7"},
     lambda run, body: body["temperature"] == 0.7 and run["request_params"]["temperature"] == 0.7),
    ({"extra_body": '{"top_k": 1, "repetition_penalty": 1.05}'},
     lambda run, body: body["top_k"] == 1 and body["repetition_penalty"] == 1.05
     and run["request_params"]["extra_body"] == {"top_k": 1, "repetition_penalty": 1.05}),
    ({"jpeg_q": "6"},
     lambda run, body: run["sampling"]["jpeg_q"] == 6 and run["degradations"][0]["kind"] == "jpeg_q"
     and run["degradations"][0]["why"] == "set by the operator"),
    ({"max_frames": "5"},
     lambda run, body: count_images(body) == 5 and run["frames_used"] == 5
     and run["degradations"][0]["kind"] == "max_frames"),
])
def test_every_harbor_ak_option_reaches_the_request(tree, tmp_path, server, monkeypatch, ak, check):
    run, body, root, ctx = run_agent(tree, tmp_path, server, monkeypatch, **ak)
    assert run["runner"] == "harbor" and run["answer_state"] == "answered"
    assert check(run, body), (ak, run, {k: v for k, v in body.items() if k != "messages"})
    assert json.loads((root / "app" / "answer.json").read_text())["events"]  # the answer was put in place
    assert ctx.metadata["stop_reason"] == "stop"


def test_harbor_extra_body_may_not_override_the_condition(tmp_path):
    from video_arena.protocol_a import harbor_agent as HA
    with pytest.raises(ValueError, match="may not set temperature"):
        HA.ProtocolA(logs_dir=tmp_path, model_name="openai/m", extra_body='{"temperature": 1}')


def test_a_harbor_trial_with_a_custom_condition_file_is_verified_like_a_native_cell(tree, tmp_path, server,
                                                                                   monkeypatch):
    """Issue 28: `--ak condition=custom.json` made every trial unverified (the condition is not a
    versioned file and the job did not hold it).  The agent now keeps it in agent/_conditions/, so the
    request rebuilds from the job alone; a changed copy is refused (the check is not vacuous)."""
    from video_arena.core.condition import CONDITIONS_SUBDIR, DEFAULT_CONDITION
    cond = json.loads(DEFAULT_CONDITION.read_text())
    cond.update(name="harbor-custom", description="not a versioned condition file")
    custom = tmp_path / "custom.json"
    custom.write_text(json.dumps(cond))
    run, body, root, ctx = run_agent(tree, tmp_path, server, monkeypatch, condition=str(custom))
    agent_dir = tmp_path / f"chess-{SHORT}__abc" / "agent"
    assert run["condition"].startswith("harbor-custom") and (agent_dir / CONDITIONS_SUBDIR / f"{run['condition_sha256']}.json").is_file()
    custom.unlink()   # the host's file is gone: the job alone must hold what verification needs
    assert verify_cell(agent_dir, tree) == (True, "ok")
    copy = agent_dir / CONDITIONS_SUBDIR / f"{run['condition_sha256']}.json"
    copy.write_text(json.dumps(dict(cond, max_tokens=7)))
    ok, why = verify_cell(agent_dir, tree)
    assert not ok and "not the one it is named by" in why


def test_harbor_agent_honours_server_limits(tree, tmp_path, monkeypatch):
    from video_arena.protocol_a import harbor_agent as HA
    with OpenAITestServer(default=VLLMLike(max_images=5, reply={"content": oracle_reply(tree, SHORT)})) as srv:
        run, body, _, _ = run_agent(tree, tmp_path / "cap", srv, monkeypatch)
        assert [count_images(q["body"]) for q in srv.requests] == [12, 5] and run["frames_used"] == 5
    with OpenAITestServer(default=VLLMLike(max_model_len=20000, reply={"content": oracle_reply(tree, SHORT)})) as srv:
        with pytest.raises(HA.ContextOverflowError):
            run_agent(tree, tmp_path / "ovfl", srv, monkeypatch, max_tokens="18000")
        assert len(srv.requests) == 1
        run, body, _, _ = run_agent(tree, tmp_path / "deg", srv, monkeypatch, max_tokens="18000",
                                    on_overflow="degrade")
        assert run["answer_state"] == "answered" and run["frames_used"] < 12 and run["on_overflow"] == "degrade"
