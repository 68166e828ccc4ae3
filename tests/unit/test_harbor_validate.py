"""validate: a generated dataset passes; each planted defect is caught and names its folder."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from video_arena import paths
from video_arena.harbor import generate as G
from video_arena.harbor import spec as S
from video_arena.harbor import validate as V

TREE = Path(__file__).resolve().parents[1] / "fixtures" / "harbor_tree"
HAS_COMPOSE = V.compose_available()


pytestmark = pytest.mark.usefixtures("no_tasks_env")


@pytest.fixture(scope="module")
def datasets(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("ds")
    out = {}
    for name, extra in {"b_mount": ["--net", "compose-none"], "a_mount": ["--protocol", "A"],
                        "b_copy": ["--media", "copy"], "a_copy": ["--protocol", "A", "--media", "copy", "--net", "compose-none"]}.items():
        assert G.main(["--out", str(base / name), "--tasks-root", str(TREE), "--no-progress", *extra]) == 0
        out[name] = base / name
    return out


@pytest.fixture(scope="module")
def validator() -> V.Validator:
    return V.Validator(TREE, HAS_COMPOSE)


@pytest.fixture
def task(datasets, tmp_path):
    """A private copy of one good B mount-mode dataset, to plant defects in."""
    ds = tmp_path / "ds"
    shutil.copytree(datasets["b_mount"], ds)
    return ds / "chess-Fx7kQ2aB"


@pytest.fixture
def copy_task(datasets, tmp_path):
    ds = tmp_path / "dsc"
    shutil.copytree(datasets["b_copy"], ds)
    return ds / "chess-Fx7kQ2aB"


@pytest.mark.parametrize("name", ["b_mount", "a_mount", "b_copy", "a_copy"])
def test_generated_datasets_are_valid(datasets, validator, name):
    reports, dproblems = validator.check_dataset(datasets[name], jobs=2, progress=False)
    assert dproblems == []
    assert len(reports) == 2
    assert all(r.ok for r in reports), [(r.path.name, r.problems) for r in reports]
    notes = {n for r in reports for n in r.notes}
    if HAS_COMPOSE and name.endswith("mount"):
        # the one documented finding, reported as a note and nothing else
        assert any("compose-external-bind-mount" in n for n in notes)
    if name.endswith("copy"):
        assert not any("lint" in n for n in notes)  # zero lint findings


def problems(validator, task) -> str:
    rep = validator.check(task)
    assert not rep.ok, "the planted defect was not caught"
    return "\n".join(rep.problems)


def test_gt_in_environment(validator, task):
    shutil.copy(task / "tests" / "gt.json", task / "environment" / "notes.json")
    p = problems(validator, task)
    assert "environment/notes.json" in p and "tests/gt.json" in p


def test_gt_rows_disguised_as_the_seed(validator, copy_task):
    gt = json.loads((copy_task / "tests" / "gt.json").read_text())
    (copy_task / "environment" / "answer.json").write_text(json.dumps({"events": gt["events"]}))
    p = problems(validator, copy_task)
    assert "not byte-identical" in p and "ground-truth rows" in p


def test_solution_in_dockerfile(validator, copy_task):
    df = copy_task / "environment" / "Dockerfile"
    df.write_text(df.read_text() + "COPY solve.sh /opt/solve.sh\n")
    shutil.copy(copy_task / "solution" / "solve.sh", copy_task / "environment" / "solve.sh")
    p = problems(validator, copy_task)
    assert "environment/solve.sh" in p and "Dockerfile" in p


def test_compose_mounting_the_ground_truth(validator, task):
    c = task / "environment" / "docker-compose.yaml"
    c.write_text(c.read_text() + '      - type: bind\n        source: "../tests/gt.json"\n'
                 '        target: "/app/gt.json"\n        read_only: true\n')
    assert "/app/gt.json" in problems(validator, task)


def test_wrong_seed_bytes(validator, task):
    (task / "environment" / "answer.json").write_bytes(b'{"events":[]}')  # re-serialized: not the game's bytes
    assert "not byte-identical" in problems(validator, task)


def test_tampered_b_instruction(validator, task):
    f = task / "environment" / "instruction.md"
    f.write_text(f.read_text().replace("3 seconds", "5 seconds"))
    assert "environment/instruction.md digest" in problems(validator, task)


def test_tampered_turn1_prompt(validator, task):
    f = task / "instruction.md"
    f.write_text(f.read_text().replace("200", "400"))
    assert "instruction.md digest" in problems(validator, task)


def test_tampered_a_instruction(validator, datasets, tmp_path):
    ds = tmp_path / "a"
    shutil.copytree(datasets["a_mount"], ds)
    f = ds / "chess-Gm4pR9zT" / "instruction.md"
    f.write_text(f.read_text() + "\nThe first event is a check.\n")
    assert "instruction_for('video')" in problems(validator, ds / "chess-Gm4pR9zT")


def test_lint_finding_unknown_config_field(validator, task):
    t = task / "task.toml"
    t.write_text(t.read_text().replace("[agent]\n", "[agent]\ntimeout = 5\n"))
    assert "harbor lint [unknown-config-field]" in problems(validator, task)


@pytest.mark.skipif(not HAS_COMPOSE, reason="lint's compose rules need the docker compose CLI plugin")
def test_lint_finding_writable_mount(validator, task):
    c = task / "environment" / "docker-compose.yaml"
    text = c.read_text()
    c.write_text(text.replace("read_only: true", "read_only: false", 1))
    p = problems(validator, task)
    assert "harbor lint [compose-writable-bind-mount]" in p and "is not read-only" in p


def test_agent_as_root(validator, task):
    t = task / "task.toml"
    t.write_text(t.read_text().replace('user = "agent"', 'user = "root"'))
    assert "the agent runs as root" in problems(validator, task)


def test_shared_verifier_and_budget(validator, task):
    t = task / "task.toml"
    t.write_text(t.read_text().replace('environment_mode = "separate"', 'environment_mode = "shared"')
                 .replace("timeout_sec = 7200.0", "timeout_sec = 9000.0"))
    p = problems(validator, task)
    assert "not separate" in p and "timeout_sec is 9000.0" in p


def test_oracle_answer_that_does_not_score_one(validator, task):
    sol = task / "solution" / "answer.json"
    doc = json.loads(sol.read_text())
    doc["events"] = doc["events"][:-1]
    sol.write_text(json.dumps(doc))
    assert "does not score 1.0" in problems(validator, task)


def test_judge_and_test_sh_must_be_the_checkouts(validator, task):
    (task / "tests" / "judge.py").write_text((task / "tests" / "judge.py").read_text() + "\n# edited\n")
    sh = task / "tests" / "test.sh"
    sh.write_text(sh.read_text().replace("/tests/score_harbor.py", "/app/score.py"))
    p = problems(validator, task)
    assert "judge.py is not a byte copy" in p and "test.sh differs" in p


def test_folder_harbor_would_skip(validator, task):
    (task / "tests" / "test.sh").unlink()
    assert "Task()" in problems(validator, task) or "is_valid_dir" in problems(validator, task)


def test_network_mode_mismatch(validator, task):
    c = task / "environment" / "docker-compose.yaml"
    c.write_text(c.read_text().replace("    network_mode: none\n", ""))
    assert "network_mode: none" in problems(validator, task)


def test_cli_names_each_bad_folder_and_exits_1(datasets, tmp_path, capsys):
    ds = tmp_path / "cli"
    shutil.copytree(datasets["b_mount"], ds)
    (ds / "chess-Fx7kQ2aB" / "environment" / "answer.json").write_bytes(b"{}")
    (ds / "chess-Gm4pR9zT" / "tests" / "gt.json").write_text("{}")
    rc = V.main([str(ds), "--tasks-root", str(TREE), "--no-progress"])
    out = capsys.readouterr().out
    assert rc == 1
    assert re.search(r"BAD .*chess-Fx7kQ2aB:", out) and re.search(r"BAD .*chess-Gm4pR9zT:", out)
    assert "validate FAILED: 2 task folders, 0 good, 2 bad" in out
    assert V.main([str(datasets["b_mount"]), "--tasks-root", str(TREE), "--no-progress"]) == 0


def test_dataset_marker_must_list_the_folders(datasets, tmp_path, validator):
    ds = tmp_path / "m"
    shutil.copytree(datasets["b_copy"], ds)
    shutil.rmtree(ds / "chess-Gm4pR9zT")
    _, dproblems = validator.check_dataset(ds, progress=False)
    assert dproblems and "missing" in dproblems[0]


def test_validate_script_is_thin():
    text = (paths.REPO_ROOT / "validate_harbor.py").read_text()
    assert "from video_arena.harbor.validate import main" in text and len(text.splitlines()) < 15


def test_validator_runs_without_docker_compose(datasets, monkeypatch, capsys):
    monkeypatch.setattr(V, "compose_available", lambda: False)
    assert V.main([str(datasets["b_mount"]), "--tasks-root", str(TREE), "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert "compose rules are skipped" in captured.err and "without compose lint" in captured.out


def test_seed_constants_match_the_games():
    from video_arena.games.cli import ANSWER_SEED_BYTES

    assert (TREE / "chess" / "answer_seed.json").read_bytes() == ANSWER_SEED_BYTES
    assert S.AGENT_TIMEOUT_SEC == {"A": 3600.0, "B": 7200.0}


def test_unreadable_video_is_caught_before_any_trial(tmp_path, capsys):
    """A 0600 video bind-mounted into the sandbox reads as 'Permission denied' for the agent user."""
    tree = tmp_path / "tree"
    shutil.copytree(TREE, tree)
    video = tree / "chess" / "media" / "Gm4pR9zT.mp4"
    video.chmod(0o600)
    out = tmp_path / "ds"
    assert G.main(["--out", str(out), "--tasks-root", str(tree), "--no-progress", "--net", "compose-none"]) == 0
    assert "not readable by other users" in capsys.readouterr().err
    v = V.Validator(tree, HAS_COMPOSE)
    assert v.check(out / "chess-Fx7kQ2aB").ok
    assert "Permission denied" in problems(v, out / "chess-Gm4pR9zT")
    video.chmod(0o644)
    assert v.check(out / "chess-Gm4pR9zT").ok


# ---------------------------------------------------------------- what a tampered task.toml or environment/ adds

def _append_toml(task: Path, text: str) -> None:
    t = task / "task.toml"
    assert t.read_text().rstrip().splitlines()[-1].startswith("memory_mb")  # [environment] is the last table
    t.write_text(t.read_text() + text)


def test_environment_env_holding_ground_truth(validator, task):
    rows = json.dumps(json.loads((task / "tests" / "gt.json").read_text())["events"])
    _append_toml(task, f"\n[environment.env]\nHINT = {json.dumps(rows)}\n")
    p = problems(validator, task)
    assert "[environment.env] sets HINT (it names or holds ground truth)" in p


def test_environment_env_with_any_other_content(validator, task):
    _append_toml(task, '\n[environment.env]\nLANG = "C.UTF-8"\n')
    p = problems(validator, task)
    assert "[environment.env] sets LANG:" in p and "ground truth" not in p


def test_verifier_env(validator, task):
    _append_toml(task, '\n[verifier.env]\nVA_TOLERANCE = "30"\n')
    assert "[verifier.env] sets VA_TOLERANCE" in problems(validator, task)


def test_docker_image_not_the_declared_base_image(validator, task):
    t = task / "task.toml"
    t.write_text(t.read_text().replace('docker_image = "video-arena/base:latest"', 'docker_image = "evil/base:latest"'))
    assert "[environment].docker_image is 'evil/base:latest', not the declared base image" in problems(validator, task)


def test_dockerfile_from_not_the_declared_base_image(validator, copy_task):
    df = copy_task / "environment" / "Dockerfile"
    df.write_text(df.read_text().replace("FROM video-arena/base:latest", "FROM evil/base:latest"))
    assert "is not FROM the declared base image video-arena/base:latest" in problems(validator, copy_task)


def test_declared_base_image_comes_from_the_dataset_marker(datasets, tmp_path):
    out = tmp_path / "pinned"
    assert G.main(["--out", str(out), "--tasks-root", str(TREE), "--no-progress", "--net", "compose-none",
                   "--base-image", "registry.example/va/base:1"]) == 0
    v = V.Validator(TREE, with_compose=False)
    reports, dproblems = v.check_dataset(out, progress=False)
    assert dproblems == [] and all(r.ok for r in reports), [r.problems for r in reports]
    marker = json.loads((out / S.DATASET_MARKER).read_text())
    marker["base_image"] = S.DEFAULT_BASE_IMAGE
    (out / S.DATASET_MARKER).write_text(json.dumps(marker))
    assert "not the declared base image 'video-arena/base:latest'" in problems(v, out / "chess-Fx7kQ2aB")


def test_mcp_servers(validator, task):
    _append_toml(task, '\n[[environment.mcp_servers]]\nname = "web"\ntransport = "sse"\nurl = "http://10.0.0.1/sse"\n')
    assert "[environment].mcp_servers is set (web)" in problems(validator, task)


def test_skills_dir(validator, task):
    _append_toml(task, 'skills_dir = "/opt/skills"\n')
    assert "[environment].skills_dir is set ('/opt/skills')" in problems(validator, task)


def test_healthcheck(validator, task):
    _append_toml(task, '\n[environment.healthcheck]\ncommand = "cat /tests/gt.json > /app/x"\n')
    assert "[environment].healthcheck is set" in problems(validator, task)


def test_directory_symlink_under_environment(validator, task):
    (task / "environment" / "docs").symlink_to("../tests", target_is_directory=True)
    assert "environment/docs is a symlink (to '../tests')" in problems(validator, task)


def test_file_symlink_under_environment(validator, copy_task):
    seed = copy_task / "environment" / "answer.json"
    seed.unlink()
    seed.symlink_to("/etc/hostname")
    p = problems(validator, copy_task)
    assert "environment/answer.json is a symlink (to '/etc/hostname')" in p


def test_any_other_task_toml_change_is_caught_by_the_re_render(validator, task):
    t = task / "task.toml"
    text = t.read_text().replace('workdir = "/app"', 'workdir = "/tmp"')
    t.write_text(text + '\n[solution.env]\nX = "1"\n\n[[verifier.collect]]\ncommand = "cp -r / /logs"\n')
    p = problems(validator, task)
    assert 'task.toml environment.workdir is "/tmp", make-harbor writes "/app"' in p
    assert "[solution.env] sets X" in p and "[[verifier.collect]] is set" in p
    assert "task.toml sets verifier.collect" in p


def test_folder_name_with_a_trailing_newline(validator, task):
    odd = task.with_name(task.name + "\n")
    task.rename(odd)
    assert "is not <game>-<case_id>" in problems(validator, odd)


@pytest.mark.skipif(not HAS_COMPOSE, reason="lint's compose rules need the docker compose CLI plugin")
def test_batched_compose_lint_finds_what_per_task_lint_finds(datasets, tmp_path):
    """validate loads the compose files of many tasks in one `docker compose config` run; a planted
    writable mount is still found there, exactly as Harbor's per-task loader finds it."""
    ds = tmp_path / "batch"
    shutil.copytree(datasets["b_mount"], ds)
    c = ds / "chess-Gm4pR9zT" / "environment" / "docker-compose.yaml"
    c.write_text(c.read_text().replace("read_only: true", "read_only: false", 1))
    v = V.Validator(TREE, True)
    reports, _ = v.check_dataset(ds, progress=False)
    assert v.compose_runs == 1  # both tasks in one run
    by = {r.path.name: r for r in reports}
    assert by["chess-Fx7kQ2aB"].ok
    batched = [p for p in by["chess-Gm4pR9zT"].problems if p.startswith("harbor lint")]
    alone = [p for p in problems(V.Validator(TREE, True), ds / "chess-Gm4pR9zT").split("\n")
             if p.startswith("harbor lint")]
    assert batched == alone and any("compose-writable-bind-mount" in p for p in batched)


def test_worker_processes_report_what_threads_report(datasets, tmp_path):
    ds = tmp_path / "procs"
    shutil.copytree(datasets["b_mount"], ds)
    (ds / "chess-Gm4pR9zT" / "environment" / "answer.json").write_bytes(b"{}")
    v = V.Validator(TREE, HAS_COMPOSE)
    threads, _ = v.check_dataset(ds, jobs=2, progress=False, processes=False)
    procs, _ = v.check_dataset(ds, jobs=2, progress=False, processes=True)
    assert [(r.path, r.problems, r.notes) for r in procs] == [(r.path, r.problems, r.notes) for r in threads]
    assert not procs[1].ok and "not byte-identical" in "\n".join(procs[1].problems)


def _hostile_filter_layouts(task: Path) -> dict[str, callable]:
    """Layouts that make Harbor's TaskFileFilter / validate_input_tree answer differently."""
    outside = task.parent.parent / "outside"

    def ignore_test_sh():
        (task / "tests" / ".harborignore").write_text("test.sh\n")

    def ignore_solution_all():
        (task / "solution" / ".harborignore").write_text("*\n")

    def ignore_in_environment():
        (task / "environment" / ".harborignore").write_text("answer.json\n")

    def tests_link_outside():
        shutil.copytree(task / "tests", outside)
        shutil.rmtree(task / "tests")
        (task / "tests").symlink_to(outside, target_is_directory=True)

    def solution_cycle():
        (task / "solution" / "loop").symlink_to(task / "solution", target_is_directory=True)

    def ignore_file_is_a_folder():
        (task / "tests" / ".harborignore").mkdir()

    return {f.__name__: f for f in (ignore_test_sh, ignore_solution_all, ignore_in_environment, tests_link_outside,
                                    solution_cycle, ignore_file_is_a_folder)}


@pytest.mark.parametrize("layout", ["ignore_test_sh", "ignore_solution_all", "ignore_in_environment",
                                    "tests_link_outside", "solution_cycle", "ignore_file_is_a_folder"])
def test_memoised_harbor_filter_reports_what_harbor_alone_reports(datasets, tmp_path, layout):
    """validate memoises Harbor's path filter while a task is checked; on layouts where that filter
    matters (.harborignore files, links out of the task, link cycles) it must report exactly what
    Harbor's own code reports, and leave Harbor's classes as they were."""
    from harbor.models.task.file_filter import TaskFileFilter
    from harbor.models.task.paths import TaskPaths

    before = (TaskFileFilter.is_excluded, TaskFileFilter.ignore_rules, TaskPaths.validate_input_tree)
    ds = tmp_path / "memo"
    shutil.copytree(datasets["b_mount"], ds)
    task = ds / "chess-Fx7kQ2aB"
    _hostile_filter_layouts(task)[layout]()
    memo, plain = V.Validator(TREE, HAS_COMPOSE), V.Validator(TREE, HAS_COMPOSE)
    plain.memo_harbor = False
    a, b = memo.check(task), plain.check(task)
    assert not a.ok, layout
    assert (a.problems, a.notes) == (b.problems, b.notes)
    assert (TaskFileFilter.is_excluded, TaskFileFilter.ignore_rules, TaskPaths.validate_input_tree) == before


def test_harborignore_hiding_the_oracle_files(validator, task):
    (task / "solution" / ".harborignore").write_text("solve.sh\nanswer.json\n")
    assert "solution/ holds ['.harborignore'] beside solve.sh and answer.json" in problems(validator, task)


def test_a_folder_that_cannot_be_resolved_leaves_harbor_as_it_was(tmp_path):
    from harbor.models.task.file_filter import TaskFileFilter

    before = TaskFileFilter.is_excluded
    loop = tmp_path / "chess-Fx7kQ2aB"
    loop.symlink_to(loop)
    rep = V.Validator(TREE, False).check(loop)
    assert not rep.ok
    assert TaskFileFilter.is_excluded is before


# -- Harbor's private internals: on only with the tested Harbor, Harbor's own code path otherwise --------

def _two_bad_tasks(datasets, tmp_path) -> Path:
    """A copy of the B mount dataset: one task with a writable video mount (compose lint), one with a
    .harborignore that hides test.sh (Harbor's path filter)."""
    ds = tmp_path / "internals"
    shutil.copytree(datasets["b_mount"], ds)
    c = ds / "chess-Gm4pR9zT" / "environment" / "docker-compose.yaml"
    c.write_text(c.read_text().replace("read_only: true", "read_only: false", 1))
    _hostile_filter_layouts(ds / "chess-Fx7kQ2aB")["ignore_test_sh"]()
    return ds


def _verdicts(reports) -> list:
    return [(r.path.name, r.ok, r.problems, sorted(set(r.notes))) for r in reports]


def test_harbor_internals_are_used_with_the_tested_harbor(datasets, tmp_path):
    from harbor.lint import compose as HC
    from harbor.models.task.file_filter import TaskFileFilter

    from video_arena.harbor_api import speedups as HI

    ds = _two_bad_tasks(datasets, tmp_path)
    before = (TaskFileFilter.__dict__["is_excluded"], HC._load_compose)
    with HI.memoised_filters(ds / "chess-Fx7kQ2aB"):
        assert TaskFileFilter.__dict__["is_excluded"].__wrapped__ is before[0]
    batch = HI.ComposeBatch()
    with batch.installed():
        assert HC._load_compose is not before[1]
    assert (TaskFileFilter.__dict__["is_excluded"], HC._load_compose) == before
    if HAS_COMPOSE:
        v = V.Validator(TREE, True)
        v.check_dataset(ds, jobs=1, progress=False)
        assert v.compose_runs == 1


def test_another_harbor_version_runs_harbors_own_code_with_the_same_verdicts(datasets, tmp_path, monkeypatch):
    """With any Harbor but the tested one, nothing of Harbor's is replaced (checked while each task is
    validated) and the verdicts are those of the speed-ups with the tested version."""
    from harbor.lint import compose as HC
    from harbor.models.task.file_filter import TaskFileFilter
    from harbor.models.task.paths import TaskPaths

    from video_arena.harbor_api import version as HV

    ds = _two_bad_tasks(datasets, tmp_path)
    fast = V.Validator(TREE, HAS_COMPOSE)
    fast_reports, fast_dataset = fast.check_dataset(ds, jobs=1, progress=False)
    assert [r.ok for r in fast_reports] == [False, False]

    originals = (HC._load_compose, TaskFileFilter.__dict__["is_excluded"], TaskFileFilter.__dict__["ignore_rules"],
                 TaskPaths.__dict__["validate_input_tree"])
    checked = []
    real_check = V.Validator._check

    def watched(self, d, rep):
        checked.append(d.name)
        assert (HC._load_compose, TaskFileFilter.__dict__["is_excluded"], TaskFileFilter.__dict__["ignore_rules"],
                TaskPaths.__dict__["validate_input_tree"]) == originals
        return real_check(self, d, rep)

    for other in ("0.27.0", "0.25.1", None):
        monkeypatch.setattr(HV, "installed_version", lambda other=other: other)
        monkeypatch.setattr(V.Validator, "_check", watched)
        assert not HV.is_pinned_release()
        slow = V.Validator(TREE, HAS_COMPOSE)
        reports, dataset_problems = slow.check_dataset(ds, jobs=1, progress=False)
        assert slow.compose_runs == 0
        assert (_verdicts(reports), dataset_problems) == (_verdicts(fast_reports), fast_dataset)
    assert checked == ["chess-Fx7kQ2aB", "chess-Gm4pR9zT"] * 3


# -- the videos are the tasks tree's manifest's ---------------------------------------------------------
def _tree_with_manifest(tmp_path: Path) -> Path:
    """The fixture tree with the manifest.json build-cases writes (each case's ground-truth and video digest)."""
    from video_arena.digests import sha256_file

    tree = tmp_path / "tree"
    shutil.copytree(TREE, tree)
    d = tree / "chess"
    ids = [c["case_id"] for c in json.loads((d / "cases.json").read_text())["cases"]]
    second = d / "media" / f"{ids[1]}.mp4"  # the fixture's two videos are the same bytes: make them two
    second.write_bytes(second.read_bytes() + b"\0")
    (d / "manifest.json").write_text(json.dumps({"format": "video-arena-cases-manifest/1", "game": "chess",
                                                 "provenance": {"licence": "test"},
                                                 "cases": [{"case_id": c, "gt_sha256": sha256_file(d / "gt" / f"{c}.json"),
                                                            "media_sha256": sha256_file(d / "media" / f"{c}.mp4")}
                                                           for c in ids]}))
    return tree


def _swap_first_video(tree: Path) -> None:
    a, b = sorted((tree / "chess" / "media").glob("*.mp4"))
    a.write_bytes(b.read_bytes())  # one case's video copied over another's


@pytest.mark.parametrize("media", ["copy", "mount"])
def test_a_swapped_video_is_refused_by_make_harbor(media, tmp_path, capsys):
    tree = _tree_with_manifest(tmp_path)
    _swap_first_video(tree)
    rc = G.main(["--out", str(tmp_path / "ds"), "--media", media, "--net", "compose-none", "--tasks-root", str(tree),
                 "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 1 and "manifest.json records" in err and err.count("\n") == 1, err
    assert not (tmp_path / "ds").exists()


@pytest.mark.parametrize("media", ["copy", "mount"])
def test_a_swapped_video_is_a_validation_problem(media, tmp_path, monkeypatch):
    monkeypatch.delenv("VA_MEDIA_ROOT", raising=False)
    tree = _tree_with_manifest(tmp_path)
    ds = tmp_path / "ds"
    G.generate(G.Options(out=ds, protocol="B", net="compose-none", media=media, tasks_root=tree, progress=False))
    v = V.Validator(tree, with_compose=False)
    assert all(r.ok for r in v.check_dataset(ds, progress=False)[0])
    _swap_first_video(tree)
    first = sorted(p for p in ds.iterdir() if p.is_dir())[0]
    if media == "copy":  # the dataset's own copy swapped the same way
        (first / "environment" / "match.mp4").write_bytes((tree / "chess" / "media" / f"{first.name.split('-')[1]}.mp4").read_bytes())
    reports = {r.path.name: r for r in v.check_dataset(ds, progress=False)[0]}
    assert any("manifest.json records" in p for p in reports[first.name].problems), reports[first.name].problems
    assert sum(not r.ok for r in reports.values()) == 1


def test_a_manifest_that_is_not_one_is_a_one_line_error(tmp_path, capsys):
    tree = _tree_with_manifest(tmp_path)
    for bad in ('["x"]', '{"cases": "abc"}'):
        (tree / "chess" / "manifest.json").write_text(bad)
        rc = G.main(["--out", str(tmp_path / "ds"), "--tasks-root", str(tree), "--no-progress"])
        err = capsys.readouterr().err
        assert rc == 1 and err.startswith("make-harbor: error:") and err.count("\n") == 1 and "Traceback" not in err
