"""The dataset metric (harbor_templates/metric.py, Harbor's `uv-script`) on real Harbor jobs: the
value Harbor records in the job's result.json equals the headline `video-arena score` computes on the
same job folder (the mean of per-game means).  The oracle on two cases of one game and one case of
another, Protocol B, with the CPU override this host needs (3 trials; the metric's arithmetic on every
other shape of job is tests/unit's).  One task's solution is
replaced by one that leaves no answer, so the oracle's games differ (0.5 and 1.0): the headline, 0.75,
is not Harbor's flat mean (2/3)."""
from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from video_arena import paths
from video_arena.harbor import spec as S
from video_arena.harbor.generate import Options, generate
from video_arena.harbor.oracle_check import harbor_env, harbor_executable, resource_args

from video_arena.core import load_cases

pytestmark = [pytest.mark.slow, pytest.mark.docker]

CLI = str(Path(sys.executable).parent / "video-arena")


def _score_headline(job: Path, root: Path, out: Path) -> dict[str, str]:
    p = subprocess.run([CLI, "score", str(job), "--tasks-root", str(root), "--quiet", "--bootstrap", "0",
                        "--csv", str(out)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    return {r["game"]: r["reward"] for r in csv.DictReader(out.open())}


#: two games whose videos render in seconds: their first two built-in cases are rendered for the test (a fresh
#: clone has no media), bit-exact against the manifest
GAMES = ("doudizhu", "gomoku")


def _render_media(root: Path, media: Path) -> None:
    for g in GAMES:
        ids = ",".join(c["case_id"] for c in load_cases(g, root)[:2])
        p = subprocess.run([CLI, "build-cases", "--media-only", "--games", g, "--case-ids", ids, "--tasks-root",
                            str(root), "--media-root", str(media), "--no-progress"],
                           capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]


def test_harbor_metric_equals_score_headline(sandbox_image, tmp_path):
    root = paths.default_tasks_root()
    media = tmp_path / "media"
    _render_media(root, media)
    games = list(GAMES)
    ds = tmp_path / "dataset-b"
    generate(Options(out=ds, protocol="B", net="compose-none", media="mount", base_image=sandbox_image,
                     host_media=media, tasks_root=root, games=games, limit=2, progress=False))
    folders = sorted(p.name for p in ds.iterdir() if (p / "task.toml").is_file())
    first = [t for t in folders if t.startswith(f"{games[0]}-")]
    second = [t for t in folders if t.startswith(f"{games[1]}-")]
    assert len(first) == len(second) == 2
    shutil.rmtree(ds / second[1])                        # the second game: one case
    (ds / first[1] / "solution" / "solve.sh").write_text("#!/bin/bash\nexit 0\n")  # no answer: 0.0
    config = tmp_path / "metric.yaml"
    config.write_text(json.dumps({"metrics": [{"type": "uv-script",
                                               "kwargs": {"script_path": str(S.metric_script())}}]}))
    env = harbor_env(media)
    env["PATH"] = f"{Path(harbor_executable()).parent}:{env.get('PATH', '')}"  # `uv` beside harbor
    for agent in ("oracle",):
        job = tmp_path / "jobs" / agent
        p = subprocess.run([harbor_executable(), "run", "-c", str(config), "-p", str(ds), "-a", agent, "-n", "2",
                            "-y", "-o", str(tmp_path / "jobs"), "--job-name", agent, *resource_args()],
                           env=env, capture_output=True, text=True, timeout=1200, stdin=subprocess.DEVNULL)
        assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
        evals = json.loads((job / "result.json").read_text())["stats"]["evals"]
        (ev,) = evals.values()
        (metric,) = ev["metrics"]
        headline = _score_headline(job, root, tmp_path / f"{agent}.csv")
        overall = [v for k, v in headline.items() if k.upper() == "OVERALL"]
        assert overall and metric["reward"] == pytest.approx(float(overall[0]), abs=1e-9), (metric, headline)
        assert metric["n_games"] == 2 and metric["n_cases"] == 3 and metric["n_unnamed"] == 0
        assert metric["reward"] == pytest.approx(0.75)  # (0.5 + 1.0) / 2, not the flat 2/3
        for g in games:
            assert metric[f"reward/{g}"] == pytest.approx(float(headline[g]), abs=1e-9)
        print(f"{agent}: Harbor's metric {metric['reward']} vs score's headline {overall[0]}")
