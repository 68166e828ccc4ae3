"""The dataset the way Harbor users consume it: copy mode, `video-arena publish`, then
`harbor run -d NAME@VERSION --registry-path` on real Docker trials; an interrupted job resumed with
`harbor job resume`; and Harbor's podman environment (skipped loudly without podman).

The fixture tree (two 2-second chess cases, committed with their videos) keeps the cost at a few
trials: oracle and nop from the registry (2 + 2), the resume check (2 or 3), and on podman one case,
both protocols, oracle and nop, plus a network probe (5).  `video-arena oracle-check --runtime podman`
runs one case of every built-in game.
"""
from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from video_arena.harbor import spec as S
from video_arena.harbor.generate import Options, generate
from video_arena.harbor.oracle_check import harbor_executable, read_trials, resource_args

pytestmark = [pytest.mark.slow, pytest.mark.docker]

REPO = Path(__file__).resolve().parents[2]
TREE = REPO / "tests" / "fixtures" / "harbor_tree"
CLI = str(Path(sys.executable).parent / "video-arena")
ONES = {"reward": 1.0, "t1_f1": 1.0, "t2_macro_acc": 1.0, "t3_macro_acc": 1.0}
ZEROS = {k: 0.0 for k in ONES}


def _env() -> dict[str, str]:
    # Harbor runs the dataset metric with `uv`, installed beside harbor in the project's environment
    path = f"{Path(harbor_executable()).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True", VA_NO_PROGRESS="1", PATH=path)


def harbor(*args: str, timeout: float = 900, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([harbor_executable(), *args], env=_env(), capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL, cwd=cwd)


def registry_run(pub: dict, agent: str, jobs: Path, job: str, n: int = 2, version: str = "1.0.0") -> Path:
    # from the repository's root, as publish prints it: the registry names the metric script relative to it
    p = harbor("run", "-d", f"video-arena-b@{version}", "--registry-path", "registry.json",
               "-a", agent, "-n", str(n), "-y", "-o", str(jobs), "--job-name", job, *resource_args(),
               cwd=pub["repo"])
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return jobs / job


def metrics_of(rewards: dict) -> dict:
    """The judge's metrics of a trial's rewards (reward.json also names the case: `case:GAME/CASE_ID`)."""
    return {k: v for k, v in rewards.items() if not k.startswith("case:")}


@pytest.fixture(scope="module")
def published(sandbox_image, tmp_path_factory) -> dict:
    """The fixture tree as a copy-mode Protocol B dataset, published as video-arena-b@1.0.0."""
    work = tmp_path_factory.mktemp("publish")
    ds = work / "dataset-b"
    res = generate(Options(out=ds, protocol="B", net="compose-none", media="copy", base_image=sandbox_image,
                           tasks_root=TREE, progress=False))
    assert len(res.tasks) == 2
    repo = work / "repo"
    p = subprocess.run([CLI, "publish", str(ds), "--version", "1.0.0", "--out", str(repo), "--allow-unpinned",
                        "--tasks-root", str(TREE), "--no-progress"], capture_output=True, text=True, env=_env())
    assert p.returncode == 0, p.stdout + p.stderr
    rows = json.loads((repo / "registry.json").read_text())
    return {"work": work, "dataset": ds, "repo": repo, "rows": rows, "jobs": work / "jobs", "tasks": res.tasks}


@pytest.fixture(scope="module")
def clean_oracle(published) -> Path:
    return registry_run(published, "oracle", published["jobs"], "reg-oracle")


def test_registry_run_scores_oracle_one_and_nop_zero(published, clean_oracle):
    (entry,) = published["rows"]
    assert entry["name"] == "video-arena-b" and entry["version"] == "1.0.0" and len(entry["tasks"]) == 2
    commit = entry["tasks"][0]["git_commit_id"]
    nop = registry_run(published, "nop", published["jobs"], "reg-nop")
    for job, agent, want in ((clean_oracle, "oracle", ONES), (nop, "nop", ZEROS)):
        trials = read_trials(job, agent, "B")
        assert len(trials) == 2 and [t.problems for t in trials] == [[], []]
        assert all(metrics_of(t.rewards) == want for t in trials)
        assert sorted(k for t in trials for k in t.rewards if k.startswith("case:")) == \
            sorted(f"case:chess/{gt.stem}" for gt in (TREE / "chess" / "gt").glob("*.json"))
        for res in (json.loads(p.read_text()) for p in job.glob("*/result.json")):
            task = res["config"]["task"]  # the trial came from the registry's git row, not a local path
            assert task["git_url"] == published["repo"].as_uri() and task["git_commit_id"] == commit
    # the measured runs fill the adapter files of a new version; a published version is never replaced.
    # The oracle is measured both ways (its native cells beside its registry job): a parity entry, named
    # parity-matching; nop ran on Harbor only: counted, never named.
    native = _native_oracle(published["work"] / "native-oracle")
    p = subprocess.run([CLI, "publish", str(published["dataset"]), "--version", "1.0.1", "--out",
                        str(published["repo"]), "--allow-unpinned", "--tasks-root", str(TREE), "--no-progress",
                        "--jobs", str(clean_oracle), str(nop), "--parity", str(native)],
                       capture_output=True, text=True, env=_env())
    assert p.returncode == 0, p.stdout + p.stderr
    versions = [(r["name"], r["version"]) for r in json.loads((published["repo"] / "registry.json").read_text())]
    assert versions == [("video-arena-b", "1.0.0"), ("video-arena-b", "1.0.1")]
    parity = json.loads((published["repo"] / "datasets/video-arena-b/1.0.1/parity_experiment.json").read_text())
    (row,) = parity
    assert row["agent"] == "oracle" and row["metrics"][0]["harbor_runs"] == [1.0]
    assert row["metrics"][0]["original_runs"] == [1.0] and row["video_arena_parity"]["n_same_answer"] == 2
    meta = json.loads((published["repo"] / "datasets/video-arena-b/1.0.1/adapter_metadata.json").read_text())
    assert meta[0]["harbor_adapter"][0]["parity_matching_agents"] == ["oracle"]
    assert "nop 2" in meta[0]["harbor_adapter"][0]["notes"]
    again = subprocess.run([CLI, "publish", str(published["dataset"]), "--version", "1.0.1", "--out",
                            str(published["repo"]), "--allow-unpinned", "--no-validate"],
                           capture_output=True, text=True, env=_env())
    assert again.returncode == 2 and "already published" in again.stderr and "Traceback" not in again.stderr
    # v1.0.1 runs too (its rows name the new commit)
    v2 = registry_run(published, "oracle", published["jobs"], "reg-oracle-v101", version="1.0.1")
    assert [metrics_of(t.rewards) for t in read_trials(v2, "oracle", "B")] == [ONES, ONES]


def _native_oracle(out: Path) -> Path:
    """The oracle through the native harness: each case's answer key as a run-b cell (answer and record)."""
    sys.path.insert(0, str(REPO / "tests"))
    from scoring_helpers import b_run, write_cell
    from video_arena.core.judge_loader import load_judge

    J = load_judge()
    for gt in sorted((TREE / "chess" / "gt").glob("*.json")):
        # the bytes the dataset's solution/answer.json holds (video_arena/harbor/generate.py)
        data = (json.dumps(J.oracle_answer(J.load_gt(str(gt))), indent=1, ensure_ascii=False) + "\n").encode()
        write_cell(out, b_run("chess", gt.stem, model="oracle"), data)
    return out


def _score_csv(job: Path, out: Path) -> list[dict]:
    out.mkdir(parents=True, exist_ok=True)
    p = subprocess.run([CLI, "score", str(job), "--tasks-root", str(TREE), "--quiet", "--bootstrap", "0",
                        "--csv", str(out / "g.csv"), "--cells-csv", str(out / "c.csv")],
                       capture_output=True, text=True, env=_env(), timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    drop = {"system", "results", "label", "trial", "job", "started_at", "wall_s"}  # which job, not what it scored
    games = [{k: v for k, v in r.items() if k not in drop} for r in csv.DictReader((out / "g.csv").open())]
    cells = [{k: v for k, v in r.items() if k not in drop} for r in csv.DictReader((out / "c.csv").open())]
    return games + cells


def _remove_leftover_containers(trial_names: list[str]) -> None:
    """The killed trial's compose project (Harbor never got to tear it down): ours, removed."""
    for name in trial_names:
        ids = subprocess.run(["docker", "ps", "-aq", "--filter", f"label=com.docker.compose.project={name.lower()}__env"],
                             capture_output=True, text=True).stdout.split()
        if ids:
            subprocess.run(["docker", "rm", "-f", *ids], capture_output=True)


def test_killed_job_resumes_with_every_trial_scored_once(published, clean_oracle, tmp_path):
    jobs = tmp_path / "jobs"
    cmd = [harbor_executable(), "run", "-d", "video-arena-b@1.0.0", "--registry-path",
           "registry.json", "-a", "oracle", "-n", "1", "-y", "-o", str(jobs),
           "--job-name", "resume", *resource_args()]
    proc = subprocess.Popen(cmd, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL, start_new_session=True, cwd=published["repo"])
    job = jobs / "resume"
    deadline = time.monotonic() + 600
    try:  # kill -9 the whole job once one trial has its result and the next one has started
        while time.monotonic() < deadline and proc.poll() is None:
            done = list(job.glob("*/result.json"))
            running = [d for d in job.glob("*/") if d.is_dir() and not (d / "result.json").exists()]
            if len(done) == 1 and running:
                break
            time.sleep(0.5)
        assert proc.poll() is None, "the job ended before it could be interrupted"
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    finished_before = sorted(p.parent.name for p in job.glob("*/result.json"))
    unfinished = sorted(d.name for d in job.iterdir() if d.is_dir() and not (d / "result.json").exists())
    assert len(finished_before) == 1 and unfinished, (finished_before, unfinished)
    _remove_leftover_containers(unfinished)

    p = harbor("job", "resume", "-p", str(job), cwd=published["repo"])
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    trials = read_trials(job, "oracle", "B")
    assert [t.problems for t in trials] == [[], []]
    tasks = sorted(t.task for t in trials)
    assert tasks == sorted(published["tasks"]), "every task exactly once"
    assert set(finished_before) <= {t.trial for t in trials}, "the finished trial was kept, not re-run"
    assert not [d for d in job.iterdir() if d.is_dir() and not (d / "result.json").exists()]
    assert _score_csv(job, tmp_path / "s-resumed") == _score_csv(clean_oracle, tmp_path / "s-clean")


@pytest.mark.podman
def test_podman_runs_copy_mode_oracle_nop_and_has_no_network(podman_image, tmp_path):
    from video_arena.harbor.oracle_check import main as oracle_check

    # Protocol B only: the sandbox protocol is the one whose agent runs in the container; Protocol A's
    # tasks differ from B's in their files, not in what the runtime does with them (Docker runs both)
    rc = oracle_check(["--runtime", "podman", "--tasks-root", str(TREE), "--limit", "1", "--image", podman_image,
                       "--work", str(tmp_path), "--no-progress", "-n", "2", "--protocols", "B"])
    assert rc == 0
    configs = [json.loads(p.read_text()) for p in (tmp_path / "jobs").glob("*/config.json")]
    assert len(configs) == 3  # B x {oracle, nop} + the network probe
    assert all(c["environment"]["type"] == "podman" for c in configs)
    probes = list((tmp_path / "jobs").glob("va-netprobe-*/*/agent/netprobe.json"))
    assert len(probes) == 1 and json.loads(probes[0].read_text())["offline"] is True
    assert not (tmp_path / "dataset-a").exists()
    assert json.loads((tmp_path / "dataset-b" / S.DATASET_MARKER).read_text())["media"] == "copy"
