"""The caveats of real Protocol A run records reach `video-arena score`: the real `run-a` runner over the
fixture tasks tree against the local OpenAI-compatible server, with one reply truncated (finish_reason
length) holding two JSON blocks and one request refused for a provider image cap (250 stills), then the
real `video-arena score` command; the counts in the table, the CSV and the JSON are the runner's."""
from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fixtures.openai_test_server import OpenAITestServer
from fixtures.protocol_a_tree import make_tasks_tree, oracle_reply

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


def test_run_a_records_reach_the_score_table(tmp_path):
    tree = make_tasks_tree(tmp_path / "tasks")
    out = tmp_path / "results"
    capped = []

    def reply(body):
        n = sum(p["type"] == "image_url" for p in body["messages"][-1]["content"])
        if n == 12:   # paShort1: complete answer after a sketch block, but cut at max_tokens
            return {"content": oracle_reply(tree, "paShort1"), "finish_reason": "length"}
        if n == 256:  # paLong02: the provider refuses more than 250 images
            capped.append(n)
            return {"status": 400, "error": "Too many images in request: 256, maximum allowed: 250"}
        return {"content": oracle_reply(tree, "paLong02", prose=False)}

    with OpenAITestServer(default=reply) as srv:
        env = dict(os.environ, OPENAI_API_KEY="k", OPENAI_BASE_URL=srv.base_url, VA_CACHE_DIR=str(tmp_path / "c"),
                   PYTHONPATH=str(REPO))
        p = subprocess.run([sys.executable, str(REPO / "run_protocol_a.py"), "--model", "test-model", "--out",
                            str(out), "--tasks-root", str(tree), "--workers", "1", "--games", "chess",
                            "--reasoning-effort", "high", "--no-progress"],
                           env=env, capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, p.stderr
    assert capped == [256]
    o = tmp_path / "o"
    p = subprocess.run([str(Path(sys.executable).parent / "video-arena"), "score", str(out), "--tasks-root", str(tree),
                        "--quiet", "--bootstrap", "0", "--json", str(o / "s.json"), "--csv", str(o / "g.csv"),
                        "--cells-csv", str(o / "c.csv")], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    caveats = next(ln for ln in p.stdout.splitlines() if ln.split()[:1] == ["chess"] and "high" in ln).split()
    assert caveats[1:7] == ["2/2", "0", "1", "1", "1", "0"], p.stdout   # degraded, truncated, multi-block
    games = {r["game"]: r for r in csv.DictReader((o / "g.csv").open())}
    assert (games["chess"]["degraded"], games["chess"]["truncated"], games["chess"]["multi_block"]) == ("1", "1", "1")
    assert games["chess"]["reasoning_effort"] == "high (2)" and games["chess"]["table_diagnostic"] == "False"
    cells = {r["case_id"]: r for r in csv.DictReader((o / "c.csv").open())}
    assert cells["paShort1"]["truncated"] == "True" and cells["paShort1"]["multi_block"] == "True"
    assert cells["paLong02"]["degraded"] == "True" and cells["paLong02"]["degradations"] == "max_frames"
    assert cells["paLong02"]["frames_used"] == "250"
    # the declared grid is the reference one for both: a provider cap is a caveat, not another condition
    assert cells["paShort1"]["grid"] == cells["paLong02"]["grid"] == "fps1-n256-ls768-q4"
    doc = json.loads((o / "s.json").read_text())
    assert doc["systems"][0]["mixed"] == [] and doc["systems"][0]["caveats"]["truncated"] == 1
    ceil = json.loads((out / "chess" / "paLong02" / "run.json").read_text())["t1_recall_ceiling"]
    assert cells["paLong02"]["t1_recall_ceiling"] == str(ceil)
