"""How the runner finds a cell's processes (procs.CellProcesses) and the shepherd's own cleanup."""
from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from video_arena.protocol_b import procs
from video_arena.protocol_b.spawn import SHEPHERD_SOURCE

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")

SLEEP = "import time; time.sleep(60)"
MARK_ENV = "VIDEO_ARENA_B_CELL"


def _py(code: str, **kw) -> subprocess.Popen:
    kw.setdefault("start_new_session", True)
    kw.setdefault("cwd", "/")
    kw.setdefault("env", {})
    # bufsize=0: readline() on a raw pipe reads byte by byte, so a second line that arrived together
    # with the first stays in the pipe, where select() in _line() can see it.
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, bufsize=0, **kw)


def _line(p: subprocess.Popen) -> str:
    ready, _, _ = select.select([p.stdout], [], [], 30)
    assert ready, "helper process did not report"
    return p.stdout.readline().decode().strip()


@pytest.fixture
def started():
    ps: list[subprocess.Popen] = []
    extra: list[int] = []
    yield ps, extra
    for p in ps:
        p.kill()
        p.wait()
    for pid in extra:
        try:
            os.kill(pid, 9)
        except OSError:
            pass


def test_scan_rules_and_kill_all(tmp_path: Path, started) -> None:
    ps, extra = started
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    (sandbox / "answer.json").write_text("{}")
    announce = "import os, sys; print(os.getpid(), flush=True); "
    spawn_child = ("import subprocess, sys; subprocess.Popen([sys.executable, '-c', "
                   "'import os, time; print(os.getpid(), flush=True); time.sleep(60)'], cwd='/', env={}{}); ")
    agent = _py(announce + spawn_child.replace("{}{}", "{}") + SLEEP)   # a session leader, and a child in its group
    marked = _py(announce + SLEEP, env={MARK_ENV: "run:cell"})            # elsewhere, but carries the marker
    own_session = spawn_child.replace("{}{}", "{}, start_new_session=True")
    in_cwd = _py(announce + own_session + SLEEP, cwd=sandbox)           # in the sandbox, with a child elsewhere
    holds_fd = _py(announce + f"f = open({str(sandbox / 'answer.json')!r}); " + SLEEP)
    fake_shepherd = _py(announce + own_session + SLEEP)                  # its child stands for an orphan
    unrelated = _py(announce + SLEEP)
    ps += [agent, marked, in_cwd, holds_fd, fake_shepherd, unrelated]
    pid = {name: int(_line(p)) for name, p in [("agent", agent), ("marked", marked),
                                                ("in_cwd", in_cwd), ("holds_fd", holds_fd),
                                                ("shepherd", fake_shepherd), ("unrelated", unrelated)]}
    pid["in_group"] = int(_line(agent))
    pid["cwd_child"] = int(_line(in_cwd))
    pid["orphan"] = int(_line(fake_shepherd))
    extra += [pid["in_group"], pid["cwd_child"], pid["orphan"]]
    tree = procs.CellProcesses(pid["agent"], pid["shepherd"], str(sandbox), MARK_ENV, "run:cell")
    found = tree.scan()
    assert found.get(pid["agent"]) == "group" and found.get(pid["in_group"]) == "group"
    assert found.get(pid["marked"]) == "marker"
    assert found.get(pid["in_cwd"]) == "cwd"
    assert found.get(pid["holds_fd"]) == "fd"
    assert found.get(pid["cwd_child"]) == "child"
    assert found.get(pid["orphan"]) == "orphan"
    assert pid["shepherd"] not in found and pid["unrelated"] not in found and os.getpid() not in found

    rep = procs.CellProcesses(pid["agent"], pid["shepherd"], str(sandbox), MARK_ENV, "run:cell").kill_all(
        "limit", grace_s=2.0)
    assert rep.survivors == [] and rep.gone_s is not None and rep.gone_s < 2.0
    for name in ("agent", "in_group", "marked", "in_cwd", "holds_fd", "cwd_child", "orphan"):
        assert not procs.is_alive(pid[name]), name
    assert procs.is_alive(pid["unrelated"]) and procs.is_alive(pid["shepherd"])


def test_shepherd_kills_everything_below_it_when_the_runner_goes_away(tmp_path: Path, started) -> None:
    ps, extra = started
    r, w = os.pipe()
    # The agent starts a double-forked daemon that writes its pid, then sleeps.
    agent = ("import os, sys, time\n"
             "if os.fork() == 0:\n"
             "    os.setsid()\n"
             "    if os.fork() == 0:\n"
             "        open('daemon.pid', 'w').write(str(os.getpid())); time.sleep(60)\n"
             "    os._exit(0)\n"
             "time.sleep(60)\n")
    shep = subprocess.Popen([sys.executable, "-I", "-c", SHEPHERD_SOURCE, str(w), sys.executable, "-c", agent],
                            cwd=tmp_path, stdin=subprocess.PIPE, pass_fds=(w,), start_new_session=True)
    ps.append(shep)
    os.close(w)
    status = os.fdopen(r, "rb")
    agent_pid = int(status.readline().split()[1])
    deadline = time.time() + 30
    while not (tmp_path / "daemon.pid").exists() or not (tmp_path / "daemon.pid").read_text():
        assert time.time() < deadline
        time.sleep(0.02)
    daemon = int((tmp_path / "daemon.pid").read_text())
    extra += [agent_pid, daemon]
    assert procs.read_stat(daemon).ppid == shep.pid  # re-parented to the shepherd, not to init
    shep.stdin.close()                               # the runner is gone
    assert shep.wait(timeout=10) == 0
    assert not procs.is_alive(agent_pid) and not procs.is_alive(daemon)
    assert status.readline().split()[0] == b"exit"   # it reported the agent's end
