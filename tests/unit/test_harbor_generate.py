"""make-harbor: the task folders it writes (docs/HARBOR.md, "A task folder"), its modes and its safety.

Runs against the tiny tasks tree in tests/fixtures/harbor_tree (one game, two hand-made cases).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml

from video_arena import paths
from video_arena.core import instruction_for
from video_arena.games.cli import ANSWER_SEED_BYTES
from video_arena.harbor import generate as G
from video_arena.harbor import spec as S
from video_arena.core.prompts import turn1_prompt
from video_arena.core.judge_loader import load_judge

TREE = Path(__file__).resolve().parents[1] / "fixtures" / "harbor_tree"
CASES = ("Fx7kQ2aB", "Gm4pR9zT")
TEMPLATES = paths.REPO_ROOT / "harbor_templates"


pytestmark = pytest.mark.usefixtures("no_tasks_env")


def gen(out: Path, *extra: str) -> int:
    return G.main(["--out", str(out), "--tasks-root", str(TREE), "--no-progress", *extra])


def files_under(d: Path) -> set[str]:
    return {p.relative_to(d).as_posix() for p in d.rglob("*") if p.is_file()}


def toml(task: Path) -> dict:
    return tomllib.loads((task / "task.toml").read_text())


def compose(task: Path) -> dict:
    return yaml.safe_load((task / "environment" / "docker-compose.yaml").read_text())


@pytest.fixture(scope="module")
def b_mount(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("gen") / "b"
    assert gen(out, "--net", "compose-none") == 0
    return out


@pytest.fixture(scope="module")
def a_copy(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("gen") / "a"
    assert gen(out, "--protocol", "A", "--media", "copy", "--base-image", "registry.example/va/base:1") == 0
    return out


def test_b_mount_layout_is_the_seeds(b_mount):
    assert sorted(p.name for p in b_mount.iterdir()) == [f"chess-{c}" for c in CASES] + [S.DATASET_MARKER]
    task = b_mount / "chess-Fx7kQ2aB"
    assert files_under(task) == {
        "task.toml", "instruction.md",
        "environment/docker-compose.yaml", "environment/instruction.md", "environment/answer.json",
        "tests/test.sh", "tests/score_harbor.py", "tests/judge.py", "tests/gt.json", "tests/case.json",
        "solution/solve.sh", "solution/answer.json",
    }
    assert os.access(task / "tests" / "test.sh", os.X_OK) and os.access(task / "solution" / "solve.sh", os.X_OK)


def test_b_task_toml_budget_users_network(b_mount):
    cfg = toml(b_mount / "chess-Fx7kQ2aB")
    assert cfg["task"]["name"] == "video-arena/chess-Fx7kQ2aB"
    assert cfg["artifacts"] == ["/app/answer.json"]
    assert cfg["agent"] == {"timeout_sec": 7200.0, "user": "agent"}  # --net compose-none: no agent network_mode
    assert cfg["verifier"]["environment_mode"] == "separate" and cfg["verifier"]["user"] == "root"
    env = cfg["environment"]
    assert env["docker_image"] == "video-arena/base:latest"
    assert (env["network_mode"], env["cpus"], env["memory_mb"]) == ("public", 4, 8192)
    assert cfg["metadata"]["max_turns"] == 200 and cfg["metadata"]["protocol"] == "B"


def test_b_texts_seed_and_verifier_files(b_mount):
    task = b_mount / "chess-Fx7kQ2aB"
    assert (task / "instruction.md").read_text() == turn1_prompt("/app", 200, 120)
    assert (task / "environment" / "instruction.md").read_text() == instruction_for("agentic", TREE / "chess" / "instruction.md")
    assert (task / "environment" / "answer.json").read_bytes() == (TREE / "chess" / "answer_seed.json").read_bytes() == ANSWER_SEED_BYTES
    assert (task / "tests" / "judge.py").read_bytes() == paths.judge_path().read_bytes()
    assert (task / "tests" / "score_harbor.py").read_bytes() == (TEMPLATES / "tests" / "score_harbor.py").read_bytes()
    assert (task / "tests" / "gt.json").read_bytes() == (TREE / "chess" / "gt" / "Fx7kQ2aB.json").read_bytes()
    case = json.loads((task / "tests" / "case.json").read_text())
    assert (case["game"], case["case_id"], case["protocol"]) == ("chess", "Fx7kQ2aB", "B")


def test_oracle_answer_scores_one_on_all_keys(b_mount):
    J = load_judge()
    for c in CASES:
        task = b_mount / f"chess-{c}"
        gt = J.load_gt(str(task / "tests" / "gt.json"))
        answer = (task / "solution" / "answer.json").read_bytes()
        assert json.loads(answer) == J.oracle_answer(gt)
        assert J.reward_of(J.judge(gt, answer)) == {"reward": 1.0, "t1_f1": 1.0, "t2_macro_acc": 1.0, "t3_macro_acc": 1.0}


def test_mount_compose_refuses_without_media_root_and_isolates(b_mount):
    main = compose(b_mount / "chess-Fx7kQ2aB")["services"]["main"]
    assert main["entrypoint"] == [] and main["network_mode"] == "none"
    vols = {v["target"]: v for v in main["volumes"]}
    assert set(vols) == {"/app/match.mp4", "/app/instruction.md", S.SEED_SOURCE_TARGET}
    assert all(v["type"] == "bind" and v["read_only"] is True for v in vols.values())
    assert vols["/app/match.mp4"]["source"].startswith("${VA_MEDIA_ROOT:?")
    assert vols["/app/match.mp4"]["source"].endswith("}/chess/media/Fx7kQ2aB.mp4")
    assert vols["/app/instruction.md"]["source"] == "./instruction.md"
    assert vols[S.SEED_SOURCE_TARGET]["source"] == "./answer.json"
    assert main["command"] == ["/bin/sh", "-c", S.SEED_COMMAND]


def test_ground_truth_never_on_the_agent_side(b_mount, a_copy):
    for ds in (b_mount, a_copy):
        for task in (p for p in ds.iterdir() if p.is_dir()):
            gt = (task / "tests" / "gt.json").read_bytes()
            oracle = (task / "solution" / "answer.json").read_bytes()
            for f in (task / "environment").rglob("*"):
                data = f.read_bytes()
                assert data not in (gt, oracle) and b"v_before" not in data, f
            text = (task / "environment").joinpath("docker-compose.yaml")
            if text.exists():
                assert "tests" not in text.read_text() and "solution" not in text.read_text()


@pytest.mark.skipif(shutil.which("docker") is None or subprocess.run(
    ["docker", "compose", "version"], capture_output=True).returncode != 0, reason="needs the docker compose CLI plugin (no daemon)")
def test_mount_compose_fails_loudly_when_media_root_unset(b_mount):
    env = {k: v for k, v in os.environ.items() if k != "VA_MEDIA_ROOT"}
    task = b_mount / "chess-Fx7kQ2aB" / "environment"
    r = subprocess.run(["docker", "compose", "-f", "docker-compose.yaml", "config", "--no-consistency"], cwd=task, env=env,
                       capture_output=True, text=True)
    assert r.returncode != 0 and "VA_MEDIA_ROOT is unset" in r.stderr
    env["VA_MEDIA_ROOT"] = str(TREE)
    r = subprocess.run(["docker", "compose", "-f", "docker-compose.yaml", "config", "--no-consistency"], cwd=task, env=env,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert str(TREE / "chess" / "media" / "Fx7kQ2aB.mp4") in r.stdout


def test_a_copy_mode(a_copy):
    task = a_copy / "chess-Gm4pR9zT"
    # strict (the default) + copy: Dockerfile only, so it runs on Harbor's cloud environments
    assert files_under(task) == {
        "task.toml", "instruction.md", "environment/Dockerfile", "environment/match.mp4", "environment/answer.json",
        "tests/test.sh", "tests/score_harbor.py", "tests/judge.py", "tests/gt.json", "tests/case.json",
        "solution/solve.sh", "solution/answer.json",
    }
    assert (task / "instruction.md").read_text() == instruction_for("video", TREE / "chess" / "instruction.md")
    assert (task / "environment" / "match.mp4").read_bytes() == (TREE / "chess" / "media" / "Gm4pR9zT.mp4").read_bytes()
    cfg = toml(task)
    assert cfg["agent"] == {"timeout_sec": 3600.0, "user": "agent", "network_mode": "no-network"}
    assert "docker_image" not in cfg["environment"] and cfg["environment"]["network_mode"] == "no-network"
    lines = [l for l in (task / "environment" / "Dockerfile").read_text().splitlines() if l and not l.startswith("#")]
    assert lines[0] == "FROM registry.example/va/base:1"
    assert "COPY match.mp4 /app/match.mp4" in lines and "COPY --chown=agent:agent answer.json /app/answer.json" in lines
    assert not any("instruction.md" in l for l in lines)  # A delivers only the video
    assert "ENTRYPOINT []" in lines


def test_copy_mode_is_lint_clean(a_copy):
    from harbor.lint import lint_task
    from harbor.lint.models import DEFAULT_RULES, LintRule

    for task in (p for p in a_copy.iterdir() if p.is_dir()):
        assert lint_task(task, selected_rules=set(DEFAULT_RULES) | {LintRule.ROOT_AGENT}) == []


@pytest.mark.parametrize("net,env_mode,agent_mode,compose_none", [
    ("strict", "no-network", "no-network", True),
    ("compose-none", "public", None, True),
    ("phase", "public", "no-network", False),
])
def test_network_modes_table(tmp_path, net, env_mode, agent_mode, compose_none):
    out = tmp_path / net
    assert gen(out, "--net", net, "--limit", "1") == 0
    task = out / "chess-Fx7kQ2aB"
    cfg = toml(task)
    assert cfg["environment"]["network_mode"] == env_mode
    assert cfg["agent"].get("network_mode") == agent_mode
    assert ("network_mode" in compose(task)["services"]["main"]) is compose_none
    if compose_none:
        assert compose(task)["services"]["main"]["network_mode"] == "none"
    from harbor.models.task.task import Task

    assert Task.is_valid_dir(task) and Task(task).name == "video-arena/chess-Fx7kQ2aB"


def test_copy_with_net_docker_keeps_a_compose_without_mounts(tmp_path):
    out = tmp_path / "bc"
    assert gen(out, "--media", "copy", "--net", "compose-none", "--limit", "1") == 0
    main = compose(out / "chess-Fx7kQ2aB")["services"]["main"]
    assert main == {"entrypoint": [], "network_mode": "none"}
    df = (out / "chess-Fx7kQ2aB" / "environment" / "Dockerfile").read_text()
    assert "COPY instruction.md /app/instruction.md" in df


def test_host_media_pins_an_absolute_path(tmp_path, capsys):
    out = tmp_path / "pinned"
    assert gen(out, "--host-media", str(TREE), "--limit", "1") == 0
    vols = compose(out / "chess-Fx7kQ2aB")["services"]["main"]["volumes"]
    assert vols[0]["source"] == str(TREE / "chess" / "media" / "Fx7kQ2aB.mp4")
    assert gen(tmp_path / "rel", "--host-media", "relative/tasks") == 1
    assert "absolute" in capsys.readouterr().err
    assert not (tmp_path / "rel").exists()


def test_limit_and_games(tmp_path, capsys):
    assert gen(tmp_path / "one", "--limit", "1") == 0
    assert sorted(p.name for p in (tmp_path / "one").iterdir() if p.is_dir()) == ["chess-Fx7kQ2aB"]
    assert gen(tmp_path / "nogame", "--games", "nosuchgame") == 1
    assert "nosuchgame" in capsys.readouterr().err


def test_refuses_to_overwrite_without_force(tmp_path, capsys):
    out = tmp_path / "ds"
    assert gen(out, "--limit", "1") == 0
    marker = (out / S.DATASET_MARKER).read_bytes()
    (out / "chess-Fx7kQ2aB" / "instruction.md").write_text("edited by hand")
    assert gen(out) == 1
    assert "--force" in capsys.readouterr().err
    assert (out / "chess-Fx7kQ2aB" / "instruction.md").read_text() == "edited by hand"
    assert gen(out, "--force") == 0
    assert (out / "chess-Fx7kQ2aB" / "instruction.md").read_text() == turn1_prompt("/app", 200, 120)
    assert (out / "chess-Gm4pR9zT").is_dir() and (out / S.DATASET_MARKER).read_bytes() != marker
    assert [p.name for p in tmp_path.iterdir()] == ["ds"]  # no temporary folders left


def test_force_never_replaces_a_folder_it_did_not_write(tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "precious.txt").write_text("keep")
    assert gen(out, "--force") == 1
    assert "not written by make-harbor" in capsys.readouterr().err
    assert (out / "precious.txt").read_text() == "keep"


def test_output_is_atomic_when_generation_fails(tmp_path, monkeypatch):
    out = tmp_path / "ds"
    assert gen(out, "--limit", "1") == 0
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    real = G.render_task
    calls = []

    def flaky(case_dir, game, case_id, *a, **kw):
        calls.append(case_id)
        if len(calls) == 2:
            raise RuntimeError("disk full (simulated)")
        return real(case_dir, game, case_id, *a, **kw)

    monkeypatch.setattr(G, "render_task", flaky)
    with pytest.raises(RuntimeError, match="simulated"):
        G.generate(G.Options(out=out, tasks_root=TREE, force=True, progress=False))
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before  # old dataset intact
    calls.clear()
    fresh = tmp_path / "fresh"
    with pytest.raises(RuntimeError, match="simulated"):
        G.generate(G.Options(out=fresh, tasks_root=TREE, progress=False))
    assert not fresh.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds"]  # no half-written output anywhere


def test_out_through_a_symlink_cannot_land_in_the_tasks_tree(tmp_path, capsys):
    tree = tmp_path / "tree"
    shutil.copytree(TREE, tree)
    (tmp_path / "innocent").symlink_to(tree / "chess", target_is_directory=True)
    rc = G.main(["--out", str(tmp_path / "innocent" / "ds"), "--tasks-root", str(tree), "--no-progress"])
    assert rc == 1 and "inside the tasks tree" in capsys.readouterr().err
    assert not (tree / "chess" / "ds").exists()
    assert sorted(p.name for p in (tree / "chess").iterdir()) == sorted(p.name for p in (TREE / "chess").iterdir())
    (tmp_path / "whole").symlink_to(tree, target_is_directory=True)  # --out that IS the tasks tree, via a link
    for out in ("whole", "whole/.", "whole/chess/.."):
        rc = G.main(["--out", str(tmp_path / out), "--tasks-root", str(tree), "--no-progress", "--force"])
        assert rc == 1 and capsys.readouterr().err.startswith("make-harbor: error: ")
    assert (tree / "chess" / "cases.json").read_bytes() == (TREE / "chess" / "cases.json").read_bytes()


def test_a_killed_runs_partial_folders_are_removed_by_the_next_run(tmp_path):
    dead = subprocess.run(["sh", "-c", "echo $$"], capture_output=True, text=True).stdout.strip()  # an exited pid
    leftovers = [tmp_path / f".ds.partial-{dead}-123", tmp_path / f".ds.old-{dead}-456"]
    for d in leftovers:
        (d / "chess-Fx7kQ2aB").mkdir(parents=True)
    alive = tmp_path / f".ds.partial-{os.getppid()}-789"  # a run still writing this --out keeps its own
    alive.mkdir()
    other = tmp_path / f".other.partial-{dead}-1"  # another dataset's: not ours to remove
    other.mkdir()
    assert gen(tmp_path / "ds", "--limit", "1") == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["ds", alive.name, other.name])


def test_unwritable_out_is_one_clear_line(tmp_path, capsys):
    (tmp_path / "file").write_text("not a folder")
    for out in (tmp_path / "file" / "ds", Path("/proc/video-arena-ds")):
        assert gen(out) == 1
        err = capsys.readouterr().err
        assert err.startswith("make-harbor: error: ") and err.count("\n") == 1 and "Traceback" not in err


def _run_test_sh(task: Path, tmp: Path, answer, break_scorer: bool = False) -> tuple[dict, dict | None]:
    """Run the task's real test.sh with its absolute container paths moved under tmp. `answer` is the
    bytes of /app/answer.json, None for no file, or a function that makes it (given its path)."""
    tests = tmp / "tests"
    shutil.copytree(task / "tests", tests)
    if break_scorer:
        (tests / "score_harbor.py").write_text("raise SystemExit('boom')\n")
    logs = tmp / "logs" / "verifier"
    ans = tmp / "app" / "answer.json"
    ans.parent.mkdir(parents=True)
    if callable(answer):
        answer(ans)
    elif answer is not None:
        ans.write_bytes(answer)
    script = (task / "tests" / "test.sh").read_text()
    script = script.replace("/logs/verifier", str(logs)).replace("/tests/", f"{tests}/").replace("/app/answer.json", str(ans))
    (tmp / "test.sh").write_text(script)
    subprocess.run(["bash", str(tmp / "test.sh")], capture_output=True, text=True, timeout=60)
    reward = json.loads((logs / "reward.json").read_text())
    judge = json.loads((logs / "judge.json").read_text()) if (logs / "judge.json").exists() else None
    # the case the dataset metric groups by (harbor_templates/metric.py); the trap's fallback has none
    case = json.loads((task / "tests" / "case.json").read_text())
    named = reward.pop(f"case:{case['game']}/{case['case_id']}", None)
    assert named == (None if break_scorer else 1), reward
    return reward, judge


ONES = {"reward": 1.0, "t1_f1": 1.0, "t2_macro_acc": 1.0, "t3_macro_acc": 1.0}
ZEROS = {"reward": 0.0, "t1_f1": 0.0, "t2_macro_acc": 0.0, "t3_macro_acc": 0.0}


@pytest.mark.parametrize("label,answer,want,state", [
    ("oracle", "ORACLE", ONES, "wrote"),
    ("seed", ANSWER_SEED_BYTES, ZEROS, "never_wrote"),
    ("missing", None, ZEROS, "missing"),
    ("garbage", b"{not json", ZEROS, "wrote"),
    ("nan", b'{"events": [{"t": NaN}]}', ZEROS, "wrote"),
])
def test_test_sh_always_writes_a_finite_reward(b_mount, tmp_path, label, answer, want, state):
    task = b_mount / "chess-Fx7kQ2aB"
    if answer == "ORACLE":
        answer = (task / "solution" / "answer.json").read_bytes()
    reward, judge = _run_test_sh(task, tmp_path, answer)
    assert reward == want
    assert judge["answer_state"] == state and judge["error"] is None


@pytest.mark.parametrize("label", ["symlink", "dangling-symlink", "folder", "fifo"])
def test_test_sh_scores_a_non_regular_answer_as_no_answer(b_mount, tmp_path, label):
    """A symlinked /app/answer.json is no answer, even when it points at a perfect answer (the
    native runner does the same); a folder or a FIFO neither hangs nor crashes the verifier."""
    task = b_mount / "chess-Fx7kQ2aB"
    oracle = (task / "solution" / "answer.json").read_bytes()

    def make(ans: Path) -> None:
        if label == "symlink":
            (ans.parent / "real.json").write_bytes(oracle)
            ans.symlink_to(ans.parent / "real.json")
        elif label == "dangling-symlink":
            ans.symlink_to(ans.parent / "nowhere.json")
        elif label == "folder":
            ans.mkdir()
        else:
            os.mkfifo(ans)

    reward, judge = _run_test_sh(task, tmp_path, make)
    assert reward == ZEROS
    assert judge["answer_state"] == "not_regular" and judge["error"] is None
    assert judge["answer_sha256"] is None and "regular file" in judge["record"]["format_error"]


def test_test_sh_bounds_an_oversized_answer(b_mount, tmp_path):
    """A 2 GB sparse answer is refused on its size, before any byte of it is read."""
    task = b_mount / "chess-Fx7kQ2aB"

    def make(ans: Path) -> None:
        with open(ans, "wb") as fh:
            fh.truncate(2 * 1024 ** 3)

    reward, judge = _run_test_sh(task, tmp_path, make)
    assert reward == ZEROS
    assert judge["answer_state"] == "wrote" and judge["answer_bytes"] == 2 * 1024 ** 3
    assert judge["record"]["format_error"].startswith("answer is 2147483648 bytes, more than")


def test_test_sh_writes_zeros_even_when_the_scorer_dies(b_mount, tmp_path):
    task = b_mount / "chess-Fx7kQ2aB"
    reward, _ = _run_test_sh(task, tmp_path, (task / "solution" / "answer.json").read_bytes(), break_scorer=True)
    assert reward == ZEROS


def test_test_sh_runs_nothing_from_agent_writable_paths(b_mount):
    script = (b_mount / "chess-Fx7kQ2aB" / "tests" / "test.sh").read_text()
    code = [l for l in script.splitlines() if l.strip() and not l.lstrip().startswith("#")]
    assert "export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" in code
    assert any("-I -S -B /tests/score_harbor.py" in l for l in code)
    assert not any("/app" in l for l in code if "--answer /app/answer.json" not in l)
    assert all("cd /app" not in l for l in code)


def test_b_solve_sh_checks_inputs_and_writes_the_answer(b_mount):
    solve = (b_mount / "chess-Fx7kQ2aB" / "solution" / "solve.sh").read_text()
    assert "test -s /app/match.mp4" in solve and "test -s /app/instruction.md" in solve
    assert "cat /solution/answer.json > /app/answer.json" in solve


def test_make_harbor_script_is_thin():
    text = (paths.REPO_ROOT / "make_harbor.py").read_text()
    assert "from video_arena.harbor.generate import main" in text and len(text.splitlines()) < 15


def test_the_old_net_name_is_a_one_line_error_naming_the_new_one(tmp_path, capsys):
    """The network mode is named for what it does (compose-none: the compose file's `network_mode: none`),
    not after a runtime: the old `--net docker` writes nothing and names the new value in one line."""
    from video_arena.harbor import generate as G

    assert G.main(["--out", str(tmp_path / "ds"), "--net", "docker"]) == 2
    assert capsys.readouterr().err.strip() == "make-harbor: --net docker is named --net compose-none now"
    assert not (tmp_path / "ds").exists()
    assert "docker" not in S.NET_MODES and "compose-none" in S.NET_MODES
