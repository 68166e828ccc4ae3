"""How a Protocol B cell's agent is started, watched and stopped: the start wrapper (a start marker
the runner reads: no marker = the agent never ran), the capped log pumps, and the two spawn
strategies: under bwrap in the cell's own PID and mount namespaces (isolation.py), or, with
--no-isolation, under the shepherd with /proc scans (procs.py, shepherd.py).  Used by agent_cell.py.
"""
from __future__ import annotations

import os
import re
import select
import shlex
import subprocess
import sys
import threading
import time
from pathlib import Path

from video_arena.protocol_b import procs
from video_arena.protocol_b.isolation import Isolation
from video_arena.protocol_b.sandbox import CELL_MARKER_ENV

LOG_STDOUT, LOG_STDERR, LOG_RUNNER = "agent.stdout.log", "agent.stderr.log", "runner.log"

#: Shell words after which the first word of --agent-cmd is not a program to look up.
_SHELL_SYNTAX = set("(){}|;&<>$`\\'\"")
_SHELL_KEYWORDS = {"if", "for", "while", "until", "case", "select", "function", "time", "!", "[[", "{", "("}

#: Run by bash with argv: START_FD COMMAND FIRST_WORD.  It checks that the command's first word is a
#: program it can run (else reports `nostart <why>` and exits 126/127: the agent provably never
#: started), writes the start marker, closes the marker's pipe (the agent never holds it) and execs
#: the agent command.  Everything after the marker is the agent's doing, and is scored.
START_WRAPPER = r"""fd=$1; cmd=$2; w=$3
if [ -n "$w" ] && ! command -v -- "$w" >/dev/null 2>&1; then
  r=not-found; c=127
  case $w in */*) if [ -e "$w" ]; then r=not-executable; c=126; fi;; esac
  printf 'nostart %s\n' "$r" >&"$fd"
  printf 'video-arena run-b: %s: %s\n' "$w" "$r" >&2
  exit $c
fi
printf 'start\n' >&"$fd"
eval "exec $fd>&-"
exec "$0" -c "$cmd"
"""


def first_word(command: str) -> str:
    """The program the shell will run first, when plainly readable ("" when it is not: then the
    wrapper does not check it)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return ""
    for w in words:
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", w):
            continue  # an assignment prefix: VAR=x agent ...
        if w in _SHELL_KEYWORDS or any(c in _SHELL_SYNTAX for c in w):
            return ""
        return w
    return ""


SHEPHERD_SOURCE = (Path(__file__).resolve().parent / "shepherd.py").read_text(encoding="utf-8")


class _ShepherdStatus:
    """Lines `pid N` and `exit N` the shepherd writes to its status pipe."""

    def __init__(self, fd: int):
        self.fd, self.buf, self.eof = fd, b"", False
        self.values: dict[str, int] = {}

    def wait_for(self, key: str, until: float) -> int | None:
        while key not in self.values and not self.eof:
            left = until - time.monotonic()
            if left <= 0:
                break
            ready, _, _ = select.select([self.fd], [], [], left)
            if not ready:
                break
            data = os.read(self.fd, 4096)
            if not data:
                self.eof = True
                break
            self.buf += data
            *lines, self.buf = self.buf.split(b"\n")
            for line in lines:
                k, _, v = line.decode("ascii", "replace").partition(" ")
                try:
                    self.values[k] = int(v)
                except ValueError:
                    pass
        return self.values.get(key)

    def close(self) -> None:
        try:
            os.close(self.fd)
        except OSError:
            pass


def _release_shepherd(shep: subprocess.Popen, log) -> None:
    """Close the shepherd's stdin (it then kills anything left below it and exits) and reap it."""
    try:
        if shep.stdin:
            shep.stdin.close()
    except OSError:
        pass
    try:
        shep.wait(timeout=10)
    except subprocess.TimeoutExpired:  # pragma: no cover - the shepherd exits on EOF
        log(f"the shepherd {shep.pid} did not exit on EOF: killed")
        shep.kill()
        shep.wait()


class LogPump(threading.Thread):
    """Copies one of the agent's output pipes into its log file, at most `cap` bytes; reads (and
    counts, and drops) the rest so the agent never blocks on a full pipe.  A log that cannot be written
    (a disk the agent filled) is drained all the same: what was not written is counted as dropped and
    `error` says why."""

    def __init__(self, name: str, fd: int, path: Path, cap: int):
        super().__init__(daemon=True, name=f"run-b-log-{name}")
        self.key, self.fd, self.path, self.cap = name, fd, path, cap
        self.total = self.written = 0
        self.error: str | None = None

    def _store(self, out: int | None, data: bytes) -> int | None:
        """Write what fits under the cap; the descriptor to go on with (None once writing failed)."""
        chunk = data[:max(0, self.cap - self.written)]
        while out is not None and chunk:
            try:
                n = os.write(out, chunk)
            except OSError as exc:
                self.error = f"{self.path.name}: {exc.strerror or exc}"
                return None
            self.written += n
            chunk = chunk[n:]
        return out

    def run(self) -> None:
        out = None
        try:
            try:
                out = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
            except OSError as exc:
                self.error = f"{self.path.name}: {exc.strerror or exc}"
            while True:
                try:
                    data = os.read(self.fd, 1 << 16)
                except OSError:
                    break
                if not data:
                    break
                self.total += len(data)
                kept = self._store(out, data)
                if kept is None and out is not None:
                    os.close(out)
                out = kept
        finally:
            os.close(self.fd)
            if out is not None:
                os.close(out)


def start_pumps(stdout_fd: int, stderr_fd: int, logs: Path, cap: int, pumps: list) -> None:
    for name, fd, fname in (("stdout", stdout_fd, LOG_STDOUT), ("stderr", stderr_fd, LOG_STDERR)):
        pump = LogPump(name, fd, logs / fname, cap)
        pump.start()
        pumps.append(pump)


def read_start(fd: int) -> tuple[bool, str | None]:
    """(started, nostart reason) from the wrapper's marker pipe; closes it."""
    buf = b""
    try:
        while select.select([fd], [], [], 0)[0]:
            data = os.read(fd, 4096)
            if not data:
                break
            buf += data
            if len(buf) > 4096:
                break
    except OSError:
        pass
    finally:
        os.close(fd)
    lines = buf.decode("ascii", "replace").splitlines()
    if lines and lines[0] == "start":
        return True, None
    if lines and lines[0].startswith("nostart "):
        return False, lines[0].split(" ", 1)[1]
    return False, None


def _info_child_pid(fd: int, until: float) -> int | None:
    """bwrap's --info-fd JSON ({"child-pid": N, ...}): the host pid of the namespace's init.  Read to
    its end (bwrap closes it): closing our end early would kill bwrap with SIGPIPE."""
    buf = b""
    try:
        while time.monotonic() < until:
            ready, _, _ = select.select([fd], [], [], max(0.0, until - time.monotonic()))
            if not ready:
                break
            data = os.read(fd, 4096)
            if not data:
                break
            buf += data
    except OSError:
        pass
    m = re.search(rb'"child-pid"\s*:\s*(\d+)', buf)
    return int(m.group(1)) if m else None


def run_isolated(cfg, sb, env, wrapper, start_w, timeout_s, log, pumps, logs):
    """The cell under bwrap (isolation.py).  Returns (outcome, exit_code, kill, t_spawn, spawn_error)."""
    iso: Isolation = cfg.isolation
    info_r, info_w = os.pipe()
    args = [*iso.mount_args(rw=[sb.path], ro=[sb.prompt_path]), "--chdir", str(sb.path),
            "--info-fd", str(info_w), "--"]
    # The arguments go through a memfd, so the namespace's init (bwrap, visible inside as PID 1)
    # shows only `bwrap --args N` as its command line.
    args_fd = os.memfd_create("run-b-args", 0)
    os.write(args_fd, b"".join(a.encode() + b"\0" for a in args))
    os.lseek(args_fd, 0, os.SEEK_SET)
    t_spawn = time.monotonic()
    try:
        with procs.SPAWN_LOCK:
            try:
                proc = subprocess.Popen([iso.bwrap, "--args", str(args_fd), *wrapper], env=env,
                                        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        start_new_session=True, close_fds=True,
                                        pass_fds=(start_w, info_w, args_fd))
            except OSError as exc:
                os.close(info_r)
                return "not_started", None, None, t_spawn, f"could not start bwrap: {exc}"
            procs.register_active(proc.pid)
    finally:
        for fd in (start_w, info_w, args_fd):
            os.close(fd)
    start_pumps(os.dup(proc.stdout.fileno()), os.dup(proc.stderr.fileno()), logs, cfg.log_cap_bytes, pumps)
    proc.stdout.close()
    proc.stderr.close()
    deadline = t_spawn + timeout_s
    outcome, exit_code, kill = None, None, None
    try:
        init_pid = _info_child_pid(info_r, time.monotonic() + 30.0)  # closed in `finally`
        ns = procs.pid_namespace(init_pid) if init_pid else None
        if ns == procs.pid_namespace(os.getpid()):
            ns = None  # read too late (pid reused): the cell's namespace is already gone
        cell = procs.NamespaceCell(init_pid or -1, ns)
        log(f"isolated: bwrap {proc.pid}, namespace init {init_pid}, {ns}")
        while outcome is None:
            try:
                exit_code = proc.wait(timeout=max(0.0, min(0.25, deadline - time.monotonic())))
                outcome = "exited"
                break
            except subprocess.TimeoutExpired:
                pass
            if time.monotonic() >= deadline:
                outcome = "timeout"
            elif cfg.stop.is_set():
                outcome = "interrupted"
        if outcome == "exited":
            # bwrap's init has exited, so the kernel has emptied the namespace; checked anyway.
            if cell.members():
                kill = cell.kill_all("exited", 0.0)
        elif outcome == "timeout":
            kill = cell.kill_all("limit", cfg.kill_grace_s, started=deadline)
        else:
            kill = cell.kill_all("interrupt", cfg.kill_grace_s)
    finally:
        try:
            code = proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - bwrap exits once its init is gone
            proc.kill()
            code = proc.wait()
        if outcome == "exited":
            exit_code = code
        procs.unregister_active(proc.pid)
        os.close(info_r)
    return outcome, exit_code, kill, t_spawn, None


def run_shepherd(cfg, sb, env, wrapper, start_w, timeout_s, log, pumps, logs, marker):
    """The cell without isolation (--no-isolation): the shepherd and /proc scans of procs.py."""
    status_r, status_w = os.pipe()
    t_spawn = time.monotonic()
    try:
        with procs.SPAWN_LOCK:
            try:
                shep = subprocess.Popen(
                    [sys.executable or "python3", "-I", "-c", SHEPHERD_SOURCE, str(status_w), *wrapper],
                    cwd=sb.path, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE, start_new_session=True, close_fds=True,
                    pass_fds=(status_w, start_w))
            except OSError as exc:
                os.close(status_r)
                return "not_started", None, None, t_spawn, f"could not start the agent command: {exc}"
            procs.register_active(shep.pid)
    finally:
        os.close(status_w)
        os.close(start_w)
    start_pumps(os.dup(shep.stdout.fileno()), os.dup(shep.stderr.fileno()), logs, cfg.log_cap_bytes, pumps)
    shep.stdout.close()
    shep.stderr.close()
    deadline = t_spawn + timeout_s
    status = _ShepherdStatus(status_r)
    outcome, exit_code, kill = None, None, None
    try:
        agent_pid = status.wait_for("pid", time.monotonic() + 30.0)
        if agent_pid is None:
            outcome = "not_started"
        else:
            tree = procs.CellProcesses(agent_pid, shep.pid, str(sb.path), CELL_MARKER_ENV, marker)
            while outcome is None:
                if time.monotonic() >= deadline:
                    outcome = "timeout"
                elif status.wait_for("exit", min(deadline, time.monotonic() + 0.25)) is not None:
                    outcome, exit_code = "exited", status.values["exit"]
                elif status.eof:  # the shepherd died: should not happen; treat as an agent exit
                    outcome = "exited"
                    log("the shepherd exited before reporting the agent's exit status")
                elif cfg.stop.is_set():
                    outcome = "interrupted"
            if outcome == "exited":
                t_exit = time.monotonic()
                if tree.scan():  # a launcher that exited and left children running
                    kill = tree.kill_all("exited", cfg.kill_grace_s, started=t_exit)
            elif outcome == "timeout":
                # Measured from the limit itself, so any lag in noticing it is counted too.
                kill = tree.kill_all("limit", cfg.kill_grace_s, started=deadline)
            else:
                kill = tree.kill_all("interrupt", cfg.kill_grace_s)
    finally:
        _release_shepherd(shep, log)
        procs.unregister_active(shep.pid)
        status.close()
        procs.reap_orphan_zombies()
    if outcome == "not_started":
        return outcome, None, None, t_spawn, "the agent was not started (its shepherd process failed; see logs)"
    return outcome, exit_code, kill, t_spawn, None
