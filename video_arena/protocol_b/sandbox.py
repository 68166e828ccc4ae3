"""The Protocol B sandbox (docs/PROTOCOLS.md, "The sandbox: exactly three files").

Layout of one cell's sandbox, created fresh for every run of every cell:

    <sandbox root>/va-b-XXXXXXXX/          the cell's container: random name, mode 0700
        prompt.txt                         the turn-1 prompt: beside the sandbox, not in it
        <12 random hex digits>/            THE sandbox: the agent's working directory
            match.mp4                      the case's media, copied (or hard-linked), renamed
            instruction.md                 instruction_for("agentic", ...), UTF-8
            answer.json                    the game's answer_seed.json, byte for byte

The sandbox root is the system temp dir unless --sandbox-root says otherwise, and it must lie
outside the repository, the tasks tree and the media root: a sandbox inside the repository had
`tasks/<game>/gt/` one relative path away.  No path component carries the case id or the game.

The agent's environment is scrubbed of anything that points back at those trees (the tasks/media
root variables, a virtualenv or PATH entry inside the repository, the runner's PWD/OLDPWD), so the
sandbox is the only place the agent is pointed at.  The jail is isolation.py: the agent's own mount
namespace holds the sandbox, the system directories and the allowed paths, nothing else of the host.
"""
from __future__ import annotations

import ctypes
import os
import secrets
import shutil
import stat
import struct
import tempfile
from dataclasses import dataclass
from pathlib import Path

from video_arena import paths
from video_arena.safe_tree import TreeRemoval, remove_tree, restore_owner_access
from video_arena.core.prompts import SANDBOX_FILES
from video_arena.core.results import PROMPT_FILE
from video_arena.core.instruction import text_digest

CONTAINER_PREFIX = "va-b-"
#: seconds a sandbox's clean-up may take before what is left is recorded as left (a tree something keeps
#: filling; a million files on a slow disk take a few minutes)
CLEANUP_BUDGET_S = 900.0
#: The files whose opening (inotify) or access time (relatime, the Linux default, records the first read
#: after a write) says the agent read them: the runner itself never opens them once the sandbox is made.
READ_EVIDENCE = ("match.mp4", "instruction.md")
#: inotify's event bits: a file opened, the kernel's queue overflowed
_IN_OPEN, _IN_Q_OVERFLOW = 0x20, 0x4000
CELL_MARKER_ENV = "VIDEO_ARENA_B_CELL"
#: Variables never passed to the agent: they name the tasks tree (ground truth) or the media root.
SCRUBBED_VARS = (paths.TASKS_ROOT_ENV, paths.MEDIA_ROOT_ENV, "PWD", "OLDPWD")
#: Variables holding ':'-separated path lists: entries under a forbidden root are dropped, the rest kept.
PATH_LIST_VARS = ("PATH", "PYTHONPATH", "LD_LIBRARY_PATH", "MANPATH")


class SandboxError(RuntimeError):
    """The sandbox cannot be created where asked (e.g. a sandbox root inside the repository)."""


def _is_within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def forbidden_roots(tasks_root: Path, media_root: Path | None = None) -> list[Path]:
    """The trees a sandbox may not live in, and the agent's environment may not point into."""
    roots = [paths.REPO_ROOT.resolve(), Path(tasks_root).resolve()]
    if media_root is not None:
        roots.append(Path(media_root).resolve())
    out: list[Path] = []
    for r in roots:
        if r not in out:
            out.append(r)
    return out


def check_sandbox_root(root: str | os.PathLike | None, forbidden: list[Path]) -> Path:
    """The resolved sandbox root (default: the system temp dir); SandboxError when it is unusable."""
    base = Path(os.path.realpath(Path(root).expanduser() if root else Path(tempfile.gettempdir())))
    for f in forbidden:  # checked before anything is created
        if _is_within(base, f):
            raise SandboxError(
                f"sandbox root {base} is inside {f}: a sandbox there would have the repository or the "
                "tasks tree (ground truth) a relative path away. Use a folder outside it "
                "(the default is the system temp dir; set TMPDIR or --sandbox-root)")
    try:
        base.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SandboxError(f"sandbox root {base} cannot be created: {exc}") from exc
    if not base.is_dir():
        raise SandboxError(f"sandbox root {base} is not a directory")
    return base


def ancestor_warnings(base: Path, forbidden: list[Path]) -> list[str]:
    """Warnings for a sandbox root from which a forbidden tree is a short relative path away.

    A sandbox is <base>/va-b-X/<name>; when `base` and a forbidden tree share an ancestor (other
    than the filesystem root) at most two levels above `base`, and the tree lies at most three
    levels below that ancestor, an agent listing `../../..` finds it.
    """
    out = []
    for f in forbidden:
        anc = Path(os.path.commonpath([base, f]))
        if anc == Path(anc.anchor):
            continue
        up, down = len(base.relative_to(anc).parts), len(f.relative_to(anc).parts)
        if up <= 2 and down <= 3:
            rel = os.path.join(*([".."] * (up + 2)), *f.relative_to(anc).parts)
            out.append(f"{f} is reachable from every sandbox as {rel}; prefer a sandbox root "
                       "that shares no nearby folder with the repository or the tasks tree")
    return out


@dataclass
class Sandbox:
    container: Path      # va-b-XXXXXXXX, holds prompt.txt and the sandbox
    path: Path           # the agent's working directory
    prompt_path: Path    # container/prompt.txt
    marker: str          # value of $VIDEO_ARENA_B_CELL in the agent's environment
    instruction_sha256: str
    prompt_sha256: str
    seed_bytes: bytes

    @property
    def answer_path(self) -> Path:
        return self.path / "answer.json"

    def remove(self, time_budget_s: float = CLEANUP_BUDGET_S) -> TreeRemoval:
        """Remove the container and whatever the agent left in it (safe_tree.remove_tree: never recursive,
        never through a link, nothing outside it touched); never raises: what is left is in the result."""
        return remove_tree(self.container, time_budget_s)

    def restore_access(self) -> list[str]:
        """Once the agent is gone: the runner's access to the sandbox folder and answer.json back (an agent
        may leave them mode 000; safe_tree.restore_owner_access: never through a link, the answer's mode
        only when it has a single link).  What was changed."""
        return restore_owner_access(self.answer_path)

    def state(self) -> dict[str, tuple | None]:
        """What `touched` compares: lstat of the sandbox folder and of its three files (no link followed,
        nothing listed or read: four system calls whatever the agent left)."""
        out: dict[str, tuple | None] = {}
        for name in ("", *SANDBOX_FILES):
            try:
                st = os.lstat(self.path / name if name else self.path)
            except OSError:
                out[name] = None
                continue
            out[name] = ((st.st_ino, st.st_mode, st.st_nlink, st.st_mtime_ns, st.st_ctime_ns,
                          None if stat.S_ISDIR(st.st_mode) else st.st_size),
                         st.st_atime_ns if name in READ_EVIDENCE else None)
        return out


def create_sandbox(base: Path, *, media: Path, instruction_text: str, seed_bytes: bytes,
                   prompt_for, marker: str, hardlink_media: bool = False) -> Sandbox:
    """Create a fresh sandbox under `base` (already checked with check_sandbox_root).

    `prompt_for(sandbox_path) -> str` builds the prompt (it names the working directory).
    """
    if not Path(media).is_file():
        raise SandboxError(f"the case's media {media} does not exist (build the cases, or point "
                           f"--media-root / ${paths.MEDIA_ROOT_ENV} at them)")
    container = Path(tempfile.mkdtemp(prefix=CONTAINER_PREFIX, dir=base))
    try:
        sandbox = container / secrets.token_hex(6)
        sandbox.mkdir(mode=0o755)
        target = sandbox / "match.mp4"
        linked = False
        if hardlink_media:
            try:
                os.link(media, target)
                linked = True
            except OSError:
                linked = False
        if not linked:
            shutil.copyfile(media, target)
            os.chmod(target, 0o644)
        instruction_bytes = instruction_text.encode("utf-8")
        (sandbox / "instruction.md").write_bytes(instruction_bytes)
        (sandbox / "answer.json").write_bytes(seed_bytes)
        present = sorted(p.name for p in sandbox.iterdir())
        if present != sorted(SANDBOX_FILES):  # pragma: no cover - a bug here must be loud
            raise SandboxError(f"sandbox holds {present}, expected exactly {sorted(SANDBOX_FILES)}")
        prompt = prompt_for(str(sandbox))
        prompt_path = container / PROMPT_FILE
        prompt_path.write_text(prompt, encoding="utf-8")
        return Sandbox(container=container, path=sandbox, prompt_path=prompt_path, marker=marker,
                       instruction_sha256=text_digest(instruction_text),
                       prompt_sha256=text_digest(prompt), seed_bytes=seed_bytes)
    except BaseException:
        remove_tree(container)
        raise


def agent_environment(base_env: dict[str, str], forbidden: list[Path], sandbox: Path,
                      marker: str) -> tuple[dict[str, str], list[str]]:
    """The agent's environment and the names of the variables that were removed or filtered.

    Drops the tasks/media root variables, PWD/OLDPWD (the runner's own directories), any variable
    whose value names a forbidden tree, and path-list entries (PATH, PYTHONPATH, ...) inside one;
    sets PWD to the sandbox and the cell marker used to find the agent's processes.
    """
    env: dict[str, str] = {}
    changed: list[str] = []
    roots = [str(f) for f in forbidden]

    def inside(value: str) -> bool:
        return any(value == r or value.startswith(r + os.sep) for r in roots)

    for key, value in base_env.items():
        if key in SCRUBBED_VARS or key == CELL_MARKER_ENV:
            changed.append(key)
            continue
        if key in PATH_LIST_VARS:
            parts = value.split(os.pathsep)
            kept = [p for p in parts if not (p and (inside(p) or inside(os.path.realpath(p))))]
            if kept != parts:
                changed.append(key)
            if kept:
                env[key] = os.pathsep.join(kept)
            continue
        if any(r in value for r in roots):
            changed.append(key)
            continue
        env[key] = value
    env["PWD"] = str(sandbox)
    env[CELL_MARKER_ENV] = marker
    return env, sorted(set(changed) - {"PWD", "OLDPWD"})  # those two are always replaced


def touched(before: dict[str, tuple | None], after: dict[str, tuple | None]) -> list[str]:
    """What the agent did to its sandbox between two `Sandbox.state()`s, as evidence it ran: an entry
    created, removed or renamed in the sandbox folder or its mode changed ("sandbox folder changed"), one
    of the three files written, replaced, removed, linked or its mode changed ("answer.json changed"), or
    match.mp4 / instruction.md read ("instruction.md read": where the filesystem records access times;
    OpenWatch sees the opens in any case).  The sandbox folder's own access time is not evidence: an
    interpreter lists its working directory while it looks for a module, before any of the agent's code
    runs."""
    out = []
    for name, was in before.items():
        now = after.get(name)
        label = name or "sandbox folder"
        if was is None or now is None or was[0] != now[0]:
            out.append(f"{label} changed")
        elif was[1] != now[1]:
            out.append(f"{label} read")
    return out


class OpenWatch:
    """Which of READ_EVIDENCE the agent opened while it worked: Linux inotify on the sandbox folder, which
    sees the agent's opens through its bind mount whatever the filesystem records of access times (a
    folder mounted noatime records none).  An open of the folder itself (an interpreter listing its
    working directory) names no file and is not counted.  Where inotify cannot be had (its per-user
    limit), `opened()` is None and the access times alone tell."""

    def __init__(self, folder: Path):
        self.fd = -1
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
            if fd >= 0 and libc.inotify_add_watch(fd, os.fsencode(folder), _IN_OPEN) >= 0:
                self.fd = fd
            elif fd >= 0:
                os.close(fd)
        except (OSError, AttributeError):
            pass

    def opened(self, limit: int = 1 << 20) -> list[str] | None:
        """The files of READ_EVIDENCE opened since the watch began (at most `limit` bytes of events read;
        an overflowed queue counts as an open: the agent opened thousands of files there); closes the
        watch."""
        if self.fd < 0:
            return None
        names = {n.encode(): n for n in READ_EVIDENCE}
        seen: list[str] = []
        got = 0
        try:
            while got < limit:
                try:
                    data = os.read(self.fd, 1 << 16)
                except BlockingIOError:
                    break
                got += len(data)
                i = 0
                while 0 < len(data) - i >= 16:
                    _, mask, _, size = struct.unpack_from("iIII", data, i)
                    name = names.get(data[i + 16:i + 16 + size].rstrip(b"\0"))
                    i += 16 + size
                    what = "more files than inotify could queue" if mask & _IN_Q_OVERFLOW else name
                    if what and what not in seen:
                        seen.append(what)
                if not data:
                    break
        except OSError:
            pass
        finally:
            os.close(self.fd)
            self.fd = -1
        return seen
