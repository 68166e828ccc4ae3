"""`video-arena run-b --no-isolation` wall clock: real scripted agents whose process trees must be
killed whole by the /proc scans of procs.py (the fallback where namespaces cannot be made; the
isolated runner is attacked in test_hostile_agents.py).

The runner is started as a real process (`python -m video_arena.cli run-b`), as a user would, so the
subreaper and the signals act on a process of its own.  --timeout-min 0.08 is a 4.8 s limit.
"""
from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TASKS = FIXTURES / "protocol_b" / "tasks"
AGENTS = FIXTURES / "agents"
CASE, CASE2 = "Tq3Vx8Lm", "Pz5Kw2Rn"
GRACE = 0.5
LIMIT_MIN = 0.08  # 4.8 s: room for every writer to start on a loaded machine


def agent(name: str, *args: str) -> str:
    return " ".join([shlex.quote(sys.executable), shlex.quote(str(AGENTS / name)), "{prompt}", *args])


def run_b(tmp_path: Path, agent_cmd: str, *extra: str, limit: int | None = 1) -> tuple[subprocess.CompletedProcess, Path, float]:
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "video_arena.cli", "run-b", "--agent-cmd", agent_cmd, "--out", str(out),
            "--tasks-root", str(TASKS), "--skip-preflight", "--sandbox-root", str(tmp_path / "sb"),
            "--timeout-min", str(LIMIT_MIN), "--kill-grace-s", str(GRACE), "--keep-sandboxes", "--no-isolation",
            *extra]
    if limit:
        argv += ["--limit", str(limit)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    returned = time.time()
    assert proc.returncode == 0, proc.stderr
    return proc, out, returned


def record(out: Path, case: str = CASE) -> dict:
    return json.loads((out / "toy" / case / "run.json").read_text(encoding="utf-8"))


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return False
    return data[data.rindex(b")") + 2:].split()[0] not in (b"Z", b"X")


_STARTED: list[int] = []


@pytest.fixture(autouse=True)
def _no_leftovers():
    """Should an assertion below fail, do not leave its writers running after the test."""
    yield
    while _STARTED:
        pid = _STARTED.pop()
        if alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def writer_pids(sandbox: Path) -> dict[str, int]:
    out = {}
    for line in (sandbox / "pids.txt").read_text().splitlines():
        kind, pid = line.split()
        out[kind] = int(pid)
    _STARTED.extend(out.values())
    return out


def assert_frozen(sandbox: Path, seconds: float = 1.0) -> None:
    """Nothing writes into the sandbox any more: answer.json and the folder do not change."""
    before = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in sandbox.iterdir()}
    time.sleep(seconds)
    after = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in sandbox.iterdir()}
    assert after == before


def test_forker_every_escape_is_killed_at_the_limit(tmp_path: Path) -> None:
    _, out, returned = run_b(tmp_path, agent("forker.py", "--children", "group,setsid,daemon,stubborn,stealth"))
    rec = record(out)
    sandbox = Path(rec["sandbox"])
    pids = writer_pids(sandbox)
    assert set(pids) == {"group", "setsid", "daemon", "stubborn", "stealth"}
    assert [k for k, p in pids.items() if alive(p)] == []
    assert_frozen(sandbox)
    assert rec["stop_reason"] == "timeout" and rec["exit_code"] is None
    assert rec["answer_state"] == "wrote" and rec["n_rows"] == 1
    # The exported answer is the sandbox's last state: collected after the last writer was gone.
    assert (out / "toy" / CASE / "answer.json").read_bytes() == (sandbox / "answer.json").read_bytes()
    last_write = json.loads((sandbox / "answer.json").read_text())["events"][0]["wall"]
    assert last_write < returned
    kill = rec["kill"]
    assert kill["reason"] == "limit" and kill["survivors"] == []
    why = {int(k): v for k, v in kill["members"].items()}
    assert why[pids["group"]] == "group"
    assert why[pids["setsid"]] == "marker"   # another session, still the agent's child, with the marker
    # Orphaned at once: re-parented to the cell's shepherd.  The stealth writer has no marker, no cwd
    # and no open file in the sandbox: the subreaper is the only way to find it.
    assert why[pids["daemon"]] == why[pids["stubborn"]] == why[pids["stealth"]] == "orphan"
    assert pids["stubborn"] in kill["sigkill"]   # it ignored SIGTERM
    assert GRACE <= rec["kill_to_gone_s"] < GRACE + 3
    assert rec["wall_s"] >= LIMIT_MIN * 60
    assert rec["turns_used"] == 5 and rec["audit"]["verdict"] == "clean"


def test_cooperative_tree_dies_on_sigterm_without_waiting_for_the_grace(tmp_path: Path) -> None:
    _, out, _ = run_b(tmp_path, agent("forker.py", "--children", "group,setsid,daemon"), "--kill-grace-s", "5")
    rec = record(out)
    pids = writer_pids(Path(rec["sandbox"]))
    assert not any(alive(p) for p in pids.values())
    assert rec["stop_reason"] == "timeout" and rec["kill"]["sigkill"] == []
    assert rec["kill_to_gone_s"] < 2.0  # far below the 5 s grace: everything left on SIGTERM


def test_agent_ignoring_sigterm_is_sigkilled_after_the_grace(tmp_path: Path) -> None:
    _, out, _ = run_b(tmp_path, agent("forker.py", "--children", "group", "--parent", "ignore-term"))
    rec = record(out)
    pids = writer_pids(Path(rec["sandbox"]))
    assert not alive(pids["group"])
    kill = rec["kill"]
    leader = min(int(k) for k, v in kill["members"].items() if v == "group" and int(k) != pids["group"])
    assert leader in kill["sigkill"] and not alive(leader)
    assert rec["stop_reason"] == "timeout" and GRACE <= rec["kill_to_gone_s"] < GRACE + 3


def test_launcher_that_exits_leaving_daemons_is_cleaned_up(tmp_path: Path) -> None:
    _, out, _ = run_b(tmp_path, agent("forker.py", "--children", "setsid,daemon,stealth", "--parent", "exit"),
                      "--timeout-min", "1")
    rec = record(out)
    sandbox = Path(rec["sandbox"])
    pids = writer_pids(sandbox)
    assert not any(alive(p) for p in pids.values())
    assert_frozen(sandbox)
    assert rec["stop_reason"] == "completed" and rec["exit_code"] == 0
    assert rec["kill"]["reason"] == "exited" and rec["wall_s"] < 30
    assert rec["kill_to_gone_s"] is not None and rec["answer_state"] == "wrote"


def test_incremental_writer_is_scored_on_what_it_wrote_before_the_limit(tmp_path: Path) -> None:
    _, out, _ = run_b(tmp_path, agent("writer.py", "--rows", "4", "--interval", "0.1", "--then-sleep", "60"))
    rec = record(out)
    assert (rec["stop_reason"], rec["answer_state"], rec["n_rows"]) == ("timeout", "wrote", 4)
    assert rec["turns_used"] == 5 and rec["kill_to_gone_s"] < 2


def test_late_committer_is_never_wrote_at_the_limit(tmp_path: Path) -> None:
    """Rows kept 'for the end' score nothing when the wall clock runs out first."""
    _, out, _ = run_b(tmp_path, f"sleep 60; {agent('writer.py', '--rows', '3')}")
    rec = record(out)
    assert (rec["stop_reason"], rec["answer_state"], rec["n_rows"]) == ("timeout", "never_wrote", 0)
    assert (out / "toy" / CASE / "answer.json").read_bytes() == (TASKS / "toy" / "answer_seed.json").read_bytes()


def test_two_concurrent_cells_leave_no_process_behind(tmp_path: Path) -> None:
    proc, out, _ = run_b(tmp_path, agent("forker.py", "--children", "group,daemon,stealth"), "--workers", "2",
                         limit=None)
    for case in (CASE, CASE2):
        rec = record(out, case)
        sandbox = Path(rec["sandbox"])
        pids = writer_pids(sandbox)
        assert rec["stop_reason"] == "timeout"
        assert [k for k, p in pids.items() if alive(p)] == [], (case, proc.stderr)
        # Each cell found its own orphans (through its shepherd), not the other cell or the final sweep.
        why = {int(k): v for k, v in rec["kill"]["members"].items()}
        assert why.get(pids["stealth"]) == "orphan" and why.get(pids["daemon"]) == "orphan"
        assert_frozen(sandbox, 0.3)
    assert "stray" not in proc.stderr
