"""importing/signals.py: a signal that unwinds an import leaves no child process behind, even one whose
Popen the signal cut short (nobody holds it), and touches no process that is not its child.  Each case
runs in a process of its own: `end_children` kills every child of the process it runs in, and a pytest
worker may hold children of its own (a Docker daemon an e2e fixture started)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

COMMON = """
import json, os, signal, subprocess, sys, time
from video_arena.importing.signals import Interrupted, end_children, signals_unwind

def alive(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False
"""


def run_script(body: str) -> dict:
    p = subprocess.run([sys.executable, "-c", COMMON + textwrap.dedent(body)], capture_output=True, text=True,
                       timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_ends_the_children_no_popen_holds(signum):
    got = run_script(f"""
        try:
            with signals_unwind():
                # what a signal landing inside subprocess.Popen() leaves: a running child and no object for it
                pid = subprocess.Popen(["sleep", "60"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).pid
                was_alive = alive(pid)
                os.kill(os.getpid(), {int(signum)})
                time.sleep(5)                      # the handler raises at once; never reached
            raised = None
        except Interrupted as exc:
            raised = exc.signum
        try:
            os.waitpid(pid, os.WNOHANG)
            reaped = False
        except ChildProcessError:
            reaped = True
        print(json.dumps({{"raised": raised, "was_alive": was_alive, "alive": alive(pid), "reaped": reaped,
                          "handler_back": signal.getsignal({int(signum)}) in (signal.default_int_handler,
                                                                              signal.SIG_DFL)}}))
    """)
    assert got == {"raised": signum, "was_alive": True, "alive": False, "reaped": True, "handler_back": True}


def test_end_children_leaves_a_process_that_is_not_its_child():
    got = run_script("""
        # a grandchild: its parent (sh) exits at once, so it is no child of this process
        grandchild = int(subprocess.run(["sh", "-c", "sleep 60 >/dev/null 2>&1 & echo $!"], capture_output=True,
                                        text=True, check=True).stdout)
        child = subprocess.Popen(["sleep", "60"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ended = end_children()
        out = {"ended": ended == [child.pid], "child": alive(child.pid), "grandchild": alive(grandchild)}
        os.kill(grandchild, signal.SIGKILL)
        print(json.dumps(out))
    """)
    assert got == {"ended": True, "child": False, "grandchild": True}
