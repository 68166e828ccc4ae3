"""The per-cell shepherd: the agent's parent and the subreaper of everything the agent starts.

The runner starts one shepherd per cell (`python -I -c <this file's source> STATUS_FD ARGV...`,
stdlib only, so it needs nothing from the toolkit's environment).  The shepherd

1. makes itself a child subreaper (Linux PR_SET_CHILD_SUBREAPER), so every orphaned descendant of
   the agent (a double-forked daemon, a setsid'd writer that wiped its environment and left the
   sandbox) is re-parented to it: the cell's processes stay attributable to the cell even when
   several cells run at once;
2. forks the agent command into a session and process group of its own, stdin on /dev/null,
   stdout/stderr inherited (the transcript logs), and writes `pid <agent pid>` to STATUS_FD;
3. reaps every child as it exits, and writes `exit <code>` when the agent itself exits (the code as
   `os.waitstatus_to_exitcode`: negative = killed by that signal);
4. runs until its stdin closes: the runner closes it once it has killed the cell's process tree.
   On EOF (the runner finished, or died) and on SIGTERM, the shepherd SIGKILLs whatever is still
   below it, reaps it, and exits, so even a crashed runner leaves no agent running.
"""
import os
import select
import signal
import sys
import ctypes


def _children(me):
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                data = f.read()
            rest = data[data.rindex(b")") + 2:].split()
            if int(rest[1]) == me and rest[0] not in (b"Z", b"X"):
                out.append(int(name))
        except (OSError, ValueError, IndexError):
            pass
    return out


def _kill_everything_below(agent_pid, status_fd):
    me = os.getpid()
    for _ in range(200):
        try:
            os.killpg(agent_pid, signal.SIGKILL)
        except OSError:
            pass
        kids = _children(me)
        for pid in kids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        _reap(agent_pid, status_fd)
        if not kids:
            return


def _reap(agent_pid=None, status_fd=None):
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if pid == agent_pid and status_fd is not None:
            try:
                os.write(status_fd, f"exit {os.waitstatus_to_exitcode(status)}\n".encode())
            except OSError:
                pass  # the runner stopped listening


def main(argv):
    status_fd, cmd = int(argv[0]), argv[1:]
    try:
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except Exception:  # noqa: BLE001 - best effort: the runner is a subreaper too
        pass
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            os.close(devnull)
            os.close(status_fd)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.execv(cmd[0], cmd)
        except BaseException as exc:  # noqa: BLE001
            os.write(2, f"video-arena shepherd: could not start {cmd[0]}: {exc}\n".encode())
        os._exit(127)
    os.write(status_fd, f"pid {pid}\n".encode())
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    while not stop:
        _reap(pid, status_fd)
        try:
            ready, _, _ = select.select([0], [], [], 0.05)
        except InterruptedError:
            continue
        if ready and not os.read(0, 4096):
            break  # the runner is done with this cell (or gone)
    _kill_everything_below(pid, status_fd)
    _reap(pid, status_fd)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
