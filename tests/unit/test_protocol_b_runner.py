"""`video-arena run-b` with real scripted agents (tests/fixtures/agents/), the fast cells.

Every agent here is a real program started by the runner through --agent-cmd, with the sandbox as
its working directory; the process-kill and wall-clock cases are in
tests/e2e/test_protocol_b_agents.py.
"""
from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from video_arena import paths
from video_arena.core import instruction_for, resolve, text_digest
from video_arena.games.cli import ANSWER_SEED_BYTES
from video_arena.core import results as R
from video_arena.protocol_b import runner
from video_arena.protocol_b.isolation import namespaces_available
from video_arena.protocol_b.sandbox import Sandbox
from video_arena.safe_tree import TreeRemoval

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TASKS = FIXTURES / "protocol_b" / "tasks"
TRANSCRIPTS = FIXTURES / "protocol_b" / "transcripts"
AGENTS = FIXTURES / "agents"
CASE, CASE2 = "Tq3Vx8Lm", "Pz5Kw2Rn"
COMMON_KEYS = {"protocol", "model", "game", "case_id", "stop_reason", "answer_state", "n_rows", "wall_s",
               "instruction_sha256", "started_at", "finished_at"}
B_KEYS = {"kill_to_gone_s", "turns_used", "max_turns", "timeout_min", "prompt_sha256", "sandbox", "audit",
          "exit_code", "seed_sha256", "answer_sha256"}


def agent(name: str, *args: str) -> str:
    return " ".join([shlex.quote(sys.executable), shlex.quote(str(AGENTS / name)), "{prompt}", *args])


def run_b(tmp_path: Path, agent_cmd: str, *extra: str, limit: int | None = 1, tasks: Path = TASKS) -> tuple[int, Path]:
    out = tmp_path / "out"
    argv = ["--agent-cmd", agent_cmd, "--out", str(out), "--tasks-root", str(tasks), "--skip-preflight",
            "--sandbox-root", str(tmp_path / "sb"), "--model", "scripted", "--kill-grace-s", "0.5", *extra]
    if "--allow-path" not in extra:
        argv.append("--no-isolation")
    if limit:
        argv += ["--limit", str(limit)]
    return runner.main(argv), out


def record(out: Path, case: str = CASE) -> dict:
    return json.loads((out / "toy" / case / "run.json").read_text(encoding="utf-8"))


def stdout_log(out: Path, case: str = CASE) -> str:
    return (out / "toy" / case / "logs" / "agent.stdout.log").read_text(encoding="utf-8")


def test_writer_wrote_rows(tmp_path: Path) -> None:
    rc, out = run_b(tmp_path, agent("writer.py", "--rows", "3"))
    assert rc == 0
    rec = record(out)
    assert COMMON_KEYS | B_KEYS <= set(rec)
    assert rec["protocol"] == "B" and rec["model"] == "scripted" and (rec["game"], rec["case_id"]) == ("toy", CASE)
    assert rec["format"] == "video-arena-run/1" and rec["game_version"] == 1  # the tree's game.toml version
    assert (rec["stop_reason"], rec["exit_code"], rec["answer_state"], rec["n_rows"]) == ("completed", 0, "wrote", 3)
    assert rec["turns_used"] == 4 and rec["max_turns"] == 200 and rec["timeout_min"] == 120
    assert rec["kill_to_gone_s"] is None and rec["wall_s"] > 0
    assert rec["audit"]["verdict"] == "clean" and rec["audit"]["agent_actions"] >= 3
    r = resolve("toy", CASE, TASKS)
    assert rec["instruction_sha256"] == text_digest(instruction_for("agentic", r["instruction"]))
    cell = out / "toy" / CASE
    prompt = (cell / "prompt.txt").read_text(encoding="utf-8")
    assert rec["prompt_sha256"] == text_digest(prompt)
    assert rec["prompt_template_sha256"] == text_digest(prompt.replace(rec["sandbox"], "{sandbox}"))
    doc = json.loads((cell / "answer.json").read_text())
    assert [row["t"] for row in doc["events"]] == [0.4, 0.8, 1.2]
    assert (cell / "logs" / "agent.stdout.log").stat().st_size > 0
    assert not Path(rec["sandbox"]).exists()  # removed after collection (no --keep-sandboxes)
    assert CASE not in rec["sandbox"] and "toy" not in rec["sandbox"]


def test_never_writes_exports_the_seed(tmp_path: Path) -> None:
    rc, out = run_b(tmp_path, agent("never_writes.py"))
    rec = record(out)
    assert rc == 0 and (rec["stop_reason"], rec["answer_state"], rec["n_rows"]) == ("completed", "never_wrote", 0)
    assert (out / "toy" / CASE / "answer.json").read_bytes() == (TASKS / "toy" / "answer_seed.json").read_bytes()
    assert rec["answer_sha256"] == rec["seed_sha256"]


@pytest.mark.parametrize("args", [(), ("--rename",)])
def test_deleted_answer_exports_the_seed(tmp_path: Path, args: tuple[str, ...]) -> None:
    rc, out = run_b(tmp_path, " ".join([shlex.quote(sys.executable), shlex.quote(str(AGENTS / "deleter.py")), *args]))
    rec = record(out)
    assert rc == 0 and (rec["stop_reason"], rec["answer_state"], rec["n_rows"]) == ("completed", "deleted", 0)
    assert (out / "toy" / CASE / "answer.json").read_bytes() == ANSWER_SEED_BYTES


def test_rewriting_the_seed_with_identical_bytes_is_never_wrote(tmp_path: Path) -> None:
    rc, out = run_b(tmp_path, f"{shlex.quote(sys.executable)} {shlex.quote(str(AGENTS / 'same_bytes.py'))}",
                    "--keep-sandboxes")
    rec = record(out)
    assert rec["answer_state"] == "never_wrote" and rec["stop_reason"] == "completed"
    # The agent really did replace the file (a new inode), and still has not answered.
    sandbox = Path(rec["sandbox"])
    assert (sandbox / "answer.json").read_bytes() == ANSWER_SEED_BYTES
    assert rec["audit"]["agent_actions"] == 1


def test_nonzero_exit_is_agent_error_and_keeps_the_answer(tmp_path: Path) -> None:
    rc, out = run_b(tmp_path, agent("writer.py", "--rows", "2", "--exit", "3"))
    rec = record(out)
    assert rc == 0 and (rec["stop_reason"], rec["exit_code"], rec["answer_state"], rec["n_rows"]) == (
        "agent_error", 3, "wrote", 2)


@pytest.mark.parametrize("cmd,why", [
    ("definitely-not-an-agent-cli-7f3 --prompt {prompt}", "not found"),
    ("{sandbox}/../prompt.txt", "not executable"),
])
def test_agent_that_never_started_is_harness_error_and_missing(tmp_path: Path, cmd: str, why: str) -> None:
    rc, out = run_b(tmp_path, cmd)
    rec = record(out)
    assert rc == 2
    assert rec["stop_reason"] == "harness_error" and rec["answer_state"] is None and why in rec["error"]
    assert rec["agent_started"] is False
    assert not (out / "toy" / CASE / "answer.json").exists()


def test_an_unknown_placeholder_is_refused_before_any_cell(tmp_path: Path, capsys) -> None:
    rc, out = run_b(tmp_path, agent("writer.py") + " --cwd {sandbx}", limit=None)
    err = capsys.readouterr().err
    assert rc == 2 and "unknown placeholder {sandbx}" in err and "no cell was run" in err
    assert not list(out.glob("*/*/run.json"))


WRAPPED_NOT_FOUND = [
    "timeout 600 /no/such/agent {prompt}",
    "env X=1 /no/such/agent {prompt}",
    "cd {sandbox} && /no/such/agent {prompt}",
    "$HOME/bin/no-such-agent {prompt}",
    "nice -n 5 {sandbox}/../prompt.txt",   # found, not executable: 126
]


@pytest.mark.parametrize("isolated", [False, True])
@pytest.mark.parametrize("cmd", WRAPPED_NOT_FOUND)
def test_an_agent_that_cannot_start_however_wrapped_stops_the_run_after_one_cell(
        tmp_path: Path, capsys, cmd: str, isolated: bool) -> None:
    """Issue 28: a command that exits 126/127 before the agent ever ran (the seed untouched) stops the
    run after its first cell with one line naming the cell and the shell's message, exit 2; that cell is
    missing (harness), never 0.0, and `score` of the folder says no agent ever started, exit 1, and
    prints no 0.000 for the game."""
    if isolated and namespaces_available():
        pytest.skip(f"no isolation here: {namespaces_available()}")
    (tmp_path / "allowed").mkdir()
    extra = ("--allow-path", str(tmp_path / "allowed")) if isolated else ()   # any --allow-path: isolated
    rc, out = run_b(tmp_path, cmd, *extra, limit=None)
    err = capsys.readouterr().err
    assert rc == 2, err
    assert [p.parent.name for p in out.glob("toy/*/run.json")] == [CASE]   # one cell, not both
    rec = record(out)
    assert rec["stop_reason"] == "harness_error" and rec["agent_started"] is False
    assert rec["exit_code"] in (126, 127) and rec["answer_state"] is None
    [line] = [ln for ln in err.splitlines() if ln.startswith("video-arena run-b: error:")]
    assert f"toy/{CASE}: the agent command could not start (exit {rec['exit_code']}: " in line
    assert ("No such file or directory" in line or "Permission denied" in line), line
    assert_nothing_measured(out, capsys)


def assert_nothing_measured(out: Path, capsys) -> None:
    """`score` of a folder where no agent ever started says so, exits 1, and prints no 0.000."""
    from video_arena.scoring import cli as score_cli
    rc = score_cli.main([str(out), "--tasks-root", str(TASKS), "--quiet", "--bootstrap", "0"])
    text = capsys.readouterr()
    assert rc == 1 and "no agent ever started" in text.err and "NOTHING MEASURED" in text.out
    toy = next(ln for ln in text.out.splitlines() if ln.split()[:1] == ["toy"])
    assert "0.000" not in toy and toy.split()[1] == "0/2", toy


#: An interpreter the shell finds, whose agent never starts: (command, its exit code, the end of its last
#: line; the interpreter names itself by the path it was found at)
NEVER_STARTS_BEHIND_AN_INTERPRETER = [
    ("python3 /no/such/agent.py --sandbox {sandbox} {prompt}", 2,
     "python3: can't open file '/no/such/agent.py': [Errno 2] No such file or directory"),
    ("python3 -m no_such_agent_module_7f3 --prompt {prompt}", 1, "python3: No module named no_such_agent_module_7f3"),
    ("python3 -c 'import no_such_agent_module_7f3' {prompt}", 1,
     "ModuleNotFoundError: No module named 'no_such_agent_module_7f3'"),
    ("sh -c 'echo agent: cannot reach the model >&2; exit 3' sh {prompt}", 3, "agent: cannot reach the model"),
]


@pytest.mark.parametrize("isolated", [False, True])
@pytest.mark.parametrize("cmd,code,said", NEVER_STARTS_BEHIND_AN_INTERPRETER)
def test_an_agent_that_fails_before_it_touches_its_sandbox_stops_the_run(
        tmp_path: Path, capsys, cmd: str, code: int, said: str, isolated: bool) -> None:
    """Issue 36: `python3 /no/such/agent.py ...` ran every cell, each never_wrote, exit 0, and score
    printed 0.000 (only 126/127 were taken as "never started").  The run's first cell ending in an error
    with no trace of the agent in its sandbox (nothing read, created, changed or removed there, no answer,
    no turn or action in the transcript) stops the run like 126/127: exit 2, the cell missing, the
    agent's own last line shown."""
    if isolated and namespaces_available():
        pytest.skip(f"no isolation here: {namespaces_available()}")
    (tmp_path / "allowed").mkdir()
    extra = ("--allow-path", str(tmp_path / "allowed")) if isolated else ()
    rc, out = run_b(tmp_path, cmd, *extra, limit=None)
    err = capsys.readouterr().err
    assert rc == 2, err
    assert [p.parent.name for p in out.glob("toy/*/run.json")] == [CASE]
    rec = record(out)
    assert (rec["stop_reason"], rec["agent_started"], rec["exit_code"], rec["answer_state"]) == (
        "harness_error", False, code, None)
    [line] = [ln for ln in err.splitlines() if ln.startswith("video-arena run-b: error:")]
    assert f"toy/{CASE}: the agent command failed before it touched its sandbox (exit {code}: " in line
    assert f"{said}); the run stopped after this cell" in line
    assert not (out / "toy" / CASE / "answer.json").exists()
    assert_nothing_measured(out, capsys)


#: A first cell that worked, then failed: each leaves a different trace, and each is the agent's 0.0
WORKED_THEN_FAILED = {
    "read the instruction": "open('instruction.md').read()",
    "wrote a scratch file": "open('notes.txt', 'w').write('frames 1-40: nothing')",
    "removed a file": "import os; os.unlink('match.mp4')",
    "rewrote the seed as it was": "d = open('answer.json', 'rb').read(); open('answer.json', 'wb').write(d)",
    "reported its turns": "print('{\"turns\": 3}')",
    "acted in its transcript": "print('$ ffprobe match.mp4')",
}


@pytest.mark.parametrize("what", sorted(WORKED_THEN_FAILED))
def test_a_first_cell_that_failed_after_working_is_scored(tmp_path: Path, what: str) -> None:
    """The other side of the rule: an agent that touched its sandbox (read the instruction, wrote or
    removed a file, rewrote the seed, reported a turn, acted in its transcript) and then failed on the
    run's first cell started: agent_error, scored 0.0, and the run goes on; runner.log says what showed
    it ran."""
    code = WORKED_THEN_FAILED[what] + "; raise SystemExit(1)"
    rc, out = run_b(tmp_path, f"{shlex.quote(sys.executable)} -c {shlex.quote(code)} {{prompt}}", limit=None)
    assert rc == 0
    for case in (CASE, CASE2):
        rec = record(out, case)
        assert (rec["stop_reason"], rec["exit_code"], rec["answer_state"]) == ("agent_error", 1, "never_wrote")
        assert "agent_started" not in rec
    log = (out / "toy" / CASE / "logs" / "runner.log").read_text(encoding="utf-8")
    assert "first cell: exited, exit 1; the agent ran: " in log, log
    if what == "read the instruction":   # seen by inotify, whatever the filesystem records of access times
        assert "instruction.md opened" in log, log


def test_the_record_is_written_before_the_clean_up(tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    """A runner stopped during the clean-up (here: the clean-up itself dies) leaves the cell recorded as
    it answered, `sandbox_removed` null: the cell ran, so a resume skips it, never re-drawing it."""
    def dies(self, time_budget_s=0.0):
        raise RuntimeError("the runner died during the clean-up")

    monkeypatch.setattr(Sandbox, "remove", dies)
    rc, out = run_b(tmp_path, agent("writer.py", "--rows", "2"))
    rec = record(out)
    assert rc == 1   # a runner error, said on stderr
    assert (f"toy/{CASE}: runner error RuntimeError('the runner died during the clean-up') (its run.json was "
            "written before: the cell is recorded)") in capsys.readouterr().err
    assert (rec["stop_reason"], rec["answer_state"], rec["n_rows"]) == ("completed", "wrote", 2)
    assert rec["sandbox_removed"] is None and rec["answer_sha256"]
    monkeypatch.undo()
    rc, out = run_b(tmp_path, agent("writer.py", "--rows", "2"))
    assert rc == 0 and record(out) == rec and not (out / "toy" / CASE / "attempts").exists()


def test_a_clean_up_that_fails_is_flagged_and_the_cell_stays_recorded(tmp_path: Path, capsys,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """What the clean-up could not remove is in run.json (`sandbox_removed` false, `sandbox_note`) and in
    one warning line; the cell is scored as it answered and a resume skips it.  (Real clean-ups that
    cannot finish: tests/unit/test_protocol_b_cleanup.py, tests/e2e/test_hostile_agents.py.)"""
    monkeypatch.setattr(Sandbox, "remove", lambda self, time_budget_s=0.0: TreeRemoval(
        removed=False, failures=1, problems=["locked/f: Operation not permitted"]))
    rc, out = run_b(tmp_path, agent("writer.py", "--rows", "2"))
    err = capsys.readouterr().err
    rec = record(out)
    assert rc == 0 and (rec["stop_reason"], rec["answer_state"], rec["n_rows"]) == ("completed", "wrote", 2)
    assert rec["sandbox_removed"] is False and rec["sandbox_note"] == "locked/f: Operation not permitted"
    [line] = [ln for ln in err.splitlines() if "was not fully removed" in ln]
    assert f"toy/{CASE}" in line and f"folder {Path(rec['sandbox']).parent} was" in line
    assert line.endswith("(locked/f: Operation not permitted); the cell is recorded")
    monkeypatch.undo()
    rc, out = run_b(tmp_path, agent("writer.py", "--rows", "2"))
    assert rc == 0 and "1 finished cell(s) skipped" in capsys.readouterr().err and record(out) == rec
    shutil.rmtree(rec["sandbox"].rsplit("/", 1)[0], ignore_errors=True)


def test_an_exit_127_after_the_agent_started_is_its_own_failure(tmp_path: Path) -> None:
    """Only the run's first cell can show that the command cannot start: once one cell started, a
    later 127 is the agent's doing (agent_error, scored); and an agent that wrote an answer started,
    whatever it exits with."""
    flag = tmp_path / "ran-once"
    cmd = f"sh -c 'if [ -e {flag} ]; then exit 127; fi; : > {flag}' sh {{prompt}}"
    rc, out = run_b(tmp_path, cmd, limit=None)
    assert rc == 0
    assert record(out)["stop_reason"] == "completed"
    assert (record(out, CASE2)["stop_reason"], record(out, CASE2)["exit_code"]) == ("agent_error", 127)
    rc, out = run_b(tmp_path / "w", agent("writer.py", "--rows", "2", "--exit", "127"))
    assert rc == 0 and (record(out)["stop_reason"], record(out)["answer_state"]) == ("agent_error", "wrote")


def test_missing_media_is_harness_error(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks"
    shutil.copytree(TASKS, tasks)
    (tasks / "toy" / "media" / f"{CASE}.mp4").unlink()
    rc, out = run_b(tmp_path, agent("writer.py"), tasks=tasks)
    rec = record(out)
    assert rc == 1 and rec["stop_reason"] == "harness_error" and "media" in rec["error"]


def test_resume_skips_finished_cells_and_force_reruns(tmp_path: Path) -> None:
    rc, out = run_b(tmp_path, agent("never_writes.py"), limit=None)
    assert rc == 0 and record(out)["answer_state"] == "never_wrote" and record(out, CASE2)["answer_state"] == "never_wrote"
    first = record(out)
    # Make one cell a harness_error: it counts as missing and is re-run on resume.
    rec2 = record(out, CASE2)
    rec2["stop_reason"] = "harness_error"
    (out / "toy" / CASE2 / "run.json").write_text(json.dumps(rec2))
    rc, out = run_b(tmp_path, agent("never_writes.py"), limit=None)
    assert rc == 0
    assert record(out) == first                                   # finished: skipped
    assert record(out, CASE2)["stop_reason"] != "harness_error"   # harness_error: re-run
    # another agent command into the same --out: refused before any cell (another condition)
    rc, out = run_b(tmp_path, agent("writer.py", "--rows", "1"), limit=None)
    assert rc == 2 and record(out) == first
    rc, out = run_b(tmp_path, agent("writer.py", "--rows", "2"), "--force", limit=None)
    assert record(out)["n_rows"] == 2 and record(out, CASE2)["n_rows"] == 2
    assert record(out)["sandbox"] != first["sandbox"]             # a re-run starts from a new folder


def test_rerun_deletes_the_predecessors_answer_runjson_and_logs(tmp_path: Path) -> None:
    cell = tmp_path / "out" / "toy" / CASE
    (cell / "logs").mkdir(parents=True)
    (cell / "answer.json").write_text('{"events": [{"t": 1}]}')
    (cell / "logs" / "old.log").write_text("old")
    (cell / "run.json").write_text("{broken")
    rc, out = run_b(tmp_path, "definitely-not-an-agent-cli-7f3 {prompt}")
    assert rc == 2 and record(out)["stop_reason"] == "harness_error"
    assert not (cell / "answer.json").exists() and not (cell / "logs" / "old.log").exists()


def test_sandbox_as_the_agent_sees_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo_bin = paths.REPO_ROOT / ".venv" / "bin"
    monkeypatch.setenv("PATH", os.pathsep.join([str(repo_bin), os.environ.get("PATH", "")]))
    monkeypatch.setenv(paths.TASKS_ROOT_ENV, str(TASKS))
    monkeypatch.setenv("VIRTUAL_ENV", str(paths.REPO_ROOT / ".venv"))
    monkeypatch.chdir(paths.REPO_ROOT)
    monkeypatch.setenv("PWD", str(paths.REPO_ROOT))
    rc, out = run_b(tmp_path, agent("inspect_sandbox.py") + " --max-turns {max_turns}", "--max-turns", "50",
                    "--timeout-min", "7.5")
    rec = record(out)
    line = next(json.loads(x) for x in stdout_log(out).splitlines() if x.startswith('{"inspect"'))["inspect"]
    r = resolve("toy", CASE, TASKS)
    assert sorted(line["files"]) == ["answer.json", "instruction.md", "match.mp4"]
    assert line["files"]["answer.json"]["sha256"] == rec["seed_sha256"]
    assert line["files"]["instruction.md"]["sha256"] == rec["instruction_sha256"]
    assert not any(f["symlink"] for f in line["files"].values())
    assert line["cwd"] == rec["sandbox"] and Path(line["prompt_path"]).parent == Path(rec["sandbox"]).parent
    assert line["parent"] == sorted(["prompt.txt", Path(rec["sandbox"]).name])
    assert line["argv"][1:] == ["--max-turns", "50"]
    assert "50 tool-call turns and 7.5 minutes" in line["prompt"] and rec["sandbox"] in line["prompt"]
    assert paths.TASKS_ROOT_ENV not in line["env"] and "VIRTUAL_ENV" not in line["env"]
    assert str(repo_bin) not in line["PATH"]
    assert not any(str(paths.REPO_ROOT) in v for v in line["env_values"].values())
    assert {"PATH", "VIRTUAL_ENV", paths.TASKS_ROOT_ENV} <= set(rec["env_scrubbed"])
    assert rec["answer_state"] == "never_wrote" and rec["audit"]["verdict"] == "unaudited"
    assert not Path(rec["sandbox"]).is_relative_to(paths.REPO_ROOT) and str(r["gt"]) not in json.dumps(line)


def test_gt_probe_finds_no_ground_truth_through_relative_paths(tmp_path: Path) -> None:
    rc, out = run_b(tmp_path, agent("gt_probe.py"))
    rec = record(out)
    probe = next(json.loads(x) for x in stdout_log(out).splitlines() if x.startswith('{"probe"'))["probe"]
    assert probe["ups"] >= 4 and probe["env_paths"] == []
    # Other tests' copies of a tasks tree may sit near the shared pytest temp dir (see the sibling
    # test below); the tree this run used must not be reachable, nor anything in the sandbox's own
    # folder.
    assert not [p for p in probe["found"] if Path(p).resolve().is_relative_to(TASKS.resolve())]
    assert not [p for p in probe["found"] if Path(p).resolve().is_relative_to(Path(rec["sandbox"]).parent)]
    assert rec["stop_reason"] == "completed"


def test_tasks_tree_next_to_the_sandbox_root_is_warned_about(tmp_path: Path, capsys) -> None:
    """A sandbox root beside a tasks tree puts gt/ a relative path away: the probe finds it, and
    the runner warns before the first cell."""
    tasks = tmp_path / "tasks"
    shutil.copytree(TASKS, tasks)
    rc, out = run_b(tmp_path, agent("gt_probe.py"), tasks=tasks)
    assert "is reachable from every sandbox as ../../../tasks" in capsys.readouterr().err
    probe = next(json.loads(x) for x in stdout_log(out).splitlines() if x.startswith('{"probe"'))["probe"]
    assert str((tasks / "toy" / "gt" / f"{CASE}.json").resolve()) in probe["found"]


def test_gt_probe_control_finds_ground_truth_from_inside_the_tasks_tree(tmp_path: Path) -> None:
    """The probe can fail: from a folder inside the tasks tree, gt/ is a relative path away."""
    tasks = tmp_path / "tasks"
    shutil.copytree(TASKS, tasks)
    work = tasks / "toy" / "media"
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("no paths here")
    (work / "answer.json").write_bytes(ANSWER_SEED_BYTES)
    proc = subprocess.run([sys.executable, str(AGENTS / "gt_probe.py"), str(prompt)], cwd=work,
                          capture_output=True, text=True, timeout=60, env={"PATH": os.environ.get("PATH", "")})
    probe = next(json.loads(x) for x in proc.stdout.splitlines() if x.startswith('{"probe"'))["probe"]
    ours = {str((tasks / "toy" / "gt" / f"{c}.json").resolve()) for c in (CASE, CASE2)}
    assert ours <= set(probe["found"])


def test_sandbox_root_inside_repo_or_tasks_is_refused_before_any_cell(tmp_path: Path) -> None:
    out = tmp_path / "out"
    for root in (TASKS / "toy", paths.REPO_ROOT):
        rc = runner.main(["--agent-cmd", agent("writer.py"), "--out", str(out), "--tasks-root", str(TASKS),
                          "--skip-preflight", "--sandbox-root", str(root)])
        assert rc == 2
    assert not out.exists()


@pytest.mark.parametrize("name,verdict", [
    ("claude_quoted_tool_output.jsonl", "clean"), ("codex_quoted_tool_output.jsonl", "clean"),
    ("plain_quoted.txt", "clean"), ("claude_real_install.jsonl", "flagged"), ("plain_install.txt", "flagged"),
])
def test_audit_verdict_in_run_json(tmp_path: Path, name: str, verdict: str) -> None:
    rc, out = run_b(tmp_path, agent("replay.py", shlex.quote(str(TRANSCRIPTS / name))))
    rec = record(out)
    assert rc == 0 and rec["answer_state"] == "wrote" and rec["n_rows"] == 1
    assert rec["audit"]["verdict"] == verdict
    assert bool(rec["audit"]["matches"]) == (verdict == "flagged")


def test_preflight_failure_stops_before_the_first_cell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "python3").symlink_to(sys.executable)
    monkeypatch.setenv("PATH", str(bindir))
    out = tmp_path / "out"
    rc = runner.main(["--agent-cmd", agent("writer.py"), "--out", str(out), "--tasks-root", str(TASKS),
                      "--sandbox-root", str(tmp_path / "sb")])
    assert rc == 2 and not out.exists()


def isolated_agent(tmp_path: Path, name: str, *args: str) -> tuple[str, list[str]]:
    """An agent command for an isolated run: the agents copied outside the repository (which the
    agent never sees) and the base Python install allowed."""
    agents = tmp_path / "agents"
    if not agents.exists():
        shutil.copytree(AGENTS, agents)
    py = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    cmd = " ".join([shlex.quote(py), shlex.quote(str(agents / name)), "{prompt}", *args])
    return cmd, ["--allow-path", str(agents), "--allow-path", sys.base_prefix]


needs_bwrap = pytest.mark.skipif(namespaces_available() is not None, reason="namespaces cannot be made here")


@needs_bwrap
def test_preflight_summary_recorded(tmp_path: Path) -> None:
    if not (shutil.which("ffmpeg") and shutil.which("ffprobe") and shutil.which("python3")):
        pytest.skip("this machine lacks the required tools")
    out = tmp_path / "out"
    cmd, allow = isolated_agent(tmp_path, "never_writes.py")
    rc = runner.main(["--agent-cmd", cmd, "--out", str(out), "--tasks-root", str(TASKS),
                      "--sandbox-root", str(tmp_path / "sb"), "--limit", "1", *allow])
    rec = record(out)
    assert rc == 0 and rec["preflight"]["skipped"] is False and rec["preflight"]["errors"] == []
    assert rec["preflight"]["tools"]["ffmpeg"]
    assert rec["isolation"]["mode"] == "bwrap" and rec["stop_reason"] == "completed"


def test_two_workers_two_cells(tmp_path: Path) -> None:
    rc, out = run_b(tmp_path, agent("writer.py", "--rows", "2", "--interval", "0.2"), "--workers", "2", limit=None)
    assert rc == 0
    a, b = record(out), record(out, CASE2)
    assert a["n_rows"] == b["n_rows"] == 2 and a["sandbox"] != b["sandbox"]


def test_deeply_nested_transcript_line_still_records_the_cell(tmp_path: Path) -> None:
    # The agent prints a JSON line nested past the parser's recursion limit: the cell ran and must be
    # recorded (run.json, scored on its answer), never turned into a missing cell that resume re-draws.
    script = tmp_path / "deep.py"
    script.write_text("print('{' + chr(34) + 'turns' + chr(34) + ': ' + '[' * 100000)\n", encoding="utf-8")
    rc, out = run_b(tmp_path, f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}")
    rec = record(out)
    assert rc == 0 and (rec["stop_reason"], rec["answer_state"]) == ("completed", "never_wrote")
    assert rec["turns_used"] is None and rec["audit"]["verdict"] in ("clean", "unaudited")


def test_unknown_game_is_a_usage_error(tmp_path: Path) -> None:
    rc, _ = run_b(tmp_path, agent("writer.py"), "--games", "nosuchgame")
    assert rc == 2


def test_answer_history_follows_the_file_while_the_agent_works(tmp_path: Path) -> None:
    """The runner samples answer.json while the agent runs: the seed first, then each rewrite."""
    rc, out = run_b(tmp_path, agent("writer.py", "--rows", "3", "--interval", "2.5"))
    assert rc == 0
    hist = record(out)["answer_history"]
    assert hist[0]["state"] == "never_wrote" and hist[0]["n_rows"] == 0
    assert hist[-1]["state"] == "wrote" and hist[-1]["n_rows"] == 3
    assert len(hist) >= 3, hist  # at least one intermediate answer seen between seed and the last
    assert [h["n_rows"] for h in hist] == sorted(h["n_rows"] for h in hist)
    assert [h["t"] for h in hist] == sorted(h["t"] for h in hist)


def test_answer_watch_never_follows_a_symlink(tmp_path: Path) -> None:
    from video_arena.protocol_b.states import AnswerWatch

    secret = tmp_path / "gt.json"
    secret.write_text('{"events": [{"t": 1}]}')
    answer = tmp_path / "answer.json"
    answer.write_bytes(b'{"events": []}')
    w = AnswerWatch(answer, b'{"events": []}', interval=0.05)
    w.sample()
    answer.unlink()
    answer.symlink_to(secret)
    w.sample()
    assert [h["state"] for h in w.history] == ["never_wrote", "deleted"] and w.history[-1]["n_rows"] == 0


def test_a_cell_that_answered_but_lost_its_record_is_a_redraw_when_run_again(tmp_path: Path) -> None:
    """What a runner that died between the answer and the record leaves (the clean-up's RecursionError
    did, issue 36): answer.json and logs, no run.json.  A resume runs the cell again (it has no record),
    but the earlier attempt answered, so it is counted as one that ran: the new record is a re-draw the
    scorer's `redrawn` column shows, never a silent one."""
    cell = tmp_path / "out" / "toy" / CASE
    (cell / "logs").mkdir(parents=True)
    (cell / "answer.json").write_text('{"events": []}')
    rc, out = run_b(tmp_path, agent("writer.py", "--rows", "1"))
    rec = record(out)
    assert rc == 0 and rec["attempt"] == 2 and rec["stop_reason"] == "completed"
    [earlier] = rec["previous_attempts"]
    assert earlier["ran"] is True and "its record was lost" in earlier["note"]
    assert len(R.redraws_of(R.RunRecord.from_doc(rec))) == 1
    assert (cell / "attempts" / "1" / "answer.json").read_text() == '{"events": []}'
