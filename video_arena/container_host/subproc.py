"""The one way the Docker helpers run a short command: captured text, a timeout, never an exception.

`run` returns a CompletedProcess whatever happens (exit 124 with "timed out after N s" on stderr when
the timeout passes, exit 127 with the OS error when the program cannot start), so callers report one
line (`last_line`) instead of a traceback. Used by docker_host.py, image.py and registry.py.
"""
from __future__ import annotations

import subprocess


def run(cmd: list[str], timeout: float | None = None, **kw) -> subprocess.CompletedProcess:
    """subprocess.run with captured text output and no stdin; never raises on a timeout or a missing program."""
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, **kw)
    except subprocess.TimeoutExpired as exc:
        return subprocess.CompletedProcess(cmd, 124, "", f"timed out after {exc.timeout:.0f}s")
    except OSError as exc:
        return subprocess.CompletedProcess(cmd, 127, "", str(exc))


def last_line(text: str | None) -> str:
    """The last non-blank line of `text`, stripped ("" when there is none)."""
    lines = [line.strip() for line in (text or "").strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""
