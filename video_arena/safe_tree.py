"""Safe operations on a folder tree someone hostile built (a Protocol B agent's sandbox), below every
other part of the package beside safe_io.py (which reads such files): its removal (`remove_tree`: never
recursive, never through a link, never outside the tree, bounded, never raising) and its owner's access
given back to a file it locked (`restore_owner_access`).  docs/SECURITY.md lists what they promise."""
from __future__ import annotations

import errno
import fcntl
import os
import re
import stat
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from video_arena.safe_io import read_bounded

#: Linux `chattr +i` / `+a` (FS_IMMUTABLE_FL | FS_APPEND_FL) and the ioctls that read and set them
_FS_IOC_GETFLAGS, _FS_IOC_SETFLAGS, _FS_NO_UNLINK_FL = 0x80086601, 0x40086602, 0x10 | 0x20
#: folders are opened without following a link, and where this process may without writing their access
#: time on each read (O_NOATIME)
_DIR_OPEN = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NOATIME = getattr(os, "O_NOATIME", 0)
_PATH_OPEN = os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC
#: how many problems a TreeRemoval names (it counts them all), and how many entries it may leave before
#: it stops trying (every one is skipped on every later scan of its folder)
MAX_PROBLEMS_NAMED, MAX_ENTRIES_LEFT = 10, 100_000
#: whole passes over the tree (a pass starts again when a folder moved under it or the top is not empty)
MAX_PASSES = 3


def _open_folder(name: str, dir_fd: int) -> int:
    """The folder `name` of `dir_fd`, never through a link; its access time left alone where this
    process may (it owns the folder, or CAP_FOWNER)."""
    try:
        return os.open(name, _DIR_OPEN | _NOATIME, dir_fd=dir_fd)
    except PermissionError as exc:
        if exc.errno != errno.EPERM or not _NOATIME:
            raise
        return os.open(name, _DIR_OPEN, dir_fd=dir_fd)


def _add_mode(fd: int, bits: int, allowed=lambda st: True) -> bool:
    """Add mode bits to what `fd` is open on (an O_PATH descriptor too: then through /proc/self/fd, which
    names that very inode, never a path that could have changed); True when they are there now.  Nothing
    is changed when `allowed(stat)` is false."""
    try:
        st = os.fstat(fd)
        if not allowed(st):
            return False
        mode = stat.S_IMODE(st.st_mode)
        if mode & bits != bits:
            try:
                os.fchmod(fd, mode | bits)
            except OSError as exc:
                if exc.errno != errno.EBADF:
                    raise
                os.chmod(f"/proc/self/fd/{fd}", mode | bits)
        return True
    except OSError:
        return False


def restore_owner_access(path: Path) -> list[str]:
    """Undo what a hostile process did to keep its owner from reading a file it left: u+rwx on the file's
    folder and u+r on the file, each reached without following a link.  The file's mode is changed only
    when it is a regular file with a single link (a mode belongs to the inode, shared by every hard link
    to it, and another link may lie outside).  Returns what was changed ("folder", "file")."""
    path = Path(path)
    changed: list[str] = []
    try:
        folder = os.open(path.parent, _PATH_OPEN | os.O_DIRECTORY)
    except OSError:
        return changed
    try:
        if stat.S_IMODE(os.fstat(folder).st_mode) & 0o700 != 0o700 and _add_mode(folder, 0o700):
            changed.append("folder")
        try:
            fd = os.open(path.name, _PATH_OPEN, dir_fd=folder)
        except OSError:
            return changed
        try:
            st = os.fstat(fd)
            if not st.st_mode & 0o400 and _add_mode(fd, 0o400, lambda s: stat.S_ISREG(s.st_mode) and s.st_nlink == 1):
                changed.append("file")
        finally:
            os.close(fd)
    except OSError:
        pass
    finally:
        os.close(folder)
    return changed


@dataclass
class TreeRemoval:
    """What `remove_tree` did: `removed` (nothing of the tree is left), the entries it removed, and the
    problems (`failures` counted, at most MAX_PROBLEMS_NAMED named: "path: why")."""
    removed: bool
    entries: int = 0
    failures: int = 0
    problems: list[str] = field(default_factory=list)

    def note(self) -> str:
        """One line: what was left and why ('' when removed)."""
        if self.removed:
            return ""
        more = f" (and {self.failures - len(self.problems)} more)" if self.failures > len(self.problems) else ""
        return "; ".join(self.problems) + more


class _GiveUp(Exception):
    """The removal stops here: its budget is spent (the reason is the message)."""


class _TreeRemover:
    """One removal (see remove_tree).  Holds one folder open at a time (`cur`), and a stack of the
    (name, device, inode) of the folders from the top down to it: it descends by opening a child relative
    to `cur` without following a link, and climbs by opening `..`, checked against the stack (a folder
    moved meanwhile starts the pass again from the top)."""

    def __init__(self, path: Path, time_budget_s: float):
        self.path = Path(path)
        self.deadline = time.monotonic() + time_budget_s
        self.result = TreeRemoval(removed=False)
        self.left: set[int] = set()          # inodes of entries that could not be removed: skipped
        self.mounts = self._mounts_under(os.path.realpath(self.path))   # (device, inode) of each
        self.dev = -1
        self.base_id: tuple[int, int] = (-1, -1)   # the folder holding the tree: never changed
        self.ops = 0

    @staticmethod
    def _mounts_under(top: str) -> set[tuple[int, int]]:
        """What is mounted at or below `top` in this process's mount table (its root's device and inode):
        a bind mount of another folder of the same filesystem has the same device number.  (rmdir refuses
        a mount point, EBUSY, before anything is entered; this is the second check.)"""
        try:
            data, _ = read_bounded(Path("/proc/self/mountinfo"), 8 << 20)
        except OSError:
            return set()
        out = set()
        for line in data.decode("utf-8", "replace").splitlines():
            parts = line.split(" ")
            if len(parts) > 4:
                point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), parts[4])
                if point == top or point.startswith(top.rstrip("/") + "/"):
                    try:
                        st = os.lstat(point)
                        out.add((st.st_dev, st.st_ino))
                    except OSError:
                        pass
        return out

    # -- bookkeeping ------------------------------------------------------------------------------
    def tick(self) -> None:
        self.ops += 1
        if self.ops % 256 == 0 and time.monotonic() > self.deadline:
            raise _GiveUp(f"the time budget ran out after {self.ops} operations (is something still filling it?)")

    def fail(self, stack: list, name: str, why: str, ino: int | None = None) -> None:
        """Count what could not go (`name` in the folder `stack` ends with) and name the first few."""
        self.result.failures += 1
        if len(self.result.problems) < MAX_PROBLEMS_NAMED:
            self.result.problems.append(f"{self.where(stack, name)}: {why}")
        if ino is not None:
            self.left.add(ino)
        if len(self.left) > MAX_ENTRIES_LEFT:
            raise _GiveUp(f"more than {MAX_ENTRIES_LEFT} entries could not be removed")

    @staticmethod
    def where(stack: list, name: str = "") -> str:
        """The entry's path below the top (its last three parts and its depth when deeper)."""
        names = [s[0] for s in stack[max(1, len(stack) - 3):]] + ([name] if name else [])
        depth = max(0, len(stack) - 1) + bool(name)
        shown = "/".join(names[-3:])
        return f".../{shown} (depth {depth})" if depth > 3 else (shown or ".")

    # -- permissions and flags -------------------------------------------------------------------------
    def inside(self, st: os.stat_result) -> bool:
        """Whether an entry is of the tree: on its filesystem, and not the folder holding it."""
        return st.st_dev == self.dev and (st.st_dev, st.st_ino) != self.base_id

    def grant(self, dir_fd: int) -> bool:
        """Give the owner rwx on an open folder of the tree (a folder of mode 000, or without x or w);
        False when it cannot be (not ours, or not of the tree)."""
        return _add_mode(dir_fd, 0o700, self.inside)

    def grant_child(self, parent: int, name: str) -> bool:
        """rwx for the owner on the folder `name` of `parent` that cannot be opened for reading: reached
        as an O_PATH descriptor (never through a link), so the mode that changes is that very folder's."""
        try:
            fd = os.open(name, _PATH_OPEN | os.O_DIRECTORY, dir_fd=parent)
        except OSError:
            return False
        try:
            return _add_mode(fd, 0o700, self.inside)
        finally:
            os.close(fd)

    def clear_flags(self, parent: int, name: str) -> bool:
        """Clear chattr +i/+a on the entry `name` and on its folder (only with CAP_LINUX_IMMUTABLE; the
        entry is opened only when it is a regular file or a folder of this filesystem)."""
        changed = self._clear_fd_flags(parent)
        try:
            fd = os.open(name, _PATH_OPEN, dir_fd=parent)
        except OSError:
            return changed
        try:
            st = os.fstat(fd)
            if self.inside(st) and (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
                real = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
                try:
                    changed = self._clear_fd_flags(real) or changed
                finally:
                    os.close(real)
        except OSError:
            pass
        finally:
            os.close(fd)
        return changed

    def _clear_fd_flags(self, fd: int) -> bool:
        try:
            if not self.inside(os.fstat(fd)):
                return False
            buf = bytearray(8)
            fcntl.ioctl(fd, _FS_IOC_GETFLAGS, buf)
            flags = int.from_bytes(buf[:4], sys.byteorder)
            if not flags & _FS_NO_UNLINK_FL:
                return False
            fcntl.ioctl(fd, _FS_IOC_SETFLAGS, (flags & ~_FS_NO_UNLINK_FL).to_bytes(4, sys.byteorder) + bytes(4))
            return True
        except OSError:
            return False

    # -- the entries -----------------------------------------------------------------------------------
    def remove(self, parent: int, name: str, stack: list, ino: int | None = None, folder: bool = False) -> str:
        """'gone', 'enter' (a folder with something in it) or 'left' (recorded): the entry `name` of
        `parent` unlinked, or rmdir'ed when it is a folder (`folder`: what its folder entry says it is,
        tried first); never followed, whatever it is."""
        granted = cleared = False
        while True:
            self.tick()
            try:
                try:
                    os.rmdir(name, dir_fd=parent) if folder else os.unlink(name, dir_fd=parent)
                except IsADirectoryError:
                    os.rmdir(name, dir_fd=parent)
                except NotADirectoryError:
                    os.unlink(name, dir_fd=parent)
                self.result.entries += 1
                return "gone"
            except FileNotFoundError:
                return "gone"
            except OSError as exc:
                if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                    return "enter"
                if exc.errno == errno.EACCES and not granted:
                    granted = self.grant(parent)
                    if granted:
                        continue
                if exc.errno == errno.EPERM and not cleared:
                    cleared = self.clear_flags(parent, name)
                    if cleared:
                        continue
                why = "a mount point (not removed)" if exc.errno == errno.EBUSY else (exc.strerror or str(exc))
                self.fail(stack, name, why, ino)
                return "left"

    def open_child(self, cur: int, name: str, stack: list, ino: int | None) -> int | None:
        """The folder `name` of `cur` opened without following a link, on this filesystem and not a mount
        point; None when it is not one (then it has been removed as what it is, or recorded as left)."""
        for attempt in range(2):
            try:
                fd = _open_folder(name, cur)
                break
            except PermissionError as exc:
                self.grant(cur)   # no x on cur, or (below) no r on the folder itself
                if attempt or not self.grant_child(cur, name):
                    self.fail(stack, name, exc.strerror or str(exc), ino)
                    return None
            except FileNotFoundError:
                return None
            except OSError as exc:  # ELOOP, ENOTDIR: replaced by something that is not a folder
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    self.remove(cur, name, stack, ino)
                else:
                    self.fail(stack, name, exc.strerror or str(exc), ino)
                return None
        st = os.fstat(fd)
        if st.st_dev != self.dev or (st.st_dev, st.st_ino) in self.mounts:
            os.close(fd)
            self.fail(stack, name, "a mount point (not entered)", ino)
            return None
        return fd

    def next_folder(self, cur: int, stack: list) -> tuple[str, int] | None:
        """Remove everything of `cur` that can go at once; the first folder with something in it (its
        name and inode), or None when nothing is left in `cur` but what could not be removed."""
        os.lseek(cur, 0, os.SEEK_SET)
        with os.scandir(cur) as entries:
            for entry in entries:
                self.tick()
                ino = entry.inode()
                if ino in self.left:
                    continue
                try:
                    folder = entry.is_dir(follow_symlinks=False)
                except OSError:
                    folder = False
                if self.remove(cur, entry.name, stack, ino, folder) == "enter":
                    return entry.name, ino
        return None

    # -- the walk --------------------------------------------------------------------------------------
    def run(self) -> TreeRemoval:
        parent, name = self.path.parent, self.path.name
        try:
            base = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except FileNotFoundError:
            self.result.removed = True
            return self.result
        try:
            try:
                bst = os.fstat(base)
                self.dev, self.base_id = bst.st_dev, (bst.st_dev, bst.st_ino)
                for _ in range(MAX_PASSES):
                    if self.one_pass(base, name):
                        break
            except _GiveUp as stop:
                self.fail([], "", f"stopped: {stop}")
            except Exception as exc:  # noqa: BLE001 - a clean-up reports, it never raises
                self.fail([], "", f"clean-up error {exc!r}")
            try:
                os.lstat(name, dir_fd=base)
                self.result.removed = False
            except FileNotFoundError:
                self.result.removed = True
            except OSError:
                self.result.removed = False
        finally:
            os.close(base)
        if not self.result.removed and not self.result.problems:
            self.fail([], "", "still there after every pass")
        return self.result

    def one_pass(self, base: int, name: str) -> bool:
        """One walk from the top; True when it is over (the tree gone, or what is left recorded)."""
        if self.remove(base, name, [], folder=True) != "enter":
            return True
        cur = self.open_child(base, name, [], None)
        if cur is None:
            return True
        st = os.fstat(cur)
        stack: list[tuple[str, int, int]] = [(name, st.st_dev, st.st_ino)]   # the folders from the top down
        try:
            while True:
                found = self.next_folder(cur, stack)
                if found is not None:
                    child = self.open_child(cur, found[0], stack, found[1])
                    if child is not None:
                        cst = os.fstat(child)
                        stack.append((found[0], cst.st_dev, cst.st_ino))
                        os.close(cur)
                        cur = child
                    continue
                if len(stack) == 1:
                    os.close(cur)
                    cur = -1
                    return self.remove(base, name, [], folder=True) != "enter" or bool(self.left)
                # Nothing more can go from `cur`: climb, removing it, then each folder above while that
                # leaves it empty (a folder 100,000 deep is scanned once, on the way down).
                scanned = True
                while len(stack) > 1:
                    up = self.open_parent(cur)
                    ust = os.fstat(up)
                    if (ust.st_dev, ust.st_ino) != stack[-2][1:]:
                        os.close(up)  # moved under us: start again from the top
                        return False
                    os.close(cur)
                    cur = up
                    child_name, _, child_ino = stack.pop()
                    if self.remove(cur, child_name, stack, child_ino, folder=True) == "enter":
                        if scanned:
                            self.left.add(child_ino)  # scanned, and what is in it could not go: it stays
                        break                         # else: `cur` is scanned, and finds it again
                    scanned = False
        finally:
            if cur >= 0:
                os.close(cur)

    def open_parent(self, cur: int) -> int:
        try:
            return _open_folder("..", cur)
        except PermissionError:
            self.grant(cur)
            return _open_folder("..", cur)


def remove_tree(path: str | os.PathLike, time_budget_s: float = 600.0) -> TreeRemoval:
    """Remove a folder tree that someone hostile may have built, and report what could not go.

    Never recursive (a tree 100,000 folders deep is a loop, not a stack of calls) and never following a
    link: every folder is opened relative to its parent with O_NOFOLLOW | O_DIRECTORY, every other entry
    (a symbolic link anywhere, a FIFO, a socket, a hard link to a file elsewhere) is unlinked, not
    opened.  Only folders of the tree's own filesystem are entered (not another filesystem, not a mount
    point of this process's mount table).  A folder the owner cannot read, search or write (mode 000, no
    x, no w) is given u+rwx first, and only a folder's mode is ever changed, never a file's (a file's
    mode is shared by all its hard links).  An immutable or append-only flag is cleared where the
    process may (CAP_LINUX_IMMUTABLE).  Bounded: at most MAX_PASSES walks within `time_budget_s`
    seconds (a tree something keeps filling is left, and said so), at most MAX_ENTRIES_LEFT entries
    left.  Never raises: what is left and why is in the result."""
    return _TreeRemover(Path(path), time_budget_s).run()
