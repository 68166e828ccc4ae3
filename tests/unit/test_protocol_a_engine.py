"""The Protocol A request engine and runner, with the real openai client over real HTTP against
the local test server (tests/fixtures/openai_test_server.py): retries, redraws, truncation,
several JSON blocks, huge replies, degradations, the request hash, resumability."""
from __future__ import annotations

import base64
import hashlib
import json
import subprocess
from pathlib import Path

import pytest

from fixtures.protocol_a_fixtures import cache, fast_retries, server, tree  # noqa: F401 (pytest fixtures)
from fixtures.protocol_a_tree import oracle_reply
from video_arena.protocol_a import runner
from video_arena.core.condition import DEFAULT_CONDITION, load_condition
from video_arena.core.request import IMAGE_REF, MP4_REF, request_sha256
from video_arena.core.provenance import verify_cell

SHORT, LONG = "paShort1", "paLong02"


def condition(tmp_path: Path, **changes) -> Path:
    doc = json.loads(DEFAULT_CONDITION.read_text())
    for dotted, v in changes.items():
        d = doc
        *head, last = dotted.split("__")
        for k in head:
            d = d[k]
        d[last] = v
    p = tmp_path / "condition.json"
    p.write_text(json.dumps(doc))
    return p


def run(tree, cache, server, out, *extra, case=SHORT):
    argv = ["--model", "test-model", "--base-url", server.base_url, "--out", str(out), "--tasks-root", str(tree),
            "--cache-dir", str(cache), "--no-progress", *extra]
    if case:
        argv += ["--limit", "1"] if case == SHORT else []
    rc = runner.main(argv)
    return rc


def cell(out, case=SHORT) -> Path:
    return Path(out) / "chess" / case


def rec(out, case=SHORT) -> dict:
    return json.loads((cell(out, case) / "run.json").read_text())


def hashed(body: dict) -> dict:
    """The received body with every data URL replaced by the SHA-256 of its bytes."""
    body = json.loads(json.dumps(body))
    for m in body["messages"]:
        if isinstance(m["content"], list):
            for part in m["content"]:
                if part["type"] == "image_url":
                    data = base64.b64decode(part["image_url"]["url"].split(",", 1)[1])
                    part["image_url"]["url"] = IMAGE_REF + hashlib.sha256(data).hexdigest()
    return body


def images(body: dict) -> list[bytes]:
    return [base64.b64decode(p["image_url"]["url"].split(",", 1)[1])
            for p in body["messages"][-1]["content"] if p["type"] == "image_url"]


# ------------------------------------------------------------------------------------------------

def test_one_request_answer_and_records(tree, cache, server, tmp_path):
    server.script({"content": oracle_reply(tree, SHORT), "usage": {"prompt_tokens": 5000, "completion_tokens": 321,
                                                                   "total_tokens": 5321}})
    out = tmp_path / "out"
    assert run(tree, cache, server, out, "--reasoning-effort", "high", "--enable-thinking", "false",
               "--extra-body", '{"top_k": 1, "chat_template_kwargs": {"foo": 1}}') == 0
    assert len(server.requests) == 1
    body = server.requests[0]["body"]
    r = rec(out)
    # the request: text first, then the 12 stills in order, the condition's generation settings
    content = body["messages"][0]["content"]
    assert [p["type"] for p in content] == ["text"] + ["image_url"] * 12
    assert body["max_tokens"] == 48000 and body["temperature"] == 0 and body["model"] == "test-model"
    assert body["reasoning_effort"] == "high" and body["top_k"] == 1
    assert body["chat_template_kwargs"] == {"foo": 1, "enable_thinking": False}
    assert "video_ts = [0,1,2,3,4,5,6,7,8,9,10,11]" in content[0]["text"]
    assert content[0]["text"] == (cell(out) / "prompt.txt").read_text()
    receipt = json.loads((cell(out) / "receipt.json").read_text())
    assert [hashlib.sha256(b).hexdigest() for b in images(body)] == [f["sha256"] for f in receipt["frames"]]
    # the request hash is the hash of what was sent, each image replaced by its own SHA-256
    assert request_sha256(hashed(body)) == r["request_sha256"] == receipt["request_sha256"]
    # the answer: the block with the most rows, not the one-row sketch
    ans = json.loads((cell(out) / "answer.json").read_text())
    assert len(ans["events"]) == 4 and ans["events"][0]["where"] == "e4"
    assert r["answer_state"] == "answered" and r["n_rows"] == 4 and r["n_json_blocks"] == 2
    assert r["stop_reason"] == "stop" and r["protocol_complete"] is True
    assert r["frames_used"] == 12 and r["fps_eff"] == 1.0 and r["t1_recall_ceiling"] == 1.0
    assert r["sampling"] == {"fps": 1.0, "jpeg_q": 4, "max_frames": 256, "longest_side": 768}
    assert r["usage"]["completion_tokens"] == 321 and r["reasoning_effort"] == "high"
    assert r["enable_thinking"] is False and r["degradations"] == []
    assert r["condition_sha256"] == load_condition().sha256
    assert r["instruction_sha256"] and r["wall_s"] >= 0 and r["protocol"] == "A"
    assert r["format"] == "video-arena-run/1" and r["game_version"] == 1  # the tree's game.toml version
    assert (cell(out) / "reply.txt").read_text() == oracle_reply(tree, SHORT)
    assert verify_cell(cell(out), tree) == (True, "ok")


def test_rate_limits_and_timeouts_retry_1_2_4(tree, cache, server, tmp_path):
    cond = condition(tmp_path, request_timeout_s=1.0)
    server.script({"status": 429}, {"hang": 2.5}, {"close": True}, {"content": oracle_reply(tree, SHORT)})
    assert run(tree, cache, server, tmp_path / "o", "--condition", str(cond)) == 0
    r = rec(tmp_path / "o")
    assert [a.get("error") for a in r["attempts"]] == ["rate_limit", "timeout", "timeout", None]
    assert [a.get("retry_after_s") for a in r["attempts"][:3]] == pytest.approx([0.001, 0.002, 0.004])
    assert r["answer_state"] == "answered" and len(server.requests) == 4
    assert r["retry_scale"] == 0.001


def test_server_errors_retry_10_20_40_then_harness_error(tree, cache, server, tmp_path):
    server.script({"status": 500}, {"status": 503}, {"status": 502}, {"status": 500},
                  {"content": oracle_reply(tree, SHORT)})
    out = tmp_path / "o"
    assert run(tree, cache, server, out) == 0
    r = rec(out)
    assert r["stop_reason"] == "harness_error" and r["answer_state"] is None
    assert [a["retry_after_s"] for a in r["attempts"][:3]] == pytest.approx([0.01, 0.02, 0.04])
    assert len(server.requests) == 4  # 1 + 3 retries, then the cell is missing
    assert not (cell(out) / "answer.json").exists()
    assert verify_cell(cell(out), tree)[0] is False
    # resumable: a harness_error cell is run again, a finished cell is not
    assert run(tree, cache, server, out) == 0
    assert len(server.requests) == 5 and rec(out)["answer_state"] == "answered"
    assert run(tree, cache, server, out) == 0
    assert len(server.requests) == 5
    assert run(tree, cache, server, out, "--force") == 0
    assert len(server.requests) == 6


def test_client_errors_are_not_retried(tree, cache, server, tmp_path):
    server.script({"status": 401, "error": "bad key"})
    out = tmp_path / "o"
    assert run(tree, cache, server, out) == 0
    r = rec(out)
    assert r["stop_reason"] == "harness_error" and "401" in r["error"] and len(server.requests) == 1


def test_empty_reply_is_redrawn_within_the_budget(tree, cache, server, tmp_path):
    server.script({"content": ""}, {"no_choices": True},
                  {"content": "", "finish_reason": "length", "reasoning_content": "thinking..."},
                  {"content": oracle_reply(tree, SHORT)})
    out = tmp_path / "o"
    assert run(tree, cache, server, out) == 0
    r = rec(out)
    assert len(server.requests) == 4 and r["answer_state"] == "answered"
    assert [a["visible"] for a in r["attempts"]] == [False, False, False, True]
    assert r["protocol_complete"] is True  # the recorded answer did not hit the guard
    assert all(request_sha256(hashed(q["body"])) == r["request_sha256"] for q in server.requests)


def test_never_visible_is_no_answer_not_missing(tree, cache, server, tmp_path):
    server.script(*[{"content": "  \n", "finish_reason": "length"}] * 4)
    out = tmp_path / "o"
    assert run(tree, cache, server, out) == 0
    r = rec(out)
    assert len(server.requests) == 4
    assert r["stop_reason"] == "empty" and r["answer_state"] == "no_answer" and r["n_rows"] == 0
    assert r["protocol_complete"] is False
    assert json.loads((cell(out) / "answer.json").read_text()) == {"events": []}
    assert verify_cell(cell(out), tree) == (True, "ok")


def test_truncated_reply_is_not_protocol_complete(tree, cache, server, tmp_path):
    full = oracle_reply(tree, SHORT, prose=False)
    server.script({"content": full[: len(full) // 2], "finish_reason": "length"})
    out = tmp_path / "o"
    assert run(tree, cache, server, out, "--max-tokens", "100") == 0
    r = rec(out)
    assert server.requests[0]["body"]["max_tokens"] == 100
    assert r["stop_reason"] == "length" and r["protocol_complete"] is False
    assert r["answer_state"] == "no_answer" and r["n_json_blocks"] == 0 and len(server.requests) == 1
    assert r["request_params"]["max_tokens"] == 100
    assert verify_cell(cell(out), tree) == (True, "ok")


def test_several_blocks_take_the_most_rows_ties_last(tree, cache, server, tmp_path):
    row = '{"t": %d, "type": "move", "actor": "white", "where": "e4", "delta": "flat", "state": "even"}'
    reply = ("```json\n{\"events\": []}\n```\n" + '{"events": [%s, %s]}\n' % (row % 1, row % 2)
             + '{"events": [%s, %s]} trailing prose' % (row % 7, row % 8) + ' {"note": 1}')
    server.script({"content": reply})
    out = tmp_path / "o"
    assert run(tree, cache, server, out) == 0
    r = rec(out)
    assert r["n_json_blocks"] == 3 and r["n_rows"] == 2
    assert [e["t"] for e in json.loads((cell(out) / "answer.json").read_text())["events"]] == [7, 8]


def test_huge_reply(tree, cache, server, tmp_path):
    row = {"t": 1.0, "type": "move", "actor": "white", "where": "e4", "delta": "flat", "state": "even"}
    reply = "x" * 3_000_000 + json.dumps({"events": [row] * 20000})
    server.script({"content": reply})
    out = tmp_path / "o"
    assert run(tree, cache, server, out) == 0
    r = rec(out)
    assert r["n_rows"] == 20000 and (cell(out) / "reply.txt").stat().st_size == len(reply)


def test_body_over_the_cap_raises_jpeg_q_stepwise(tree, cache, server, tmp_path):
    # find the body size at q4 and q5, then cap between q5 and q4 - so q5 is the first that fits
    sizes = {}
    for q in (4, 5, 6):
        out = tmp_path / f"q{q}"
        server.script({"content": "{}"})
        run(tree, cache, server, out, "--jpeg-q", str(q))
        sizes[q] = rec(out)["body_bytes"]
    assert sizes[4] > sizes[5] > sizes[6]
    cond = condition(tmp_path, body_cap_bytes=sizes[6] + 1)
    n0 = len(server.requests)
    out = tmp_path / "capped"
    assert run(tree, cache, server, out, "--condition", str(cond)) == 0
    r = rec(out)
    assert len(server.requests) == n0 + 1  # nothing over the cap is ever sent
    assert server.requests[-1]["raw_bytes"] <= sizes[6] + 1
    assert r["sampling"]["jpeg_q"] == 6
    assert [(d["kind"], d["from"], d["to"]) for d in r["degradations"]] == [("jpeg_q", 4, 5), ("jpeg_q", 5, 6)]
    assert r["degraded"] is True
    assert verify_cell(cell(out), tree) == (True, "ok")
    # an operator --jpeg-q is a recorded degradation too
    assert rec(tmp_path / "q5")["degradations"][0]["kind"] == "jpeg_q"
    # at the condition's maximum the cell is missing, not silently oversized
    cond = condition(tmp_path, body_cap_bytes=1000, jpeg_q_fallback={"step": 2, "max": 8})
    out = tmp_path / "toobig"
    assert run(tree, cache, server, out, "--condition", str(cond)) == 0
    r = rec(out)
    assert r["stop_reason"] == "harness_error" and "maximum" in r["error"]
    assert [d["to"] for d in r["degradations"]] == [6, 8]


def test_http_413_raises_jpeg_q(tree, cache, server, tmp_path):
    server.script({"status": 413, "error": "Request Entity Too Large"}, {"content": oracle_reply(tree, SHORT)})
    out = tmp_path / "o"
    assert run(tree, cache, server, out) == 0
    r = rec(out)
    assert r["answer_state"] == "answered" and r["sampling"]["jpeg_q"] == 5
    a, b = (images(q["body"]) for q in server.requests)
    assert len(a) == len(b) == 12 and sum(map(len, b)) < sum(map(len, a))


def test_provider_image_cap_drops_frames_uniformly(tree, cache, server, tmp_path):
    def provider(body):  # a provider that takes at most 250 images per request
        n = len(images(body))
        if n > 250:
            return {"status": 400, "error": f"Too many images in request: {n}, maximum allowed: 250"}
        return {"content": oracle_reply(tree, LONG if n > 12 else SHORT)}

    server.default = provider
    out = tmp_path / "o"
    assert runner.main(["--model", "m", "--base-url", server.base_url, "--out", str(out), "--tasks-root",
                        str(tree), "--cache-dir", str(cache), "--no-progress"]) == 0
    r = rec(out, LONG)
    counts = sorted(len(images(q["body"])) for q in server.requests)
    assert counts == [12, 250, 256]
    assert r["frames_used"] == 250 and r["sampling"]["max_frames"] == 250
    assert r["fps_eff"] == pytest.approx(250 / 300.5)
    assert r["t1_recall_ceiling"] == pytest.approx(min(1, 6 * 250 / 300.5))
    assert r["degradations"][0]["kind"] == "max_frames" and r["degradations"][0]["to"] == 250
    assert rec(out, SHORT)["degradations"] == []
    ts = json.loads((cell(out, LONG) / "receipt.json").read_text())["video_ts"]
    assert ts[1] == pytest.approx(300.5 / 250) and ts[-1] == pytest.approx(300.5 * 249 / 250)
    assert verify_cell(cell(out, LONG), tree) == (True, "ok")


def test_long_match_grid_and_ceiling(tree, cache, server, tmp_path):
    server.script({"content": oracle_reply(tree, LONG)})
    out = tmp_path / "o"
    assert runner.main(["--model", "m", "--base-url", server.base_url, "--out", str(out), "--tasks-root",
                        str(tree), "--cache-dir", str(cache), "--no-progress", "--games", "chess",
                        "--workers", "2"]) == 0
    r = rec(out, LONG)
    assert r["frames_used"] == 256 and r["fps_eff"] == pytest.approx(256 / 300.5)
    assert r["t1_recall_ceiling"] == pytest.approx(min(1, 6 * 256 / 300.5))
    assert sorted(len(images(q["body"])) for q in server.requests) == [12, 256]
    assert rec(out, SHORT)["frames_used"] == 12


def test_mp4_transport(tree, cache, server, tmp_path):
    cond = condition(tmp_path, transport={"kind": "mp4", "image_detail": None})
    out = tmp_path / "o"
    assert run(tree, cache, server, out, "--condition", str(cond)) == 0
    body = server.requests[0]["body"]
    parts = body["messages"][0]["content"]
    assert [p["type"] for p in parts] == ["text", "video_url"]
    url = parts[1]["video_url"]["url"]
    assert url.startswith("data:video/mp4;base64,")
    mp4 = tmp_path / "sent.mp4"
    mp4.write_bytes(base64.b64decode(url.split(",", 1)[1]))
    n = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                        "stream=nb_read_frames,r_frame_rate", "-of", "json", str(mp4)],
                       capture_output=True, text=True, check=True)
    st = json.loads(n.stdout)["streams"][0]
    assert st["nb_read_frames"] == "12" and st["r_frame_rate"] == "1/1"
    r = rec(out)
    receipt = json.loads((cell(out) / "receipt.json").read_text())
    assert receipt["mp4_sha256"] == hashlib.sha256(mp4.read_bytes()).hexdigest()
    ref = json.loads(json.dumps(body))
    ref["messages"][0]["content"][1]["video_url"]["url"] = MP4_REF + ",".join(f["sha256"] for f in receipt["frames"])
    assert request_sha256(ref) == r["request_sha256"]
    assert verify_cell(cell(out), tree) == (True, "ok")


def test_verify_cell_refuses_tampered_cells(tree, cache, server, tmp_path):
    server.script({"content": oracle_reply(tree, SHORT)})
    out = tmp_path / "o"
    assert run(tree, cache, server, out) == 0
    c = cell(out)
    assert verify_cell(c, tree) == (True, "ok")
    pristine = {p.name: p.read_bytes() for p in c.iterdir()}

    def restore():
        for name, data in pristine.items():
            (c / name).write_bytes(data)

    def edit(name, fn):
        doc = json.loads((c / name).read_text())
        fn(doc)
        (c / name).write_text(json.dumps(doc))

    cases = [
        ("answer.json", lambda d: d["events"].pop(), "answer.json is not the answer"),
        ("run.json", lambda d: d["request_params"].update(model="other"), "request hash mismatch"),
        ("run.json", lambda d: d.update(request_sha256="0" * 64), "request hash mismatch"),
        ("receipt.json", lambda d: d["frames"][3].update(sha256="f" * 64), "request hash mismatch"),
        ("receipt.json", lambda d: d.update(video_ts=[t + 0.5 for t in d["video_ts"]]), "video_ts"),
        ("run.json", lambda d: d.update(condition_sha256="ab" * 32), "condition"),
        ("run.json", lambda d: d["sampling"].update(jpeg_q=6), "no degradation is recorded"),
    ]
    for name, fn, why in cases:
        edit(name, fn)
        ok, reason = verify_cell(c, tree)
        assert not ok and why in reason, (name, reason)
        restore()
    assert verify_cell(c, tree) == (True, "ok")
    # the instruction the case now has differs from the one delivered
    tree2 = tmp_path / "tree2"
    import shutil
    shutil.copytree(tree, tree2)
    p = tree2 / "chess" / "instruction.md"
    p.write_text(p.read_text() + "\nExtra line.\n")
    ok, reason = verify_cell(c, tree2)
    assert not ok and "instruction digest" in reason


def test_runner_refuses_mixing_models_in_one_out(tree, cache, server, tmp_path):
    out = tmp_path / "o"
    assert run(tree, cache, server, out) == 0
    rc = runner.main(["--model", "another", "--base-url", server.base_url, "--out", str(out), "--tasks-root",
                      str(tree), "--cache-dir", str(cache), "--no-progress", "--limit", "1"])
    assert rc == 2 and len(server.requests) == 1


def test_missing_media_is_harness_error(tree, cache, server, tmp_path):
    import shutil
    t2 = tmp_path / "t"
    shutil.copytree(tree, t2)
    (t2 / "chess" / "media" / f"{SHORT}.mp4").unlink()
    out = tmp_path / "o"
    assert run(t2, cache, server, out) == 0
    r = rec(out)
    assert r["stop_reason"] == "harness_error" and "missing" in r["error"] and not server.requests


# -- replies that are not replies (a 200 that is not a chat completion is a transport error) ----------

HTML = "<!doctype html><html><head><title>Sign in</title></head><body>proxy login</body></html>"


def test_a_200_that_is_not_a_chat_completion_is_retried_then_missing(tree, cache, server, tmp_path):
    server.script({"raw": HTML}, {"choices": "oops"}, {"message": None}, {"raw": '{"error": {"message": "x"}}',
                                                                          "content_type": "application/json"})
    out = tmp_path / "o"
    assert run(tree, cache, server, out) == 0
    r = rec(out)
    assert len(server.requests) == 4
    assert [a["error"] for a in r["attempts"]] == ["bad_reply"] * 4
    assert [a.get("retry_after_s") for a in r["attempts"][:3]] == pytest.approx([0.001, 0.002, 0.004])
    assert "not JSON" in r["attempts"][0]["message"] and "choices is str" in r["attempts"][1]["message"]
    assert "message is null" in r["attempts"][2]["message"] and "no choices" in r["attempts"][3]["message"]
    # missing (stop_reason harness_error, no answer.json), never an "empty" / "no_answer" 0.0
    assert r["stop_reason"] == "harness_error" and r["answer_state"] is None
    assert not (cell(out) / "answer.json").exists()


def test_a_bad_reply_then_a_good_one_is_answered(tree, cache, server, tmp_path):
    server.script({"raw": HTML}, {"content": oracle_reply(tree, SHORT)})
    out = tmp_path / "o"
    assert run(tree, cache, server, out) == 0
    r = rec(out)
    assert [a.get("error") for a in r["attempts"]] == ["bad_reply", None]
    assert r["answer_state"] == "answered" and r["n_rows"] == 4
    assert verify_cell(cell(out), tree) == (True, "ok")


def test_content_as_a_list_of_parts_is_joined(tree, cache, server, tmp_path):
    text = oracle_reply(tree, SHORT)
    cut = len(text) // 2
    server.script({"content": [{"type": "text", "text": text[:cut]}, {"type": "image_url", "image_url": {"url": "x"}},
                               {"type": "output_text", "text": text[cut:]}]})
    out = tmp_path / "o"
    assert run(tree, cache, server, out) == 0
    r = rec(out)
    assert r["answer_state"] == "answered" and r["n_rows"] == 4 and len(server.requests) == 1
    assert (cell(out) / "reply.txt").read_text() == text
    assert verify_cell(cell(out), tree) == (True, "ok")


@pytest.mark.parametrize("content", [42, {"text": "{}"}, True, [{"type": "text", "text": 7}], [3]])
def test_content_of_a_wrong_type_is_a_transport_error_not_a_crash(tree, cache, server, tmp_path, content):
    server.script(*[{"content": content}] * 4)
    out = tmp_path / "o"
    assert run(tree, cache, server, out) == 0
    r = rec(out)
    assert [a["error"] for a in r["attempts"]] == ["bad_reply"] * 4
    assert r["stop_reason"] == "harness_error" and not (cell(out) / "answer.json").exists()


def test_a_lone_surrogate_is_written_safely(tree, cache, server, tmp_path):
    text = "\ud800 prose \udfff\n" + oracle_reply(tree, SHORT)
    server.script({"content": text, "reasoning_content": "think \udc00"})
    out = tmp_path / "o"
    assert run(tree, cache, server, out) == 0
    r = rec(out)
    assert r["answer_state"] == "answered" and r["n_rows"] == 4
    assert r["reply_lone_surrogates_replaced"] == 2
    reply = (cell(out) / "reply.txt").read_text(encoding="utf-8")
    assert reply.startswith("\ufffd prose \ufffd\n") and reply.endswith(oracle_reply(tree, SHORT))
    assert (cell(out) / "reasoning.txt").read_text(encoding="utf-8") == "think \ufffd"
    assert verify_cell(cell(out), tree) == (True, "ok")


def test_the_request_timeout_bounds_the_whole_call(tree, cache, server, tmp_path):
    # a server sending one byte every 0.25 s: each read is quick, the whole reply would take ~75 s
    cond = condition(tmp_path, request_timeout_s=1.0, retry__max_retries=1)
    server.script({"content": oracle_reply(tree, SHORT), "drip": 0.25}, {"content": oracle_reply(tree, SHORT),
                                                                          "drip": 0.25})
    out = tmp_path / "o"
    assert run(tree, cache, server, out, "--condition", str(cond)) == 0
    r = rec(out)
    assert [a["error"] for a in r["attempts"]] == ["timeout", "timeout"]
    assert all(a["wall_s"] < 2.0 for a in r["attempts"]), r["attempts"]  # the deadline, not 75 s
    assert r["stop_reason"] == "harness_error"


def test_a_connection_dropped_mid_body_is_a_transport_error(tree, cache, server, tmp_path):
    server.script({"content": oracle_reply(tree, SHORT), "drip": 0.001, "drip_bytes": 150},
                  {"content": oracle_reply(tree, SHORT)})
    out = tmp_path / "o"
    assert run(tree, cache, server, out) == 0
    r = rec(out)
    assert [a.get("error") for a in r["attempts"]] == ["timeout", None] and r["answer_state"] == "answered"


def test_each_retry_schedule_has_its_own_counter(tree, cache, server, tmp_path):
    # a 5xx after a 429 waits the 5xx schedule's first step (10 s, scaled), not its second (20 s)
    server.script({"status": 429}, {"status": 500}, {"status": 429}, {"content": oracle_reply(tree, SHORT)})
    out = tmp_path / "o"
    assert run(tree, cache, server, out) == 0
    r = rec(out)
    assert [a.get("error") for a in r["attempts"]] == ["rate_limit", "server", "rate_limit", None]
    assert [a.get("retry_after_s") for a in r["attempts"][:3]] == pytest.approx([0.001, 0.01, 0.002])
    assert r["answer_state"] == "answered"


def test_a_servers_retry_after_is_honoured_capped_and_recorded(tree, cache, server, tmp_path):
    """A gateway's 429 asking for 30 s waits 30 s (scaled), not the schedule's 1 s (which would spend the
    budget while the server is still refusing); 'retry-after-ms' and an HTTP date are read too; a 5xx asking
    for an hour waits the cap; an unreadable header leaves the schedule."""
    import email.utils
    import time as _time

    from video_arena.protocol_a import engine as EN

    date = email.utils.formatdate(_time.time() + 60, usegmt=True)
    server.script({"status": 429, "headers": {"Retry-After": "30"}},
                  {"status": 429, "headers": {"retry-after-ms": "4500"}},
                  {"status": 503, "headers": {"Retry-After": "3600"}},
                  {"content": oracle_reply(tree, SHORT)})
    out = tmp_path / "o"
    assert run(tree, cache, server, out) == 0
    r = rec(out)
    assert [a.get("error") for a in r["attempts"]] == ["rate_limit", "rate_limit", "server", None]
    assert [a.get("retry_after_header_s") for a in r["attempts"][:3]] == [30.0, 4.5, 3600.0]
    assert [a.get("retry_after_s") for a in r["attempts"][:3]] == pytest.approx(
        [0.03, 0.0045, EN.MAX_RETRY_AFTER_S * 0.001])
    assert r["answer_state"] == "answered"
    server.script({"status": 429, "headers": {"Retry-After": date}}, {"status": 429, "headers": {"Retry-After": "soon"}},
                  {"content": oracle_reply(tree, SHORT)})
    out2 = tmp_path / "o2"
    assert run(tree, cache, server, out2) == 0
    a = rec(out2)["attempts"]
    assert 55 <= a[0]["retry_after_header_s"] <= 60 and a[0]["retry_after_s"] == pytest.approx(
        a[0]["retry_after_header_s"] * 0.001, rel=0.05)
    assert "retry_after_header_s" not in a[1] and a[1]["retry_after_s"] == pytest.approx(0.002)


def test_run_records_carry_the_toolkit_provenance(tree, cache, server, tmp_path):
    from video_arena.toolkit_info import toolkit_provenance

    server.script({"status": 401}, {"content": oracle_reply(tree, SHORT)})
    out = tmp_path / "o"
    assert run(tree, cache, server, out) == 0
    assert rec(out)["stop_reason"] == "harness_error" and rec(out)["toolkit"] == toolkit_provenance()
    assert run(tree, cache, server, out) == 0
    r = rec(out)
    assert r["answer_state"] == "answered" and r["toolkit"] == toolkit_provenance()
    assert set(r["toolkit"]) >= {"toolkit_version", "judge_version", "git_commit", "git_dirty"}


def _failed_generation(tree, how: str) -> dict:
    """A 200 whose generation failed part-way on the server's side, with the text made so far (the model
    would have answered the whole oracle): vLLM's finish_reason "abort", OpenRouter's "error" (its docs:
    an error while the model produces the output comes back with status 200, in the body)."""
    partial = oracle_reply(tree, SHORT)
    if how in ("error", "abort"):
        return {"content": partial, "finish_reason": how}
    body = {"id": "gen-1", "object": "chat.completion", "model": "test-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": partial}, "finish_reason": None}],
            "error": {"code": 502, "message": "upstream provider error mid-generation"}}
    return {"raw": json.dumps(body), "content_type": "application/json"}


@pytest.mark.parametrize("how", ["error", "abort", "error-object"])
def test_a_generation_the_server_failed_is_never_scored_as_the_models_answer(how, tree, cache, server, tmp_path):
    """Whatever text a failed generation carries is not the model's answer: a transport error (retried,
    then missing), never a scored cell (silent success, or 0.0 when the text is cut before the JSON)."""
    server.script(*[_failed_generation(tree, how)] * 4)
    out = tmp_path / "o"
    assert run(tree, cache, server, out) == 0
    r = rec(out)
    assert [a.get("error") for a in r["attempts"]] == ["bad_reply"] * 4
    assert r["stop_reason"] == "harness_error" and r["answer_state"] is None
    assert not (cell(out) / "answer.json").exists()


def test_a_failed_generation_then_a_good_one_is_answered(tree, cache, server, tmp_path):
    server.script(_failed_generation(tree, "error"), {"content": oracle_reply(tree, SHORT)})
    out = tmp_path / "o"
    assert run(tree, cache, server, out) == 0
    r = rec(out)
    assert [a.get("error") for a in r["attempts"]] == ["bad_reply", None]
    assert "finish_reason 'error'" in r["attempts"][0]["message"]
    assert r["stop_reason"] == "stop" and r["answer_state"] == "answered"
    assert verify_cell(cell(out), tree) == (True, "ok")
