"""`video-arena publish` without Docker: what it writes (a git repository whose registry.json Harbor's
own client reads back, adapter files that claim nothing unmeasured) and what it refuses (one line,
exit 2, nothing changed)."""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path

import pytest

from video_arena.harbor import publish as P
from video_arena.harbor import spec as S
from video_arena.harbor.generate import Options, generate

TREE = Path(__file__).resolve().parents[1] / "fixtures" / "harbor_tree"
PIN = "registry.example/video-arena/base@sha256:" + "a" * 64


def _dataset(tmp_path: Path, media: str = "copy", base_image: str = PIN, name: str = "ds") -> Path:
    out = tmp_path / name
    generate(Options(out=out, protocol="B", net="compose-none", media=media, base_image=base_image, tasks_root=TREE,
                     progress=False))
    return out


def _publish(args: list[str], capsys) -> tuple[int, str, str]:
    rc = P.main(args + ["--no-progress"])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def test_publish_writes_a_repository_harbor_reads(tmp_path, capsys):
    ds = _dataset(tmp_path)
    repo = tmp_path / "repo"
    rc, out, err = _publish([str(ds), "--version", "1.0.0", "--out", str(repo), "--tasks-root", str(TREE)], capsys)
    assert rc == 0, err
    from harbor.registry.client.json import JsonRegistryClient

    meta = asyncio.run(JsonRegistryClient(path=repo / "registry.json").get_dataset_metadata("video-arena-b@1.0.0"))
    assert len(meta.task_ids) == 2
    head = subprocess.run(["git", "-C", str(repo), "log", "--format=%H"], capture_output=True, text=True).stdout.split()
    assert len(head) == 2  # the tasks, then the registry that names them
    for tid in meta.task_ids:
        assert tid.git_url == repo.as_uri() and tid.git_commit_id == head[1]
        # the row's path at the row's commit is a byte copy of the dataset's task folder
        files = subprocess.run(["git", "-C", str(repo), "ls-tree", "-r", "--name-only", tid.git_commit_id,
                                str(tid.path)], capture_output=True, text=True).stdout.split()
        local = sorted(str(tid.path / p.relative_to(ds / tid.path.name)) for p in (ds / tid.path.name).rglob("*")
                       if p.is_file())
        assert sorted(files) == local
        mp4 = subprocess.run(["git", "-C", str(repo), "show", f"{tid.git_commit_id}:{tid.path}/environment/match.mp4"],
                             capture_output=True).stdout
        assert mp4 == (ds / tid.path.name / "environment" / "match.mp4").read_bytes()
    base = repo / "datasets" / "video-arena-b" / "1.0.0"
    parity = json.loads((base / "parity_experiment.json").read_text())
    assert parity == []  # Harbor's template with no experiment: no run given, no number
    meta = json.loads((base / "adapter_metadata.json").read_text())
    assert meta[0]["harbor_adapter"][0]["parity_matching_agents"] == []
    assert meta[0]["harbor_adapter"][0]["parity_benchmark_size"] is None
    readme = (base / "README.md").read_text()
    for section in ("## Overview", "## Generated Task Structure", "## Run Evaluation / Harness",
                    "## Comparison with Original Benchmark (Parity)", "## Notes & Caveats", "## Citation",
                    "## Licences of the matches"):
        assert section in readme
    assert str(tmp_path) not in (base / "adapter_metadata.json").read_text()


@pytest.mark.parametrize("case", ["mount", "unpinned", "tampered", "not-a-dataset", "bad-name", "bad-version"])
def test_publish_refuses_with_one_line(case, tmp_path, capsys):
    args_extra: list[str] = []
    if case == "mount":
        ds = _dataset(tmp_path, media="mount")
    elif case == "unpinned":
        ds = _dataset(tmp_path, base_image=S.DEFAULT_BASE_IMAGE)
    elif case == "not-a-dataset":
        ds = tmp_path / "plain"
        ds.mkdir()
    else:
        ds = _dataset(tmp_path)
    if case == "tampered":
        video = next(ds.glob("*/environment/match.mp4"))
        video.write_bytes(video.read_bytes()[:-1] + b"\0")
    if case == "bad-name":
        args_extra = ["--name", "org/video-arena"]
    version = "1 0" if case == "bad-version" else "1.0.0"
    repo = tmp_path / "repo"
    rc, out, err = _publish([str(ds), "--version", version, "--out", str(repo), "--no-validate", *args_extra], capsys)
    assert rc == 2
    assert err.startswith("publish: error: ") and err.count("\n") == 1 and "Traceback" not in err
    assert not repo.exists()
    assert not list(tmp_path.glob(".repo.partial-*"))
    want = {"mount": "--media mount", "unpinned": "is a tag, not a digest", "tampered": "differs from the SHA-256",
            "not-a-dataset": "not a dataset written by make-harbor", "bad-name": "bare", "bad-version": "--version"}
    assert want[case] in err


def test_unpinned_publishes_when_told(tmp_path, capsys):
    ds = _dataset(tmp_path, base_image=S.DEFAULT_BASE_IMAGE)
    rc, _, err = _publish([str(ds), "--version", "1.0.0", "--out", str(tmp_path / "repo"), "--allow-unpinned",
                           "--no-validate"], capsys)
    assert rc == 0, err


def test_a_version_is_never_replaced_and_a_foreign_folder_is_not_touched(tmp_path, capsys):
    ds = _dataset(tmp_path)
    repo = tmp_path / "repo"
    assert _publish([str(ds), "--version", "1.0.0", "--out", str(repo), "--no-validate"], capsys)[0] == 0
    before = (repo / "registry.json").read_bytes()
    rc, _, err = _publish([str(ds), "--version", "1.0.0", "--out", str(repo), "--no-validate"], capsys)
    assert rc == 2 and "already published" in err
    assert (repo / "registry.json").read_bytes() == before
    rc, _, err = _publish([str(ds), "--version", "1.1.0", "--out", str(repo), "--no-validate"], capsys)
    assert rc == 0, err
    rows = json.loads((repo / "registry.json").read_text())
    assert [r["version"] for r in rows] == ["1.0.0", "1.1.0"]
    assert rows[0]["tasks"][0]["git_commit_id"] != rows[1]["tasks"][0]["git_commit_id"]
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "keep.txt").write_text("mine")
    rc, _, err = _publish([str(ds), "--version", "1.0.0", "--out", str(foreign), "--no-validate"], capsys)
    assert rc == 2 and "not written by video-arena publish" in err
    assert sorted(p.name for p in foreign.iterdir()) == ["keep.txt"]


def test_a_failed_publish_into_an_existing_repository_leaves_it_as_it_was(tmp_path, capsys, monkeypatch):
    ds = _dataset(tmp_path)
    repo = tmp_path / "repo"
    assert _publish([str(ds), "--version", "1.0.0", "--out", str(repo), "--no-validate"], capsys)[0] == 0
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout

    def boom(*a, **k):
        raise P.PublishError("registry check failed on purpose")

    monkeypatch.setattr(P, "check_registry", boom)
    rc, _, err = _publish([str(ds), "--version", "2.0.0", "--out", str(repo), "--no-validate"], capsys)
    assert rc == 2 and "on purpose" in err
    assert subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout == head
    assert subprocess.run(["git", "-C", str(repo), "status", "--porcelain"], capture_output=True, text=True).stdout == ""
    assert not (repo / "datasets" / "video-arena-b" / "2.0.0").exists()


def test_jobs_that_ran_other_tasks_are_refused(tmp_path, capsys):
    ds = _dataset(tmp_path)
    job = tmp_path / "job"
    (job / "t1").mkdir(parents=True)
    (job / "config.json").write_text(json.dumps({"agents": [{"name": "oracle"}]}))
    (job / "t1" / "result.json").write_text(json.dumps({"task_name": "video-arena/chess-NOTOURS1"}))
    rc, _, err = _publish([str(ds), "--version", "1.0.0", "--out", str(tmp_path / "repo"), "--no-validate",
                           "--jobs", str(job)], capsys)
    assert rc == 2 and "not a task of this dataset" in err


def test_a_job_with_an_unreadable_trial_result_is_refused(tmp_path, capsys):
    """An unreadable result.json is not skipped (that would understate the trial count the adapter files
    publish): one line naming it, exit 2."""
    ds = _dataset(tmp_path)
    task = json.loads((ds / S.DATASET_MARKER).read_text())["tasks"][0]
    job = tmp_path / "job"
    for t in ("t1", "t2"):
        (job / t).mkdir(parents=True)
    (job / "config.json").write_text(json.dumps({"agents": [{"name": "oracle"}]}))
    (job / "t1" / "result.json").write_text(json.dumps({"task_name": task}))
    (job / "t2" / "result.json").write_text('{"task_name": ')
    rc, _, err = _publish([str(ds), "--version", "1.0.0", "--out", str(tmp_path / "repo"), "--no-validate",
                           "--jobs", str(job)], capsys)
    assert rc == 2 and "t2/result.json is unreadable" in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "repo").exists()


def _committed(repo: Path, rev: str, rel: str) -> dict[str, str]:
    """{path: blob} of a commit's tree under rel."""
    out = subprocess.run(["git", "-C", str(repo), "ls-tree", "-r", rev, "--", rel], capture_output=True,
                         text=True, check=True).stdout
    return {line.split("\t", 1)[1]: line.split()[2] for line in out.splitlines()}


@pytest.mark.parametrize("how", ["task-gitignore", "global-excludes"])
def test_the_published_commit_holds_every_file_of_the_validated_tasks(how, tmp_path, capsys, monkeypatch):
    """Git ignore rules (a .gitignore inside a task folder, which the validator does not look at, or the
    user's own global excludes file) must not drop a task's video or ground truth from the commit the
    registry rows name: the published tasks are byte copies of the validated ones."""
    ds = _dataset(tmp_path)
    first = sorted(p for p in ds.iterdir() if p.is_dir())[0]
    if how == "task-gitignore":
        (first / ".gitignore").write_text("match.mp4\ngt.json\n")
    else:
        excludes = tmp_path / "global-ignore"
        excludes.write_text("*.mp4\n")
        cfg = tmp_path / "gitconfig"
        cfg.write_text(f"[core]\n\texcludesFile = {excludes}\n")
        monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(cfg))
    repo = tmp_path / "repo"
    rc, _, err = _publish([str(ds), "--version", "1.0.0", "--out", str(repo), "--tasks-root", str(TREE)], capsys)
    assert rc == 0, err
    rows = json.loads((repo / "registry.json").read_text())
    for t in rows[0]["tasks"]:
        files = _committed(repo, t["git_commit_id"], t["path"])
        local = ds / Path(t["path"]).name
        want = sorted(f"{t['path']}/{p.relative_to(local).as_posix()}" for p in local.rglob("*") if p.is_file())
        assert sorted(files) == want


def test_a_commit_that_would_differ_from_the_dataset_is_refused(tmp_path, capsys):
    """A task's .gitattributes that makes git rewrite a file on commit (end-of-line conversion) would
    publish other bytes than the validated ones: refused, one line, nothing written."""
    ds = _dataset(tmp_path)
    first = sorted(p for p in ds.iterdir() if p.is_dir())[0]
    (first / ".gitattributes").write_text("*.json text eol=lf\n")
    case = first / "tests" / "case.json"
    case.write_bytes(case.read_bytes().replace(b"\n", b"\r\n"))
    repo = tmp_path / "repo"
    rc, _, err = _publish([str(ds), "--version", "1.0.0", "--out", str(repo), "--no-validate"], capsys)
    assert rc == 2 and "case.json" in err and len(err.strip().splitlines()) == 1, err
    assert not repo.exists()


def _first_task(ds: Path) -> Path:
    return sorted(p for p in ds.iterdir() if p.is_dir())[0]


def _marker_tasks_not_a_list(ds: Path, tmp: Path) -> list[str]:
    m = ds / S.DATASET_MARKER
    doc = json.loads(m.read_text())
    doc["tasks"] = 5
    m.write_text(json.dumps(doc))
    return []


def _case_json_a_list(ds: Path, tmp: Path) -> list[str]:
    (_first_task(ds) / "tests" / "case.json").write_text("[]")
    return []


def _job_config_a_list(ds: Path, tmp: Path) -> list[str]:
    job = tmp / "job"
    job.mkdir()
    (job / "config.json").write_text("[]")
    return ["--jobs", str(job)]


def _trial_verifier_result_a_string(ds: Path, tmp: Path) -> list[str]:
    job = tmp / "job"
    (job / "t1").mkdir(parents=True)
    (job / "config.json").write_text(json.dumps({"agents": [{"name": "oracle"}]}))
    (job / "t1" / "result.json").write_text(json.dumps({"task_name": f"{S.TASK_ORG}/{_first_task(ds).name}",
                                                        "verifier_result": "oops"}))
    return ["--jobs", str(job)]


@pytest.mark.parametrize("damage", [_marker_tasks_not_a_list, _case_json_a_list, _job_config_a_list,
                                    _trial_verifier_result_a_string])
def test_damaged_inputs_are_one_line_errors_not_tracebacks(damage, tmp_path, capsys):
    ds = _dataset(tmp_path)
    extra = damage(ds, tmp_path)
    rc, _, err = _publish([str(ds), "--version", "1.0.0", "--out", str(tmp_path / "repo"), "--no-validate",
                           "--tasks-root", str(TREE), *extra], capsys)
    assert rc == 2 and err.startswith("publish: error:") and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "repo").exists()


def test_the_published_readme_names_each_games_licence_from_its_manifest():
    """The licence is the manifest's `provenance.licence` (build-cases writes it there): never
    "not recorded" for a built-in game."""
    from video_arena.games.dota2.records import LICENCE
    from video_arena.harbor import publish as PB

    got = PB.game_provenance(["chess", "dota2"], None)
    assert got["dota2"]["licence"] == LICENCE
    assert got["chess"]["licence"].startswith("game scores are historical facts")


@pytest.mark.parametrize("kind", ["symlink", "fifo", "huge_reward", "rewards_list"])
def test_jobs_with_hostile_trial_results_are_refused_through_the_trial_reader(tmp_path, capsys, kind):
    """publish reads trial folders with harbor_api/trials.py (the one reader): a linked or FIFO
    result.json is unreadable (never followed, never blocks), a 401-digit reward is not a reward."""
    ds = _dataset(tmp_path)
    task = sorted(p.name for p in ds.iterdir() if p.is_dir())[0]
    job = tmp_path / "job"
    (job / "t1").mkdir(parents=True)
    (job / "config.json").write_text(json.dumps({"agents": [{"name": "oracle"}]}))
    res = job / "t1" / "result.json"
    good = {"task_name": f"video-arena/{task}", "verifier_result": {"rewards": {"reward": 1.0}}}
    if kind == "symlink":
        (tmp_path / "elsewhere.json").write_text(json.dumps(good))
        res.symlink_to(tmp_path / "elsewhere.json")
    elif kind == "fifo":
        os.mkfifo(res)
    elif kind == "huge_reward":
        res.write_text(json.dumps(good).replace("1.0", "9" * 401))
    else:
        res.write_text(json.dumps({**good, "verifier_result": {"rewards": [1.0]}}))
    rc, _, err = _publish([str(ds), "--version", "1.0.0", "--out", str(tmp_path / "repo"), "--no-validate",
                           "--jobs", str(job)], capsys)
    want = {"symlink": "unreadable", "fifo": "unreadable", "huge_reward": "publish: error: ",  # refused (scoring or the reward check), never an OverflowError
            "rewards_list": "not a Harbor trial result"}[kind]
    assert rc == 2 and want in err and "Traceback" not in err, err
    assert not (tmp_path / "repo").exists()
