"""The native Protocol A runner end to end: the real `video-arena run-a` command (a subprocess) over the
fixture tasks tree against the local OpenAI-compatible server, then the judge and the provenance
check on every cell, then a resumed run that sends nothing."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fixtures.openai_test_server import OpenAITestServer
from fixtures.protocol_a_tree import make_tasks_tree, oracle_reply
from video_arena.core.provenance import verify_cell

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


def test_run_a_cli_end_to_end(tmp_path, J):
    tree = make_tasks_tree(tmp_path / "tasks")
    out = tmp_path / "results"

    def reply(body):
        n = sum(p["type"] == "image_url" for p in body["messages"][-1]["content"])
        return {"content": oracle_reply(tree, "paShort1" if n == 12 else "paLong02")}

    with OpenAITestServer(default=reply) as srv:
        env = dict(os.environ, OPENAI_API_KEY="k", OPENAI_BASE_URL=srv.base_url, VA_CACHE_DIR=str(tmp_path / "c"))
        cmd = [sys.executable, str(REPO / "run_protocol_a.py"), "--model", "test-model", "--out", str(out),
               "--tasks-root", str(tree), "--workers", "2", "--games", "chess"]
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, p.stderr
        assert "answered 2" in p.stderr and len(srv.requests) == 2
        for case in ("paShort1", "paLong02"):
            cell = out / "chess" / case
            run = json.loads((cell / "run.json").read_text())
            rec = J.judge_files(tree / "chess" / "gt" / f"{case}.json", cell / "answer.json")
            assert rec["reward"] == 1.0, (case, rec)
            assert verify_cell(cell, tree) == (True, "ok")
            assert run["frames_used"] == {"paShort1": 12, "paLong02": 256}[case]
        # resumed: nothing left to send; the console script is the same runner
        p = subprocess.run([str(Path(sys.executable).parent / "video-arena"), "run-a", "--model", "test-model",
                            "--out", str(out), "--tasks-root", str(tree), "--no-progress"],
                           env=env, capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, p.stderr
        assert "0 cells to run, 2 already done" in p.stderr and len(srv.requests) == 2
