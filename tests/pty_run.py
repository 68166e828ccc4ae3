"""Run a command with its stderr on a pseudo-terminal (as a user at a terminal sees it) or on a pipe
(as a log or CI sees it), stdout always on a pipe; for the progress-bar tests."""
from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: "3/10 [00:02<00:04" : the count out of the total, then elapsed < remaining (the ETA)
COUNT_ETA_RE = re.compile(r"(\d+)/(\d+) \[(\d\d:)?\d\d:\d\d<(\d\d:)?\d\d:\d\d")
BAR_MARKS = ("\r", "\x1b[", "█", "|#")


@dataclass
class Run:
    rc: int
    stdout: str
    stderr: str  # with a pty: everything the terminal received, carriage returns included

    def counts(self) -> list[tuple[int, int]]:
        """Every (N, TOTAL) the bar drew with an ETA after it ("N/TOTAL [elapsed<remaining")."""
        return [(int(m.group(1)), int(m.group(2))) for m in COUNT_ETA_RE.finditer(self.stderr)]


def python_cmd(*args: str) -> list[str]:
    return [sys.executable, *args]


def env_for(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env.pop("VA_NO_PROGRESS", None)
    env.update(extra or {})
    return env


def run(cmd: list[str], *, tty: bool, env: dict[str, str] | None = None, cwd: str | Path | None = None,
        timeout: float = 120, cols: int = 120, merged: bool = False) -> Run:
    """`merged`: stdout on the same terminal as stderr (Run.stdout is then empty)."""
    env = env_for(env)
    if not tty:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, cwd=cwd,
                           timeout=timeout)
        return Run(p.returncode, p.stdout, p.stderr)
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, cols, 0, 0))
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=slave if merged else subprocess.PIPE, stderr=slave,
                         env=env, cwd=cwd)
    os.close(slave)
    err, out = bytearray(), bytearray()
    fds = {master: err} if merged else {master: err, p.stdout.fileno(): out}
    try:
        while fds:
            ready, _, _ = select.select(list(fds), [], [], timeout)
            if not ready:
                raise TimeoutError(f"{cmd} wrote nothing for {timeout} s")
            for fd in ready:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:  # EIO: the pty's last writer is gone
                    chunk = b""
                if chunk:
                    fds[fd].extend(chunk)
                else:
                    del fds[fd]
        rc = p.wait(timeout)
    finally:
        os.close(master)
        if p.stdout:
            p.stdout.close()
        if p.poll() is None:
            p.kill()
    return Run(rc, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"))


def no_bar(text: str) -> bool:
    """Nothing of a progress bar: no carriage return, escape sequence, bar block or N/TOTAL [..<.."""
    text = text.replace("\r\n", "\n")  # a terminal's own line ends
    return not any(m in text for m in BAR_MARKS) and not COUNT_ETA_RE.search(text)
