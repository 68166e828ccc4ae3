"""The ProtocolA Harbor agent in real `harbor run` trials on Docker, calling the local OpenAI-compatible
test server from the host, scored by the task's verifier.

Trials on the fixture cases paShort1 (12 s, 12 stills) and paLong02 (300.5 s, 256 stills), generated with
`make-harbor --protocol A --net compose-none` (the container has no network; the agent's call leaves from
the host, so it reaches the server on 127.0.0.1):

1. both cases: the server replies with the ground truth after a one-row sketch -> reward 1.0 on
   every key; the agent logs hold run.json, prompt.txt, reply.txt, receipt.json and the frames, the
   stills are byte-identical to the native runner's, and the request the server received hashes to
   the recorded request_sha256;
2. paShort1 only: the server replies with prose only -> the seed stays in /app/answer.json: 0.0, no exception;
3. paShort1 only: the server rejects the key (401) -> the trial ends in an exception (missing, not 0.0).
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest

from fixtures.openai_test_server import OpenAITestServer
from fixtures.protocol_a_tree import make_tasks_tree, oracle_reply
from video_arena.core.request import IMAGE_REF, request_sha256

pytestmark = [pytest.mark.slow, pytest.mark.docker]

REPO = Path(__file__).resolve().parents[2]
CASE, LONG = "paShort1", "paLong02"


@pytest.fixture(scope="module")
def dataset(sandbox_image, tmp_path_factory):
    from video_arena.harbor.generate import Options, generate

    root = tmp_path_factory.mktemp("pa_harbor")
    tree = make_tasks_tree(root / "tasks")
    out = root / "dataset-a"
    res = generate(Options(out=out, protocol="A", net="compose-none", media="mount", base_image=sandbox_image,
                           tasks_root=tree, games=["chess"], progress=False))
    assert len(res.tasks) == 2 and not res.missing_media
    return tree, out


def harbor_run(dataset_dir: Path, tree: Path, server: OpenAITestServer, jobs: Path, name: str,
               only: str | None = None) -> list[dict]:
    from video_arena.harbor.oracle_check import harbor_env, harbor_executable, resource_args

    env = harbor_env(tree)
    # this checkout's package first: the harbor console script would otherwise import whatever
    # video_arena the environment has installed
    env.update(PYTHONPATH=os.pathsep.join([str(REPO / "agents"), str(REPO)]), OPENAI_BASE_URL=server.base_url,
               OPENAI_API_KEY="test-key")
    cmd = [harbor_executable(), "run", "-p", str(dataset_dir), "-a", "protocol_a_agent:ProtocolA",
           "-m", "openai/test-model", "-n", "1" if only else "2", "-y", "--job-name", name, "-o", str(jobs),
           "--ak", "reasoning_effort=low", "--ak", "max_tokens=4000", "--ak", "timeout=60", *resource_args()]
    if only:
        cmd += ["-i", f"*{only}"]
    res = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=1200)
    results = sorted((jobs / name).glob("*/result.json"))
    assert results, f"no trial result\nstdout:\n{res.stdout[-3000:]}\nstderr:\n{res.stderr[-3000:]}"
    return [{"trial": r.parent, "result": json.loads(r.read_text()), "rc": res.returncode,
             "log": res.stdout + res.stderr} for r in results]


def _hashed(body):
    body = json.loads(json.dumps(body))
    for part in body["messages"][-1]["content"]:
        if part["type"] == "image_url":
            data = base64.b64decode(part["image_url"]["url"].split(",", 1)[1])
            part["image_url"]["url"] = IMAGE_REF + hashlib.sha256(data).hexdigest()
    return body


def test_protocol_a_agent_real_trials(dataset, tmp_path):
    from video_arena.media import grid as G
    from video_arena.core.provenance import verify_cell

    tree, ds = dataset
    jobs = tmp_path / "jobs"
    n_images = {CASE: 12, LONG: 256}

    def provider(body):  # replies with the case's ground truth, told apart by the number of stills
        n = sum(p["type"] == "image_url" for p in body["messages"][-1]["content"])
        return {"content": oracle_reply(tree, CASE if n == 12 else LONG)}

    with OpenAITestServer(default=provider) as srv:
        # 1. answers (with a schema sketch before them) -> 1.0; one 429 on the way
        srv.script({"status": 429})
        trials = harbor_run(ds, tree, srv, jobs, "pa-answer")
        assert len(trials) == 2
        for t in trials:
            res, agent = t["result"], t["trial"] / "agent"
            assert res.get("exception_info") is None, (res.get("exception_info"), t["log"][-3000:])
            run = json.loads((agent / "run.json").read_text())
            case = run["case_id"]
            # the judge's four rewards, and the key naming the trial's case (the dataset metric's: metric.py)
            rewards = res["verifier_result"]["rewards"]
            assert {k: v for k, v in rewards.items() if not k.startswith("case:")} == {
                "reward": 1.0, "t1_f1": 1.0, "t2_macro_acc": 1.0, "t3_macro_acc": 1.0}
            assert [k for k in rewards if k.startswith("case:")] == [f"case:chess/{case}"]
            assert case in n_images and run["game"] == "chess"
            assert run["protocol"] == "A" and run["runner"] == "harbor" and run["model"] == "test-model"
            assert run["answer_state"] == "answered" and run["n_json_blocks"] == 2 and run["protocol_complete"]
            assert run["frames_used"] == n_images[case] and run["reasoning_effort"] == "low"
            assert len(list((agent / "frames").glob("*.jpg"))) == n_images[case]
            for name in ("prompt.txt", "reply.txt", "receipt.json", "answer.json", "extract.sh"):
                assert (agent / name).is_file(), name
            body = next(q["body"] for q in srv.requests if q["body"]["messages"][0]["content"][0]["text"]
                        == (agent / "prompt.txt").read_text())
            assert body["max_tokens"] == 4000 and body["model"] == "test-model"
            assert request_sha256(_hashed(body)) == run["request_sha256"]
            # the stills sampled in the container are those the native runner samples on the host
            native = G.extract_frames(tree / "chess" / "media" / f"{case}.mp4", G.GridSpec(), tmp_path / case)
            receipt = json.loads((agent / "receipt.json").read_text())
            assert [f["sha256"] for f in receipt["frames"]] == native.frame_sha256
            # the scorer's provenance check accepts the trial's logs as a cell
            assert verify_cell(agent, tree) == (True, "ok")
        assert sum(q["body"] is not None for q in srv.requests) == 3  # 2 cells + the 429

        # 2. prose only -> the seed stays: 0.0, not an exception
        srv.script({"content": "I could not find any events."})
        [t] = harbor_run(ds, tree, srv, jobs, "pa-noanswer", only=CASE)
        assert t["result"].get("exception_info") is None, t["log"][-3000:]
        assert t["result"]["verifier_result"]["rewards"]["reward"] == 0.0
        assert json.loads((t["trial"] / "agent" / "run.json").read_text())["answer_state"] == "no_answer"

        # 3. the call never gets a reply -> a harness exception (missing)
        srv.script({"status": 401, "error": "bad key"})
        [t] = harbor_run(ds, tree, srv, jobs, "pa-harness-error", only=CASE)
        assert t["result"].get("exception_info"), t["log"][-3000:]
        assert json.loads((t["trial"] / "agent" / "run.json").read_text())["stop_reason"] == "harness_error"


def test_a_5000_row_answer_reaches_the_verifier(dataset, tmp_path, J):
    """The answer goes in through the environment's file upload: a 5,000-row answer (~450 kB, far
    past Linux's 128 KiB limit on one shell argument) reaches the verifier whole and is scored as
    the native judge scores it; the agent's run.json carries the toolkit provenance."""
    from video_arena.toolkit_info import toolkit_provenance

    tree, ds = dataset
    gt_rows = json.loads(oracle_reply(tree, CASE, prose=False))["events"]
    extra = [{"t": 1000 + i, "type": "move", "actor": "white", "where": "a1", "delta": "flat", "state": "even"}
             for i in range(5000 - len(gt_rows))]
    answer = {"events": gt_rows + extra}
    reply = "Here are all the events:\n" + json.dumps(answer)
    assert len(reply.encode()) > 3 * 128 * 1024
    with OpenAITestServer(default={"content": reply}) as srv:
        [t] = harbor_run(ds, tree, srv, tmp_path / "jobs", "pa-5000-rows", only=CASE)
    res, agent = t["result"], t["trial"] / "agent"
    assert res.get("exception_info") is None, (res.get("exception_info"), t["log"][-3000:])
    run = json.loads((agent / "run.json").read_text())
    assert run["n_rows"] == 5000 and run["answer_state"] == "answered"
    assert run["toolkit"] == toolkit_provenance()
    local = tmp_path / "answer.json"
    local.write_text(json.dumps(answer))
    expected = J.judge_files(tree / "chess" / "gt" / f"{CASE}.json", local)
    judge = json.loads((t["trial"] / "verifier" / "judge.json").read_text())
    assert (judge.get("record") or judge).get("n_pred") == 5000, judge
    rewards = res["verifier_result"]["rewards"]
    assert rewards["reward"] == pytest.approx(expected["reward"]) and rewards["t1_f1"] == pytest.approx(
        expected["t1_f1"])
    assert 0 < rewards["reward"] < 0.01  # 4 true rows among 5,000: the answer was read whole
    print(f"5,000-row Harbor trial: reward {rewards['reward']!r}, t1_f1 {rewards['t1_f1']!r}")
