"""Answer states of a Protocol B cell (docs/PROTOCOLS.md, "Answer states").

The sandbox's answer.json starts as a byte-for-byte copy of the game's seed.  After the agent's
process tree is gone, the file is hashed against the seed:

    wrote        the bytes changed: the file is exported as the cell's answer and scored
    never_wrote  still byte-identical to the seed (an agent that rewrote the seed with identical
                 bytes has not answered): the seed is exported, the cell scores 0.0
    deleted      removed or renamed, or replaced by something that is not a regular file (a
                 symlink, a folder, a FIFO): the seed is exported, the cell scores 0.0; `answer_note`
                 in run.json says which
    too_large    a regular file larger than the judge's cap (MAX_ANSWER_BYTES, 16 MiB): at most
                 cap + 1 bytes are read, nothing of it is exported (the seed is), the cell scores 0.0

The digest decides, never the parsed content.  The file is opened with O_NOFOLLOW (a symlinked
answer.json is never followed, so it cannot point the runner at another file) and read bounded.
"""
from __future__ import annotations

import json
import os
import stat
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from video_arena.core.judge_loader import load_judge
from video_arena.core.tasks import ANSWER_ROOT_KEY
from video_arena.digests import sha256_bytes

WROTE, NEVER_WROTE, DELETED, TOO_LARGE = "wrote", "never_wrote", "deleted", "too_large"
ANSWER_STATES = (WROTE, NEVER_WROTE, DELETED, TOO_LARGE)
#: The judge's cap on an answer (judge/judge.py MAX_ANSWER_BYTES); a larger answer scores 0.0.
MAX_ANSWER_BYTES = load_judge().MAX_ANSWER_BYTES


sha256 = sha256_bytes


@dataclass
class Collected:
    state: str
    export: bytes          # what goes to <out>/<game>/<case_id>/answer.json
    answer_sha256: str     # digest of the sandbox's file ("" when there is none)
    note: str | None = None


def _read_regular(path: Path, limit: int) -> tuple[bytes | None, str | None]:
    """At most `limit` + 1 bytes of `path` if it is a regular file (never following a symlink),
    else (None, why)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return None, "answer.json is gone"
    except OSError as exc:  # ELOOP: a symlink
        if os.path.islink(path):
            return None, "answer.json is a symlink (never followed)"
        return None, f"answer.json is not a regular file ({exc.strerror or exc})"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None, "answer.json is not a regular file"
        chunks, n = [], 0
        while n <= limit:
            b = os.read(fd, min(1 << 20, limit + 1 - n))
            if not b:
                break
            chunks.append(b)
            n += len(b)
        return b"".join(chunks), None
    finally:
        os.close(fd)


def collect_answer(answer_path: Path, seed_bytes: bytes, limit: int = MAX_ANSWER_BYTES) -> Collected:
    data, why = _read_regular(answer_path, limit)
    if data is None:
        return Collected(DELETED, seed_bytes, "", note=why)
    if len(data) > limit:
        return Collected(TOO_LARGE, seed_bytes, "",
                         note=f"answer.json is larger than the judge's {limit}-byte cap: not read, scored 0.0")
    digest = sha256(data)
    if digest == sha256(seed_bytes):
        return Collected(NEVER_WROTE, seed_bytes, digest)
    return Collected(WROTE, data, digest)


def count_rows(data: bytes, root_key: str = ANSWER_ROOT_KEY) -> int:
    """Rows in an exported answer: len(doc[root_key]) when it is a list, else 0 (unparsable too)."""
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return 0
    if isinstance(doc, dict) and isinstance(doc.get(root_key), list):
        return len(doc[root_key])
    return 0


class AnswerWatch(threading.Thread):
    """The answer's state while the agent works: every `interval` seconds the sandbox's answer.json is
    looked at (lstat, no symlink followed) and, when it changed, collected as at the end (bounded read,
    state by digest, row count).  `history` holds one entry per change: {"t" (seconds since start),
    "state", "n_rows", "bytes"}, at most `max_entries` (then `history_truncated`).  It reads only the
    sandbox's file, which the agent writes anyway; it never touches the agent's processes."""

    def __init__(self, answer_path: Path, seed_bytes: bytes, interval: float = 2.0, max_entries: int = 500):
        super().__init__(name="answer-watch", daemon=True)
        self.path, self.seed, self.interval, self.max_entries = Path(answer_path), seed_bytes, interval, max_entries
        self.history: list[dict] = []
        self.history_truncated = False
        self._t0 = time.monotonic()
        self._last: tuple | None = None
        self._halt = threading.Event()

    def sample(self) -> None:
        try:
            st = os.lstat(self.path)
            key: tuple | None = (st.st_ino, st.st_size, st.st_mtime_ns, stat.S_IFMT(st.st_mode))
        except OSError:
            st, key = None, None
        if key == self._last and self.history:
            return
        self._last = key
        c = collect_answer(self.path, self.seed)
        entry = {"t": round(time.monotonic() - self._t0, 1), "state": c.state,
                 "n_rows": count_rows(c.export) if c.state == WROTE else 0,
                 "bytes": st.st_size if st is not None else None}
        if self.history and {k: v for k, v in self.history[-1].items() if k != "t"} == \
                {k: v for k, v in entry.items() if k != "t"}:
            return
        if len(self.history) >= self.max_entries:
            self.history_truncated = True
            return
        self.history.append(entry)

    def run(self) -> None:
        self.sample()
        while not self._halt.wait(self.interval):
            self.sample()

    def stop(self) -> list[dict]:
        self._halt.set()
        self.join(timeout=30)
        self.sample()  # the state the agent left, as the collection will find it
        return self.history
