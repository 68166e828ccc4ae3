"""`video-arena publish` given hostile inputs (docs/SECURITY.md, "Published datasets"): it writes only
into a repository it created or one carrying its marker, restores exactly what it changed on a
failure, copies task folders only, never follows a link it writes through, never blocks on a FIFO,
and every refusal is one line with exit status 2.  Also: every game's licence and provenance reach the
published README and adapter_metadata.json, and parity is the same agent measured both ways."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from video_arena.harbor import publish as P
from video_arena.harbor import spec as S
from video_arena.harbor.generate import Options, generate

TREE = Path(__file__).resolve().parents[1] / "fixtures" / "harbor_tree"
PIN = "registry.example/video-arena/base@sha256:" + "a" * 64


def _dataset(tmp_path: Path, tree: Path = TREE, name: str = "ds") -> Path:
    out = tmp_path / name
    generate(Options(out=out, protocol="B", net="compose-none", media="copy", base_image=PIN, tasks_root=tree,
                     progress=False))
    return out


def _publish(args: list[str], capsys) -> tuple[int, str, str]:
    rc = P.main(args + ["--no-progress", "--no-validate"])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def _one_line(rc: int, err: str) -> None:
    assert rc == 2, err
    assert err.startswith("publish: error: ") and err.count("\n") == 1 and "Traceback" not in err, err


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True,
                          env={**os.environ, "GIT_AUTHOR_NAME": "u", "GIT_AUTHOR_EMAIL": "u@x",
                               "GIT_COMMITTER_NAME": "u", "GIT_COMMITTER_EMAIL": "u@x"}).stdout


def _published_repo(tmp_path: Path, capsys) -> tuple[Path, Path]:
    ds = _dataset(tmp_path)
    repo = tmp_path / "repo"
    rc, _, err = _publish([str(ds), "--version", "1.0.0", "--out", str(repo)], capsys)
    assert rc == 0, err
    return ds, repo


# --------------------------------------------------------------------------------------------------
# where it writes
# --------------------------------------------------------------------------------------------------
def _user_repository(proj: Path) -> tuple[Path, str]:
    """Someone's own repository with one commit; (its folder, its HEAD)."""
    proj.mkdir()
    _git(proj, "init", "-q")
    (proj / "a.txt").write_text("mine\n")
    _git(proj, "add", "a.txt")
    _git(proj, "commit", "-qm", "init")
    return proj, _git(proj, "rev-parse", "HEAD")


@pytest.mark.parametrize("exists", [True, False])
def test_a_folder_inside_another_repository_is_refused(exists, tmp_path, capsys):
    """`--out proj/pub` with pub empty (or missing) inside the user's repository proj: nothing is committed
    to proj (git must never find the enclosing repository), nothing is written."""
    ds = _dataset(tmp_path)
    proj, head = _user_repository(tmp_path / "proj")
    pub = proj / "pub"
    if exists:
        pub.mkdir()
    rc, _, err = _publish([str(ds), "--version", "1.0.0", "--out", str(pub)], capsys)
    _one_line(rc, err)
    assert "inside the git repository" in err
    assert _git(proj, "rev-parse", "HEAD") == head
    assert sorted(p.name for p in proj.iterdir()) == sorted([".git", "a.txt"] + (["pub"] if exists else []))
    assert not exists or list(pub.iterdir()) == []


def test_an_exported_git_dir_never_points_publish_at_another_repository(tmp_path, capsys, monkeypatch):
    """GIT_DIR / GIT_WORK_TREE left in the environment (a shell inside another checkout's hook, a script)
    would make every git command of publish act on that repository."""
    ds = _dataset(tmp_path)
    proj, head = _user_repository(tmp_path / "proj")
    monkeypatch.setenv("GIT_DIR", str(proj / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(proj))
    rc, _, err = _publish([str(ds), "--version", "1.0.0", "--out", str(tmp_path / "repo")], capsys)
    monkeypatch.delenv("GIT_DIR")
    monkeypatch.delenv("GIT_WORK_TREE")
    assert rc == 0, err
    assert _git(proj, "rev-parse", "HEAD") == head and _git(proj, "status", "--porcelain") == ""
    assert len(_git(tmp_path / "repo", "log", "--format=%H").split()) == 2


def test_out_through_a_symlink_into_the_dataset_is_refused(tmp_path, capsys):
    ds = _dataset(tmp_path)
    (tmp_path / "link").symlink_to(ds)
    rc, _, err = _publish([str(ds), "--version", "1.0.0", "--out", str(tmp_path / "link" / "pub")], capsys)
    _one_line(rc, err)
    assert "overlaps the dataset" in err and not (ds / "pub").exists()


def test_out_inside_the_tasks_tree_is_refused(tmp_path, capsys):
    tree = tmp_path / "tree"
    shutil.copytree(TREE, tree)
    ds = _dataset(tmp_path, tree)
    rc, _, err = _publish([str(ds), "--version", "1.0.0", "--out", str(tree / "chess" / "pub"),
                           "--tasks-root", str(tree)], capsys)
    _one_line(rc, err)
    assert "overlaps the tasks tree" in err and not (tree / "chess" / "pub").exists()


def test_the_repository_is_a_readable_clone_source(tmp_path, capsys):
    _, repo = _published_repo(tmp_path, capsys)
    assert repo.stat().st_mode & 0o055 == 0o055  # group and others may read and enter it (umask 022)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", repo.as_uri(), str(clone)], check=True, capture_output=True)
    assert (clone / "registry.json").is_file()


def test_a_committed_symlink_on_the_write_path_is_refused(tmp_path, capsys):
    """A repository publish wrote, with a committed `datasets/video-arena-b -> /outside`: the new version
    would land (ground truth included) outside the repository, and stay there after a rollback."""
    ds, repo = _published_repo(tmp_path, capsys)
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.rmtree(repo / "datasets" / "video-arena-b")
    (repo / "datasets" / "video-arena-b").symlink_to(outside)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "a link")
    head = _git(repo, "rev-parse", "HEAD")
    rc, _, err = _publish([str(ds), "--version", "2.0.0", "--out", str(repo)], capsys)
    _one_line(rc, err)
    assert "symbolic link" in err
    assert list(outside.iterdir()) == [] and _git(repo, "rev-parse", "HEAD") == head


# --------------------------------------------------------------------------------------------------
# restoring exactly what it changed
# --------------------------------------------------------------------------------------------------
def _with_ignored_files(repo: Path) -> None:
    (repo / ".gitignore").write_text("secrets.txt\nlocal/\n")
    _git(repo, "add", ".gitignore")
    _git(repo, "commit", "-qm", "ignore")
    (repo / "secrets.txt").write_text("key\n")
    (repo / "local").mkdir()
    (repo / "local" / "notes").write_text("mine\n")


def _unchanged(repo: Path, head: str) -> None:
    assert _git(repo, "rev-parse", "HEAD") == head
    assert _git(repo, "status", "--porcelain") == ""
    assert (repo / "secrets.txt").read_text() == "key\n" and (repo / "local" / "notes").read_text() == "mine\n"
    assert not (repo / "datasets" / "video-arena-b" / "2.0.0").exists()


def test_a_malformed_registry_row_is_one_line_and_ignored_files_survive(tmp_path, capsys):
    ds, repo = _published_repo(tmp_path, capsys)
    rows = json.loads((repo / "registry.json").read_text())
    rows.append({"name": "x", "version": 3})
    (repo / "registry.json").write_text(json.dumps(rows))
    _git(repo, "commit", "-qam", "a bad row")
    _with_ignored_files(repo)
    head = _git(repo, "rev-parse", "HEAD")
    rc, _, err = _publish([str(ds), "--version", "2.0.0", "--out", str(repo)], capsys)
    _one_line(rc, err)
    assert "row 1" in err
    _unchanged(repo, head)


def test_an_interrupt_mid_copy_restores_exactly_what_publish_changed(tmp_path, capsys, monkeypatch):
    ds, repo = _published_repo(tmp_path, capsys)
    _with_ignored_files(repo)
    head = _git(repo, "rev-parse", "HEAD")
    real, calls = P.copy_task, []

    def interrupted(src, dst):
        calls.append(src)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(src, dst)

    monkeypatch.setattr(P, "copy_task", interrupted)
    rc = P.main([str(ds), "--version", "2.0.0", "--out", str(repo), "--no-progress", "--no-validate"])
    assert rc == 130 and len(calls) == 2
    _unchanged(repo, head)


def test_a_failure_after_the_commit_drops_only_publishs_own_commit(tmp_path, capsys, monkeypatch):
    ds, repo = _published_repo(tmp_path, capsys)
    _with_ignored_files(repo)
    head = _git(repo, "rev-parse", "HEAD")
    registry = (repo / "registry.json").read_bytes()

    def boom(*a, **k):
        raise P.PublishError("registry check failed on purpose")

    monkeypatch.setattr(P, "check_registry", boom)
    rc, _, err = _publish([str(ds), "--version", "2.0.0", "--out", str(repo)], capsys)
    _one_line(rc, err)
    _unchanged(repo, head)
    assert (repo / "registry.json").read_bytes() == registry


# --------------------------------------------------------------------------------------------------
# what it copies
# --------------------------------------------------------------------------------------------------
def test_a_task_folder_that_is_a_symlink_is_refused(tmp_path, capsys):
    ds = _dataset(tmp_path)
    task = sorted(p for p in ds.iterdir() if p.is_dir())[0]
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(task, elsewhere)
    (elsewhere / "stolen.txt").write_text("host file\n")
    shutil.rmtree(task)
    task.symlink_to(elsewhere)
    rc, _, err = _publish([str(ds), "--version", "1.0.0", "--out", str(tmp_path / "repo")], capsys)
    _one_line(rc, err)
    assert "symbolic link" in err and not (tmp_path / "repo").exists()


@pytest.mark.parametrize("entry", [".env", "notes.txt", "big.bin"])
def test_other_top_level_entries_are_refused(entry, tmp_path, capsys):
    ds = _dataset(tmp_path)
    with open(ds / entry, "wb") as fh:
        if entry == "big.bin":
            fh.truncate(2 << 30)  # sparse: 2 GiB of nothing
        else:
            fh.write(b"API_KEY=secret\n")
    rc, _, err = _publish([str(ds), "--version", "1.0.0", "--out", str(tmp_path / "repo")], capsys)
    _one_line(rc, err)
    assert repr(entry) in err and not (tmp_path / "repo").exists()


def test_untracked_files_of_the_repository_are_never_published(tmp_path, capsys):
    """A repository configured not to show untracked files (status.showUntrackedFiles=no): an `.env` left in
    it must not ride along into the commit."""
    ds, repo = _published_repo(tmp_path, capsys)
    _git(repo, "config", "status.showUntrackedFiles", "no")
    (repo / ".env").write_text("API_KEY=secret\n")
    head = _git(repo, "rev-parse", "HEAD")
    rc, _, err = _publish([str(ds), "--version", "2.0.0", "--out", str(repo)], capsys)
    _one_line(rc, err)
    assert "uncommitted changes" in err and _git(repo, "rev-parse", "HEAD") == head


# --------------------------------------------------------------------------------------------------
# bounded, non-blocking reads
# --------------------------------------------------------------------------------------------------
def _no_hang(fn, timeout: float = 60.0):
    box = {}
    th = threading.Thread(target=lambda: box.setdefault("rc", fn()), daemon=True)
    th.start()
    th.join(timeout)
    assert not th.is_alive(), "publish blocked"
    return box["rc"]


def test_a_fifo_as_case_json_is_refused_without_blocking(tmp_path, capsys):
    ds = _dataset(tmp_path)
    case = sorted(p for p in ds.iterdir() if p.is_dir())[0] / "tests" / "case.json"
    case.unlink()
    os.mkfifo(case)
    rc = _no_hang(lambda: P.main([str(ds), "--version", "1.0.0", "--out", str(tmp_path / "repo"),
                                  "--no-progress", "--no-validate"]))
    _one_line(rc, capsys.readouterr().err)


def _job(tmp_path: Path, ds: Path, result: bytes | None = None) -> Path:
    job = tmp_path / "job"
    (job / "t1").mkdir(parents=True)
    (job / "config.json").write_text(json.dumps({"agents": [{"name": "oracle"}]}))
    task = json.loads((ds / S.DATASET_MARKER).read_text())["tasks"][0]
    if result is None:
        os.mkfifo(job / "t1" / "result.json")
    else:
        (job / "t1" / "result.json").write_bytes(result.replace(b"TASK", task.encode()))
    return job


def test_a_fifo_as_a_trial_result_is_refused_without_blocking(tmp_path, capsys):
    ds = _dataset(tmp_path)
    job = _job(tmp_path, ds)
    rc = _no_hang(lambda: P.main([str(ds), "--version", "1.0.0", "--out", str(tmp_path / "repo"),
                                  "--no-progress", "--no-validate", "--jobs", str(job)]))
    _one_line(rc, capsys.readouterr().err)


@pytest.mark.parametrize("reward", [b'"abc"', b"1" + b"0" * 400, b"2.5"])
def test_a_reward_that_is_not_a_number_from_0_to_1_is_one_line(reward, tmp_path, capsys):
    """A string, an integer of 401 digits (a valid JSON number no float holds), 2.5."""
    ds = _dataset(tmp_path)
    job = _job(tmp_path, ds, b'{"task_name": "TASK", "verifier_result": {"rewards": {"reward": ' + reward + b'}}}')
    rc, _, err = _publish([str(ds), "--version", "1.0.0", "--out", str(tmp_path / "repo"), "--jobs", str(job),
                           "--tasks-root", str(TREE)], capsys)
    _one_line(rc, err)


def _remove_deep(root: Path) -> None:
    """Remove a folder tree too deep for shutil.rmtree's recursion (os.walk is iterative)."""
    for top, dirs, files in os.walk(root, topdown=False):
        for name in files:
            os.unlink(os.path.join(top, name))
        for name in dirs:
            os.rmdir(os.path.join(top, name))


def test_a_task_folder_1500_levels_deep_is_one_line(tmp_path, capsys, monkeypatch):
    """Under --no-validate nothing but publish's own walk looks at the task: it is refused before it is
    walked or copied, one line, never a RecursionError."""
    ds = _dataset(tmp_path)
    deep = sorted(p for p in ds.iterdir() if p.is_dir())[0] / "environment" / "deep"
    deep.mkdir()
    monkeypatch.chdir(deep)
    for _ in range(1500):
        os.mkdir("d")
        os.chdir("d")
    Path("x").write_text("x")
    monkeypatch.chdir(tmp_path)
    try:
        rc, _, err = _publish([str(ds), "--version", "1.0.0", "--out", str(tmp_path / "repo")], capsys)
        _one_line(rc, err)
        assert "levels deep" in err and not (tmp_path / "repo").exists()
    finally:
        _remove_deep(deep)


# --------------------------------------------------------------------------------------------------
# licences and provenance
# --------------------------------------------------------------------------------------------------
def _tree_of_every_game(tmp_path: Path) -> tuple[Path, dict[str, dict]]:
    """One case of every built-in game that has cases, with the game's real manifest.json (its provenance
    unchanged; the case's media digest follows the stand-in video), its real ground truth and a small
    stand-in video."""
    from video_arena import paths
    from video_arena.digests import sha256_file

    tree = tmp_path / "every-game"
    video = TREE / "chess" / "media" / "Fx7kQ2aB.mp4"
    provenance = {}
    for gdir in sorted(paths.default_tasks_root().iterdir()):
        cases_file, manifest_file = gdir / "cases.json", gdir / "manifest.json"
        if not (cases_file.is_file() and manifest_file.is_file()):
            continue
        cases = json.loads(cases_file.read_text())["cases"]
        if not cases:
            continue
        cid = cases[0]["case_id"]
        d = tree / gdir.name
        (d / "gt").mkdir(parents=True)
        (d / "media").mkdir()
        for f in ("game.toml", "instruction.md", "answer_seed.json"):
            shutil.copyfile(gdir / f, d / f)
        shutil.copyfile(gdir / "gt" / f"{cid}.json", d / "gt" / f"{cid}.json")
        shutil.copyfile(video, d / "media" / f"{cid}.mp4")
        (d / "cases.json").write_text(json.dumps({"game": gdir.name, "cases": [cases[0]]}))
        manifest = json.loads(manifest_file.read_text())
        entry = next(c for c in manifest["cases"] if c["case_id"] == cid)
        manifest["cases"] = [dict(entry, media_sha256=sha256_file(d / "media" / f"{cid}.mp4"))]
        (d / "manifest.json").write_text(json.dumps(manifest))
        provenance[gdir.name] = manifest["provenance"]
    return tree, provenance


def test_every_games_licence_and_provenance_reach_the_published_files(tmp_path, capsys):
    tree, provenance = _tree_of_every_game(tmp_path)
    assert {"go", "badminton", "sc2", "chess"} <= set(provenance)
    ds = _dataset(tmp_path, tree)
    repo = tmp_path / "repo"
    rc, _, err = _publish([str(ds), "--version", "1.0.0", "--out", str(repo), "--tasks-root", str(tree)], capsys)
    assert rc == 0, err
    base = repo / "datasets" / "video-arena-b" / "1.0.0"
    readme = (base / "README.md").read_text()
    meta = json.loads((base / "adapter_metadata.json").read_text())[0]
    licences = readme.split("## Licences of the matches", 1)[1]
    for game, prov in provenance.items():
        assert f"### {game}\n" in licences
        section = licences.split(f"### {game}\n", 1)[1].split("\n### ", 1)[0]
        assert f"- **licence**: {prov['licence']}" in section, game
        assert f"- source: {prov['source']}" in section, game
        assert meta["provenance"][game]["licence"] == prov["licence"]
        assert meta["provenance"][game]["source"] == prov["source"]
    assert "GPL-2" in meta["provenance"]["go"]["licence"]
    assert "MIT" in meta["provenance"]["badminton"]["licence"] and "MIT" in meta["provenance"]["sc2"]["licence"]


# --------------------------------------------------------------------------------------------------
# parity as Harbor means it
# --------------------------------------------------------------------------------------------------
def _native_and_job(tmp_path: Path, ds: Path, harbor_drift: float = 0.0) -> tuple[Path, Path]:
    """The same agent run both ways on the fixture tree's two chess cases: natively (a run-b results folder)
    and through Harbor (a job whose verifier rewards are the judge's, moved by `harbor_drift`)."""
    from scoring_helpers import b_run, make_job, trial, write_cell
    from video_arena.core.judge_loader import load_judge

    J = load_judge()
    native, jobs = tmp_path / "native", tmp_path / "jobs"
    job = make_job(jobs, "chance-harbor", model="chance")
    for i, cid in enumerate(("Fx7kQ2aB", "Gm4pR9zT")):
        gt = J.load_gt(str(TREE / "chess" / "gt" / f"{cid}.json"))
        answer = {"events": J.oracle_answer(gt)["events"][: 1 + i]}
        write_cell(native, b_run("chess", cid, model="chance", agent_cmd="python3 chance_agent.py"), answer)
        rw = J.reward_of(J.judge(gt, json.dumps(answer)))
        rw = dict(rw, reward=max(0.0, rw["reward"] - harbor_drift))
        trial(job, "chess", cid, answer, rewards=rw, model="chance")
    return native, job


@pytest.mark.parametrize("drift", [0.0, 0.5])
def test_parity_puts_the_native_run_beside_its_harbor_job(drift, tmp_path, capsys):
    ds = _dataset(tmp_path)
    native, job = _native_and_job(tmp_path, ds, drift)
    repo = tmp_path / "repo"
    rc, out, err = _publish([str(ds), "--version", "1.0.0", "--out", str(repo), "--tasks-root", str(TREE),
                             "--jobs", str(job), "--parity", str(native)], capsys)
    assert rc == 0, err
    base = repo / "datasets" / "video-arena-b" / "1.0.0"
    (entry,) = json.loads((base / "parity_experiment.json").read_text())
    for key in ("adapter_name", "agent", "model", "date", "adapted_benchmark_size", "parity_benchmark_size",
                "number_of_runs", "notes", "original_parity_repo", "adapter_pr", "dataset_pr", "parity_pr",
                "metrics"):
        assert key in entry  # Harbor's template
    par = entry["video_arena_parity"]
    assert [t["task"] for t in par["per_task"]] == ["chess-Fx7kQ2aB", "chess-Gm4pR9zT"]
    for t in par["per_task"]:
        assert t["difference"] == pytest.approx(t["harbor"] - t["native"])
    assert par["per_game"]["chess"]["n_tasks"] == 2
    assert par["mean_difference_harbor_minus_native"] == pytest.approx(
        sum(t["difference"] for t in par["per_task"]) / 2, abs=1e-5)
    meta = json.loads((base / "adapter_metadata.json").read_text())[0]["harbor_adapter"][0]
    if drift == 0.0:
        assert par["matching"] and par["difference_ci95"] == [0.0, 0.0]
        assert meta["parity_matching_agents"] == ["terminus-2+chance"] and meta["parity_unmatching_agents"] is None
    else:
        assert not par["matching"]
        assert meta["parity_matching_agents"] == [] and meta["parity_unmatching_agents"] == ["terminus-2+chance"]
    assert meta["parity_benchmark_size"] == 2
    assert "parity" in out and "chess" in (base / "README.md").read_text().split("(Parity)", 1)[1]


def test_a_harbor_only_job_is_never_named_parity_matching(tmp_path, capsys):
    ds = _dataset(tmp_path)
    _, job = _native_and_job(tmp_path, ds)
    repo = tmp_path / "repo"
    rc, _, err = _publish([str(ds), "--version", "1.0.0", "--out", str(repo), "--tasks-root", str(TREE),
                           "--jobs", str(job)], capsys)
    assert rc == 0, err
    base = repo / "datasets" / "video-arena-b" / "1.0.0"
    assert json.loads((base / "parity_experiment.json").read_text()) == []
    meta = json.loads((base / "adapter_metadata.json").read_text())[0]["harbor_adapter"][0]
    assert meta["parity_matching_agents"] == [] and meta["parity_unmatching_agents"] is None


def test_more_native_runs_than_jobs_is_one_line(tmp_path, capsys):
    ds = _dataset(tmp_path)
    native, _ = _native_and_job(tmp_path, ds)
    rc, _, err = _publish([str(ds), "--version", "1.0.0", "--out", str(tmp_path / "repo"), "--parity", str(native)],
                          capsys)
    _one_line(rc, err)


@pytest.mark.parametrize("cpus, override", [(2, " --override-cpus 2"), (64, "")])
def test_the_printed_next_command_runs_on_the_host_it_was_printed_on(tmp_path, capsys, monkeypatch, cpus, override):
    """A task asks for S.CPUS CPUs; on a smaller host Docker refuses the trial unless Harbor overrides them."""
    ds = _dataset(tmp_path)
    monkeypatch.setattr(os, "cpu_count", lambda: cpus)
    rc, out, err = _publish([str(ds), "--version", "1.0.0", "--out", str(tmp_path / "repo")], capsys)
    assert rc == 0, err
    (line,) = [ln for ln in out.splitlines() if ln.startswith("next: cd ")]
    assert line.endswith(" -a oracle" + override), line
    # from the repository's root: the registry's dataset metric names its script relative to it
    assert f"cd {tmp_path / 'repo'} && harbor run -d video-arena-b@1.0.0 --registry-path registry.json" in line
    (row,) = json.loads((tmp_path / "repo" / "registry.json").read_text())
    (metric,) = row["metrics"]
    assert metric["type"] == "uv-script" and (tmp_path / "repo" / metric["kwargs"]["script_path"]).is_file()
