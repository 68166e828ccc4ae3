"""run-b isolation options, start marker, log cap, --reasoning-effort and the run record's keys.

The attacks on the isolation itself are in tests/e2e/test_hostile_agents.py.
"""
from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from pathlib import Path

import pytest

from video_arena import paths
from video_arena.protocol_b import runner, spawn
from video_arena.protocol_b.isolation import (IsolationError, check_allowed, make_isolation,
                                              namespaces_available, parse_allow)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TASKS = FIXTURES / "protocol_b" / "tasks"
AGENTS = FIXTURES / "agents"
CASE = "Tq3Vx8Lm"
needs_bwrap = pytest.mark.skipif(namespaces_available() is not None, reason="namespaces cannot be made here")


def run_b(tmp_path: Path, agent_cmd: str, *extra: str) -> tuple[int, Path]:
    out = tmp_path / "out"
    argv = ["--agent-cmd", agent_cmd, "--out", str(out), "--tasks-root", str(TASKS), "--skip-preflight",
            "--sandbox-root", str(tmp_path / "sb"), "--kill-grace-s", "0.2", "--limit", "1", *extra]
    return runner.main(argv), out


def record(out: Path) -> dict:
    return json.loads((out / "toy" / CASE / "run.json").read_text(encoding="utf-8"))


def py_cmd(code: str) -> str:
    return f"{shlex.quote(sys.executable)} -c {shlex.quote(code)}"


# -- options ------------------------------------------------------------------------------------

def test_parse_allow(tmp_path: Path) -> None:
    assert parse_allow(str(tmp_path)).mode == "ro"
    a = parse_allow(f"{tmp_path}:rw")
    assert (a.path, a.mode) == (tmp_path.resolve(), "rw")
    with pytest.raises(IsolationError, match="no such file"):
        parse_allow(str(tmp_path / "nope"))


def test_allowed_paths_never_show_a_forbidden_tree(tmp_path: Path) -> None:
    tasks, out, sb, agent = tmp_path / "tasks", tmp_path / "out", tmp_path / "sb", tmp_path / "agent"
    for d in (tasks, out, sb, agent, tasks / "toy"):
        d.mkdir()
    forbidden = [paths.REPO_ROOT.resolve(), tasks, out]
    check_allowed([parse_allow(str(agent))], forbidden, sb)  # fine
    for bad in (tmp_path, tasks / "toy", out, paths.REPO_ROOT, sb, Path("/")):
        with pytest.raises(IsolationError):
            check_allowed([parse_allow(str(bad))], forbidden, sb)


def test_without_bwrap_run_b_refuses_unless_no_isolation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "bash").symlink_to(shutil.which("bash"))
    monkeypatch.setenv("PATH", str(bindir))
    with pytest.raises(IsolationError, match="--no-isolation"):
        make_isolation(False, [], [paths.REPO_ROOT], tmp_path)
    rc, out = run_b(tmp_path, py_cmd("pass"))
    assert rc == 2 and not out.exists()
    rc, out = run_b(tmp_path, py_cmd("pass"), "--no-isolation")
    rec = record(out)
    assert rc == 0 and rec["isolation"]["mode"] == "none" and rec["isolation"]["enforced"] is False


def test_first_word() -> None:
    assert spawn.first_word("/usr/bin/agent --x 1") == "/usr/bin/agent"
    assert spawn.first_word("FOO=1 BAR='a b' agent run") == "agent"
    assert spawn.first_word("cd /x && agent") == "cd"
    assert spawn.first_word("(agent)") == "" and spawn.first_word("if true; then a; fi") == ""
    assert spawn.first_word("'unclosed") == ""


# -- the cell's record --------------------------------------------------------------------------

def test_reasoning_effort_is_declared_recorded_and_passed(tmp_path: Path) -> None:
    code = "import json, sys; open('answer.json', 'w').write(json.dumps({'events': [], 'e': sys.argv[1]}))"
    rc, out = run_b(tmp_path, py_cmd(code) + " {reasoning_effort}", "--reasoning-effort", "high", "--no-isolation")
    rec = record(out)
    assert rc == 0 and rec["reasoning_effort"] == "high"
    assert json.loads((out / "toy" / CASE / "answer.json").read_text())["e"] == "high"
    rc, _ = run_b(tmp_path, py_cmd("pass") + " {reasoning_effort}", "--no-isolation")
    assert rc == 2  # used in the template, never declared
    rc, _ = run_b(tmp_path, py_cmd("pass"), "--reasoning-effort", "high; rm -rf /", "--no-isolation")
    assert rc == 2


def test_toolkit_and_honest_turns_in_every_record(tmp_path: Path) -> None:
    rc, out = run_b(tmp_path, py_cmd("pass"), "--no-isolation")
    rec = record(out)
    assert set(rec["toolkit"]) == {"toolkit_version", "judge_version", "git_commit", "git_dirty"}
    assert rec["turns_used"] is None and "not reported" in rec["turns_used_note"]
    assert rec["reasoning_effort"] is None


def test_logs_are_capped_and_the_cap_recorded(tmp_path: Path) -> None:
    code = "import sys; sys.stdout.write('x' * 3_000_000); sys.stderr.write('e' * 10)"
    rc, out = run_b(tmp_path, py_cmd(code), "--log-cap-mb", "1", "--no-isolation")
    rec = record(out)
    assert rc == 0 and rec["stop_reason"] == "completed"
    assert (out / "toy" / CASE / "logs" / "agent.stdout.log").stat().st_size == 1 << 20
    assert rec["logs_bytes"] == {"stdout": 3_000_000, "stderr": 10}
    assert rec["logs_truncated"] == {"stdout": 3_000_000 - (1 << 20)} and rec["logs_cap_bytes"] == 1 << 20


def test_exit_127_after_starting_is_scored_not_missing(tmp_path: Path) -> None:
    code = "import sys; open('answer.json', 'w').write('{\"events\": []} '); sys.exit(127)"
    rc, out = run_b(tmp_path, py_cmd(code), "--no-isolation")
    rec = record(out)
    assert rc == 0 and (rec["stop_reason"], rec["exit_code"], rec["answer_state"]) == ("agent_error", 127, "wrote")


def test_a_command_the_shell_cannot_finish_stops_the_run_on_its_first_cell(tmp_path: Path) -> None:
    """`agent; missing-tool` exits 127 with the seed untouched: from outside it is the command `cd dir &&
    missing-agent` (issue 28), so on the run's first cell it stops the run, the cell missing, with the
    shell's message; once a cell has started (test_protocol_b_runner.py) a 127 is the agent's, scored."""
    rc, out = run_b(tmp_path, py_cmd("pass") + "; definitely-not-a-tool-7f3", "--no-isolation")
    rec = record(out)
    assert rc == 2 and (rec["stop_reason"], rec["exit_code"], rec["agent_started"]) == ("harness_error", 127, False)
    assert "definitely-not-a-tool-7f3" in rec["error"]


@needs_bwrap
def test_agent_outside_the_allow_list_is_not_found_inside_the_isolation(tmp_path: Path, capsys) -> None:
    """The repository (and its venv) do not exist for an isolated agent: run-b says so before the first
    cell, in one line, and runs none (it used to fail every cell as harness_error, one at a time)."""
    rc, out = run_b(tmp_path, f"{shlex.quote(str(AGENTS / 'writer.py'))} {{prompt}}")
    err = capsys.readouterr().err
    assert rc == 2 and not (out / "toy").exists()
    line = next(ln for ln in err.splitlines() if "cannot run inside the isolation" in ln)
    assert "writer.py" in line and "may never see: move it" in line and line.endswith("no cell was run")


@needs_bwrap
@pytest.mark.parametrize("where", ["home", "sandbox_root"])
def test_agent_command_check_says_what_to_allow_or_move(tmp_path: Path, capsys, where: str) -> None:
    """A script outside the repository: allow it (its path named), or, under the sandbox root, move it
    (that root can never be allowed: other cells' sandboxes are made there)."""
    base = tmp_path / ("sb" if where == "sandbox_root" else "home")
    base.mkdir()
    script = base / "agent.py"
    script.write_text("print('hi')\n")
    rc, out = run_b(tmp_path, f"python3 {shlex.quote(str(script))} {{prompt}}")
    err = capsys.readouterr().err
    line = next(ln for ln in err.splitlines() if "cannot run inside the isolation" in ln)
    assert rc == 2 and not (out / "toy").exists()
    if where == "home":
        assert f"allow it with --allow-path {script.resolve()}:ro" in line
        rc, out = run_b(tmp_path, f"python3 {shlex.quote(str(script))} {{prompt}}", "--allow-path", str(script))
        assert rc == 0 and record(out)["stop_reason"] == "completed"
    else:
        assert "is under the sandbox root" in line and "cannot be allowed" in line and "move it" in line


@needs_bwrap
def test_isolated_agent_keeps_its_allowed_state_and_loses_tmp(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (tmp_path / "host-secret.txt").write_text("secret")
    code = ("import os; open(os.environ['ST'] + '/seen', 'w').write(repr(sorted(os.listdir('/tmp'))) + "
            "repr(os.path.exists(os.environ['SECRET'])) + repr(os.path.exists(os.environ['HOME'] + '/.bashrc')))")
    py = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    os.environ["ST"], os.environ["SECRET"] = str(state), str(tmp_path / "host-secret.txt")
    try:
        rc, out = run_b(tmp_path, f"{shlex.quote(py)} -c {shlex.quote(code)}", "--allow-path", f"{state}:rw",
                        "--allow-path", sys.base_prefix)
    finally:
        del os.environ["ST"], os.environ["SECRET"]
    rec = record(out)
    assert rc == 0 and rec["stop_reason"] == "completed", rec
    seen = (state / "seen").read_text()
    # /tmp holds only the folders leading to the sandbox and the allowed paths; no host secret, no ~/.bashrc
    assert seen.endswith("FalseFalse")
    assert {"path": str(state.resolve()), "mode": "rw"} in rec["isolation"]["allowed"]
