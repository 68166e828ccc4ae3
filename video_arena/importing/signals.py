"""Ctrl-C (SIGINT) and SIGTERM during an import: both unwind the import as an `Interrupted` exception, so
that every staging folder is removed and the command prints one line, never a traceback.

    with signals_unwind():          # import-cases' main, from its first line: both signals raise Interrupted
        ...
        with uninterrupted():       # a commit's renames, a clean-up, the making of a staging folder:
            ...                     # a signal waits until the section ends, then is raised

Only the first signal is raised; one that arrives after it (a second Ctrl-C while the clean-up runs) is
noted and never cuts the clean-up short.  When a signal unwinds an import, every child process still running
is killed and reaped before the clean-up (`end_children`): a signal that lands while `subprocess` is starting
ffmpeg leaves a child that no Popen object holds, and it must not outlive the command.  Outside the main thread (an import run by a test's thread)
signals are left as they are.
"""
from __future__ import annotations

import os
import signal
import threading
from contextlib import contextmanager
from typing import Iterator

from video_arena.protocol_b.procs import children_of

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(BaseException):
    """SIGINT or SIGTERM during an import, raised in the main thread (BaseException, like KeyboardInterrupt:
    no `except Exception` swallows it)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum
        #: the signal came while a commit put the files in place: it was raised once they all were
        self.after_commit = False

    @property
    def status(self) -> int:
        """The exit status of a command a signal ended: 128 + its number (130 Ctrl-C, 143 SIGTERM)."""
        return 128 + self.signum

    @property
    def verb(self) -> str:
        return "interrupted" if self.signum == signal.SIGINT else "terminated"


class _Guard:
    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.depth = 0              # > 0: inside an uninterrupted section
        self.pending: int | None = None
        self.raised = False

    def handler(self, signum: int, frame) -> None:
        if self.raised or self.depth:
            if self.pending is None and not self.raised:
                self.pending = signum
            return
        self.raised = True
        raise Interrupted(signum)


GUARD = _Guard()


@contextmanager
def signals_unwind() -> Iterator[None]:
    """SIGINT and SIGTERM raise Interrupted while the block runs (in the main thread); the previous handlers
    come back after it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    GUARD.reset()
    previous = {s: signal.signal(s, GUARD.handler) for s in SIGNALS}
    try:
        yield
    except Interrupted:
        end_children()
        raise
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def end_children() -> list[int]:
    """SIGKILL and reap every child process of this one (read from /proc: a child whose Popen was cut short
    by a signal is known to nobody else); returns their pids."""
    ended = []
    for pid in children_of(os.getpid()):
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            continue
        ended.append(pid)
    return ended


@contextmanager
def uninterrupted() -> Iterator[None]:
    """A section no signal cuts: one that arrives meanwhile is raised when the section ends normally (when it
    ends with an exception, that exception goes on and the signal has been noted)."""
    GUARD.depth += 1
    try:
        yield
    finally:
        GUARD.depth -= 1
    if GUARD.depth == 0 and GUARD.pending is not None and not GUARD.raised:
        signum, GUARD.pending, GUARD.raised = GUARD.pending, None, True
        raise Interrupted(signum)
