"""`video-arena run-a` then `video-arena score`, end to end, for every built-in game that has cases.

A copy of the built-in tasks tree (each game with cases: its definition files, all its cases and
ground truth) gets a short test-pattern video for its first case (the run-to-score path does not
depend on what the video shows, and the test must not wait for the full renders).  The real
`run-a` command runs one case per game under a custom condition file against the local
OpenAI-compatible server, which replies with the case's ground truth; then the real `score`
command must print every game with n_scored/n_cases 1/20 and reward 1.000, and `score` (which
verifies every Protocol A request by default) must accept every cell (its request rebuilt from the
condition copy in <out>/_conditions/, its media digest the one the game's manifest names)."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fixtures.openai_test_server import OpenAITestServer
from video_arena.core import tasks as T
from video_arena.digests import sha256_file
from video_arena.core.condition import CONDITIONS_SUBDIR, DEFAULT_CONDITION

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
ANSWER_FIELDS = ("t", "type", "actor", "where", "delta", "state")


def games_with_cases(root: Path) -> list[str]:
    out = []
    for g in T.list_games(root):
        p = root / g / "cases.json"
        if p.is_file() and json.loads(p.read_text()).get("cases"):
            out.append(g)
    return out


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> tuple[Path, dict[str, str], dict[int, str]]:
    """(tasks tree, {game: first case id}, {number of stills: game})."""
    src = REPO / "tasks"
    dst = tmp_path_factory.mktemp("a_score") / "tasks"
    first, by_stills = {}, {}
    for k, game in enumerate(games_with_cases(src)):
        shutil.copytree(src / game, dst / game, ignore=shutil.ignore_patterns("media"))
        case = json.loads((src / game / "cases.json").read_text())["cases"][0]["case_id"]
        (dst / game / "media").mkdir()
        secs = 6 + k  # a distinct number of stills tells the server which game a request is for
        subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i",
                        f"testsrc=size=160x90:rate=5", "-t", str(secs), "-c:v", "libx264", "-preset", "ultrafast",
                        "-pix_fmt", "yuv420p", str(dst / game / "media" / f"{case}.mp4")], check=True)
        first[game], by_stills[secs] = case, game
        # the tree now holds other media for this case: its manifest says so (score checks the stills
        # were sampled from the media the manifest names)
        man = json.loads((dst / game / "manifest.json").read_text())
        for entry in man["cases"]:
            if entry["case_id"] == case:
                entry["media_sha256"] = sha256_file(dst / game / "media" / f"{case}.mp4")
        (dst / game / "manifest.json").write_text(json.dumps(man, indent=1))
    return dst, first, by_stills


def test_run_a_then_score_every_game(tree, tmp_path):
    root, first, by_stills = tree
    assert {"chess", "go", "gomoku", "doudizhu"} <= set(first), first

    def oracle(body):
        n = sum(p["type"] == "image_url" for p in body["messages"][-1]["content"])
        game = by_stills[n]
        gt = json.loads((root / game / "gt" / f"{first[game]}.json").read_text())
        rows = [{k: e[k] for k in ANSWER_FIELDS} for e in gt["events"]]
        return {"content": "The events:\n```json\n" + json.dumps({"events": rows}) + "\n```"}

    cond = json.loads(DEFAULT_CONDITION.read_text())
    cond.update(name="e2e-custom", description="a condition that is not a versioned file")
    cond_file = tmp_path / "custom.json"
    cond_file.write_text(json.dumps(cond))
    out = tmp_path / "results"
    exe = str(Path(sys.executable).parent / "video-arena")
    with OpenAITestServer(default=oracle) as srv:
        env = dict(os.environ, OPENAI_API_KEY="k", VA_CACHE_DIR=str(tmp_path / "cache"))
        p = subprocess.run([exe, "run-a", "--model", "test-model", "--base-url", srv.base_url, "--out", str(out),
                            "--tasks-root", str(root), "--limit", "1", "--workers", "2", "--no-progress",
                            "--condition", str(cond_file)], env=env, capture_output=True, text=True, timeout=900)
        assert p.returncode == 0, p.stderr
        assert f"answered {len(first)}" in p.stderr, p.stderr
    copies = list((out / CONDITIONS_SUBDIR).glob("*.json"))
    assert len(copies) == 1 and not (out / "conditions").exists()
    for verify in ([], ["--verify-requests"]):
        p = subprocess.run([exe, "score", str(out), "--tasks-root", str(root), "--quiet", "--bootstrap", "0",
                            *verify], capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, (verify, p.stdout, p.stderr)
        print(f"$ video-arena score {' '.join(verify)}\n{p.stdout}")
        for game in first:
            line = next((ln for ln in p.stdout.splitlines() if re.match(rf"\s*{game}\b", ln)), None)
            assert line is not None, (game, p.stdout)
            assert "1/20" in line and "1.000" in line, (verify, line, p.stdout)
        assert "unverified" not in p.stdout.lower() or re.search(r"unverified\D*0", p.stdout.lower()), p.stdout
    # a tampered cell is refused under --verify-requests (the check is not vacuous)
    game = sorted(first)[0]
    ans = out / game / first[game] / "answer.json"
    doc = json.loads(ans.read_text())
    doc["events"] = doc["events"][:-1]
    ans.write_text(json.dumps(doc))
    p = subprocess.run([exe, "score", str(out), "--tasks-root", str(root), "--quiet", "--bootstrap", "0",
                        "--verify-requests"], capture_output=True, text=True, timeout=600)
    # the answer's bytes are not the ones its record names: an integrity error before any request is rebuilt
    assert f"{game}/{first[game]}: INTEGRITY: answer.json has SHA-256" in p.stdout, p.stdout
    assert "the answer was changed after the run" in p.stdout and p.returncode != 0, (p.returncode, p.stdout)
    line = next(ln for ln in p.stdout.splitlines() if re.match(rf"\s*{game}\s", ln))
    assert "0/20" in line, (line, p.stdout)
