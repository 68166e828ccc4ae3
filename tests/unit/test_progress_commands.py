"""The long commands' progress bars, seen as a user sees them: the real command in a subprocess with
its stderr on a pseudo-terminal (the bar shows N/TOTAL and an ETA, and stdout stays clean), and the
same command with stderr on a pipe, as in a log (not one byte of a bar).

TQDM_MININTERVAL=0 makes the bar draw on every update, so these runs of a few seconds show every count.
"""
from __future__ import annotations

import json
import shlex
import sys
import textwrap
from pathlib import Path

import pytest

from pty_run import REPO, no_bar, python_cmd, run

FIXTURES = REPO / "tests" / "fixtures"
TREE = FIXTURES / "harbor_tree"  # chess: 2 cases
TOY = FIXTURES / "protocol_b" / "tasks"  # toy: 2 cases
AGENTS = FIXTURES / "agents"
EVERY_DRAW = {"TQDM_MININTERVAL": "0", "TQDM_MINITERS": "1"}


def va(*args: str) -> list[str]:
    return python_cmd("-m", "video_arena.cli", *map(str, args))


def assert_bar(r, total: int, unit: str, desc: str) -> None:
    counts = r.counts()
    assert counts, f"no N/TOTAL [..<ETA in:\n{r.stderr!r}"
    assert {t for _, t in counts} == {total}, counts  # the total is there from the first draw
    assert f" 0/{total} [00:00<?" in r.stderr  # the first draw, before any unit is done
    assert max(n for n, _ in counts) >= total - 1, counts
    assert f"{unit}/s" in r.stderr and desc in r.stderr
    assert no_bar(r.stdout), r.stdout  # stdout (what scripts parse) never carries the bar


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("progress") / "ds"
    r = run(va("make-harbor", "--out", out, "--tasks-root", TREE, "--no-progress"), tty=False)
    assert r.rc == 0, r.stderr
    return out


@pytest.mark.parametrize("tty", [True, False])
def test_make_harbor(tmp_path: Path, tty: bool) -> None:
    r = run(va("make-harbor", "--out", tmp_path / "ds", "--tasks-root", TREE), tty=tty, env=EVERY_DRAW)
    assert r.rc == 0, r.stderr + r.stdout
    if tty:
        assert_bar(r, 2, "task", "make-harbor B")
    else:
        assert no_bar(r.stderr) and no_bar(r.stdout), r.stderr
    assert r.stdout.startswith("wrote 2 Protocol B tasks to "), r.stdout


@pytest.mark.parametrize("tty", [True, False])
def test_validate(dataset: Path, tty: bool) -> None:
    r = run(va("validate", dataset, "--tasks-root", TREE, "--no-compose"), tty=tty, env=EVERY_DRAW)
    assert r.rc == 0, r.stderr + r.stdout
    assert "validate OK: 2 task folders" in r.stdout
    if tty:
        assert_bar(r, 2, "task", "validate")
    else:
        assert no_bar(r.stderr), r.stderr


def test_validate_no_progress_flag_and_env(dataset: Path) -> None:
    for extra, env in ((["--no-progress"], None), ([], {"VA_NO_PROGRESS": "1"})):
        r = run(va("validate", dataset, "--tasks-root", TREE, "--no-compose", *extra), tty=True,
                env={**EVERY_DRAW, **(env or {})})
        assert r.rc == 0 and no_bar(r.stderr), r.stderr


@pytest.mark.parametrize("tty", [True, False])
def test_run_b(tmp_path: Path, tty: bool) -> None:
    agent = " ".join(shlex.quote(x) for x in (sys.executable, str(AGENTS / "writer.py"))) + " {prompt} --rows 1"
    r = run(va("run-b", "--agent-cmd", agent, "--out", tmp_path / "out", "--tasks-root", TOY, "--skip-preflight",
               "--sandbox-root", tmp_path / "sb", "--model", "scripted", "--no-isolation", "--kill-grace-s", "0.5"),
            tty=tty, env=EVERY_DRAW)
    assert r.rc == 0, r.stderr
    assert "run-b: 2 cell(s) to run, 0 skipped; wrote: 2" in r.stderr
    if tty:
        assert_bar(r, 2, "cell", "run-b")
        assert "wrote=" in r.stderr  # the outcome counts beside the bar
    else:
        assert no_bar(r.stderr), r.stderr


# oracle-check's trials run in `harbor run` children: the bar's total is tasks x agents, and its count
# comes from the trial result files appearing in the job folders. A stand-in `harbor` writes them.
FAKE_HARBOR = textwrap.dedent('''
    import json, pathlib, sys, time
    a = sys.argv[1:]
    arg = lambda k: a[a.index(k) + 1]
    job = pathlib.Path(arg("-o")) / arg("--job-name")
    print("\\x1b[2K\\rHARBOR LIVE DISPLAY", flush=True)  # what Harbor's rich display would put on the terminal
    for t in sorted(p for p in pathlib.Path(arg("-p")).iterdir() if (p / "task.toml").is_file()):
        time.sleep(0.3)
        (job / t.name).mkdir(parents=True)
        (job / t.name / "result.json").write_text(json.dumps({"task_name": t.name}))
''')

CHECK_JOBS = textwrap.dedent('''
    import pathlib, sys
    from video_arena.harbor import oracle_check as OC
    OC.harbor_executable = lambda: sys.argv[1]
    OC.resource_args = lambda: []
    ds, work = pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
    trials = OC.check_jobs({"B": ds}, work / "jobs", "STAMP", work, 2, side_by_side=sys.argv[4] == "1")
    print("trials", sum(1 for t in trials if t.trial != "-"))
''')


@pytest.mark.parametrize("tty,side_by_side", [(True, True), (False, True), (False, False)])
def test_oracle_check_counts_trials_from_the_job_folders(tmp_path: Path, dataset: Path, tty: bool,
                                                         side_by_side: bool) -> None:
    harbor = tmp_path / "harbor"
    harbor.write_text(f"#!{sys.executable}\n{FAKE_HARBOR}")
    harbor.chmod(0o755)
    r = run(python_cmd("-c", CHECK_JOBS, str(harbor), str(dataset), str(tmp_path), "1" if side_by_side else "0"),
            tty=tty, env=EVERY_DRAW)
    assert r.rc == 0, r.stderr
    assert "trials 4" in r.stdout  # 2 tasks x (oracle, nop)
    logs = sorted((tmp_path / "jobs").glob("*.harbor-output.log"))
    if tty:
        assert_bar(r, 4, "trial", "oracle-check")
        assert max(n for n, _ in r.counts()) >= 3  # it moved while the jobs ran, not only at the end
        # Harbor's own display would fight the bar: it is in a log beside the jobs, named on stdout
        assert "HARBOR LIVE DISPLAY" not in r.stderr + r.stdout
        assert len(logs) == 2 and all("HARBOR LIVE DISPLAY" in p.read_text() for p in logs)
        assert all(str(p) in r.stdout for p in logs)
    elif side_by_side:  # jobs at the same time: each Harbor's output in its own log, never interleaved
        assert no_bar(r.stderr), r.stderr
        assert "HARBOR LIVE DISPLAY" not in r.stdout
        assert len(logs) == 2 and all("HARBOR LIVE DISPLAY" in p.read_text() for p in logs)
        assert all(str(p) in r.stdout for p in logs)
    else:  # one job at a time off a terminal: Harbor's output goes where ours goes
        assert no_bar(r.stderr), r.stderr
        assert r.stdout.count("HARBOR LIVE DISPLAY") == 2 and not logs


def test_baselines_bar_counts_the_cells_of_run_b_inside_it(tmp_path: Path) -> None:
    """baselines runs run-b in-process: run-b's bar counts in the outer bar, within its stage."""
    from video_arena import progress as P
    from video_arena.protocol_b import runner

    agent = " ".join(shlex.quote(x) for x in (sys.executable, str(AGENTS / "writer.py"))) + " {prompt} --rows 1"
    argv = ["--agent-cmd", agent, "--out", str(tmp_path / "out"), "--tasks-root", str(TOY), "--skip-preflight",
            "--sandbox-root", str(tmp_path / "sb"), "--no-isolation", "--kill-grace-s", "0.5", "--limit", "1"]
    seen = []
    with P.bar(5, "baselines", "cell", enabled=False) as outer:
        orig = outer._child_update

        def spy(n):
            orig(n)
            seen.append(outer.n)

        outer._child_update = spy
        with outer.stage(2, "chance-b"):
            assert runner.main(argv) == 0  # 1 cell run (--limit 1)
        assert seen == [1] and outer.n == 2
        with outer.stage(3, "again"):
            assert runner.main(argv) == 0  # already finished: 0 run, the stage still ends at 2 + 3
        assert outer.n == 5
    assert json.loads((tmp_path / "out" / "toy" / "Tq3Vx8Lm" / "run.json").read_text())["answer_state"] == "wrote"


@pytest.mark.slow  # renders two small test videos with ffmpeg
@pytest.mark.parametrize("tty", [True, False])
def test_run_a(tmp_path: Path, tty: bool) -> None:
    from fixtures.openai_test_server import OpenAITestServer
    from fixtures.protocol_a_tree import make_tasks_tree

    tree = make_tasks_tree(tmp_path / "tasks")
    with OpenAITestServer() as srv:  # every reply: {"events": []}
        r = run(va("run-a", "--model", "m", "--base-url", srv.base_url, "--out", tmp_path / "out", "--tasks-root", tree,
                   "--cache-dir", tmp_path / "cache"), tty=tty, env={**EVERY_DRAW, "OPENAI_API_KEY": "k"})
    assert r.rc == 0, r.stderr
    assert "done: answered 2; skipped 0" in r.stderr
    if tty:
        assert_bar(r, 2, "cell", "run-a m")
    else:  # before this bar, run-a drew its tqdm bar into logs too
        assert no_bar(r.stderr), r.stderr
