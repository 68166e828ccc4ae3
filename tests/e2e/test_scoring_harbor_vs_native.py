"""The same replies, run natively (`run-a`) and as a real Harbor trial (the ProtocolA agent in Docker,
against the same local test server), score to the same numbers and the same caveat counts.  One case
(paShort1, 12 stills) carries every Protocol A caveat, so one trial suffices: its first request is refused
for a provider image cap of 10 images (degraded: 10 stills), and the reply to the second is cut at
max_tokens and holds two JSON blocks (truncated, multi-block)."""
from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fixtures.openai_test_server import OpenAITestServer
from fixtures.protocol_a_tree import oracle_reply
from test_protocol_a_harbor import dataset, harbor_run  # noqa: F401 - the dataset fixture and the runner

pytestmark = [pytest.mark.slow, pytest.mark.docker]

REPO = Path(__file__).resolve().parents[2]
KEYS = ("n_scored", "reward", "t1_f1", "t2_macro_acc", "n_t2", "t3_macro_acc", "n_t3", "t2_zero_filled",
        "t3_zero_filled", "zero_rows", "degraded", "truncated", "multi_block", "audit_flagged",
        "t1_recall_ceiling_mean", "reasoning_effort", "table_diagnostic")


def _score(src: Path, tree: Path, out: Path) -> dict:
    out.mkdir(parents=True)
    p = subprocess.run([str(Path(sys.executable).parent / "video-arena"), "score", str(src), "--tasks-root",
                        str(tree), "--quiet", "--bootstrap", "0", "--csv", str(out / "g.csv"),
                        "--cells-csv", str(out / "c.csv")],
                       env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    return {"games": {r["game"]: r for r in csv.DictReader((out / "g.csv").open())},
            "cells": {r["case_id"]: r for r in csv.DictReader((out / "c.csv").open())}, "out": p.stdout}


def test_harbor_job_and_native_run_score_alike(dataset, tmp_path):  # noqa: F811
    tree, ds = dataset

    def provider(body):
        n = sum(p["type"] == "image_url" for p in body["messages"][-1]["content"])
        if n > 10:
            return {"status": 400, "error": f"Too many images in request: {n}, maximum allowed: 10"}
        return {"content": oracle_reply(tree, "paShort1"), "finish_reason": "length"}

    native = tmp_path / "native"
    with OpenAITestServer(default=provider) as srv:
        trials = harbor_run(ds, tree, srv, tmp_path / "jobs", "caveats", only="paShort1")
        assert len(trials) == 1 and all(t["result"].get("exception_info") is None for t in trials), \
            [t["log"][-2000:] for t in trials]
        env = dict(os.environ, OPENAI_API_KEY="k", OPENAI_BASE_URL=srv.base_url, PYTHONPATH=str(REPO),
                   VA_CACHE_DIR=str(tmp_path / "cache"))
        p = subprocess.run([sys.executable, str(REPO / "run_protocol_a.py"), "--model", "test-model", "--out",
                            str(native), "--tasks-root", str(tree), "--workers", "1", "--games", "chess",
                            "--limit", "1", "--reasoning-effort", "low", "--max-tokens", "4000", "--no-progress"],
                           env=env, capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, p.stderr
    n = _score(native, tree, tmp_path / "score-native")
    h = _score(tmp_path / "jobs" / "caveats", tree, tmp_path / "score-harbor")
    for row in ("chess", "OVERALL"):
        assert {k: n["games"][row][k] for k in KEYS} == {k: h["games"][row][k] for k in KEYS}
    assert (n["games"]["chess"]["degraded"], n["games"]["chess"]["truncated"],
            n["games"]["chess"]["multi_block"]) == ("1", "1", "1")
    assert n["cells"]["paShort1"]["frames_used"] == "10" and n["games"]["chess"]["n_scored"] == "1"
    for case in ("paShort1",):
        for k in ("reward", "degraded", "degradations", "truncated", "n_json_blocks", "frames_used", "grid",
                  "condition_sha256", "transport", "reasoning_effort"):
            assert n["cells"][case][k] == h["cells"][case][k], (case, k)
