"""Safe file I/O, below every other part of the package: bounded reads of files that may be hostile (a
regular file only, opened without following a symbolic link and without blocking, never more than a cap
read), JSON objects read with that bound, paths checked for a symbolic link on any component below a
root, the numbers such a file holds held to finite values in a range, and atomic writes.  Every reader of
an outside file (a record, a log, a results folder, a Harbor job, a tasks tree) reads through here
(docs/SECURITY.md)."""
from __future__ import annotations

import json
import math
import os
import stat
import threading
from pathlib import Path
from typing import Any, Callable

#: Run records, manifests, Harbor result and config documents are read with this bound (far above any
#: real one): a hostile or broken file costs at most this much memory.
MAX_RECORD_BYTES = 16 * 1024 * 1024


def read_bounded(path: Path, cap: int) -> tuple[bytes, int]:
    """(at most cap + 1 bytes of a regular file, its size).  The size is checked before reading, so a
    2 GB (sparse) file costs cap + 1 bytes of memory, never its size.  Raises OSError (a symlink or a
    folder is refused: O_NOFOLLOW)."""
    return _read_regular(path, lambda size: (0, min(size, cap) + 1))


def read_tail(path: Path, cap: int) -> tuple[bytes, int]:
    """(the last `cap` bytes of a regular file, its size), with read_bounded's refusals (a symlink, a
    folder; a FIFO is refused without blocking)."""
    return _read_regular(path, lambda size: (max(0, size - cap), cap))


def _read_regular(path: Path, span) -> tuple[bytes, int]:
    """(the bytes span(size) = (offset, at most n) names of a regular file opened without following a
    symlink or blocking, its size).  Raises OSError."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{Path(path).name} is not a regular file")
        offset, want = span(st.st_size)
        if offset:
            os.lseek(fd, offset, os.SEEK_SET)
        chunks, got = [], 0
        while got < want:
            b = os.read(fd, min(1 << 20, want - got))
            if not b:
                break
            chunks.append(b)
            got += len(b)
        return b"".join(chunks), st.st_size
    finally:
        os.close(fd)


def read_json_object(path: Path, cap: int = MAX_RECORD_BYTES) -> tuple[dict[str, Any] | None, str]:
    """A JSON object from a file read with a bound; (None, why) when it is not one."""
    try:
        data, size = read_bounded(path, cap)
    except OSError as exc:
        return None, f"unreadable ({exc.strerror or exc})"
    if size > cap:
        return None, f"larger than {cap} bytes ({size})"
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as exc:
        return None, f"not JSON ({str(exc)[:80]})"
    if not isinstance(doc, dict):
        return None, f"not a JSON object (a {type(doc).__name__})"
    return doc, ""


# --------------------------------------------------------------------------------------------------
# paths below a root: no symbolic link on any component
# --------------------------------------------------------------------------------------------------
def _components_below(root: Path, path: Path) -> list[Path] | None:
    """The paths from the first component below `root` down to `path`, or None when `path` is not
    under `root` (or climbs out of it with '..')."""
    try:
        rel = Path(path).relative_to(root)
    except ValueError:
        return None
    if ".." in rel.parts:
        return None
    out, cur = [], Path(root)
    for part in rel.parts:
        cur = cur / part
        out.append(cur)
    return out


def _lstat_below(root: Path, path: Path) -> tuple[Path | None, os.stat_result | None]:
    """(the first component of `path` below `root` that is a symbolic link, None when there is none;
    the lstat of `path` itself, None when it is not there or a link came first).  A path outside `root`
    is its own first link: it is not reached from `root` at all."""
    steps = _components_below(Path(root), Path(path))
    if steps is None:
        return Path(path), None
    st = None
    for cur in steps:
        try:
            st = os.lstat(cur)
        except OSError:
            return None, None   # nothing below a missing component can be a link
        if stat.S_ISLNK(st.st_mode):
            return cur, None
    if st is None:
        try:
            st = os.lstat(root)
        except OSError:
            return None, None
    return None, st


def link_below(root: Path, path: Path) -> Path | None:
    """The first component of `path` below `root` that is a symbolic link (None when there is none;
    components that do not exist end the walk).  A path outside `root` is returned itself."""
    return _lstat_below(root, path)[0]


def _reached(root: Path, path: Path, want: Callable[[int], bool]) -> Path | None:
    link, st = _lstat_below(root, path)
    return Path(path) if link is None and st is not None and want(st.st_mode) else None


def regular_file(root: Path, path: Path) -> Path | None:
    """`path` when it is a regular file under `root` and no component below `root` is a symbolic link
    (a folder someone else wrote is untrusted: `logs -> /proc/self` or a link to a host file is never
    read); else None."""
    return _reached(root, path, stat.S_ISREG)


def real_dir(root: Path, path: Path) -> Path | None:
    """`path` when it is a folder under `root` reached through no symbolic link; else None."""
    return _reached(root, path, stat.S_ISDIR)


def entries(folder: Path) -> tuple[list[Path], list[Path]]:
    """(the real sub-folders of `folder`, its entries that are symbolic links), each in name order;
    hidden entries (a leading '.') are left out.  A link is never followed, not even to see what it
    names."""
    dirs, links = [], []
    for e in sorted(os.scandir(folder), key=lambda e: e.name):
        if e.name.startswith("."):
            continue
        if e.is_symlink():
            links.append(Path(e.path))
        elif e.is_dir(follow_symlinks=False):
            dirs.append(Path(e.path))
    return dirs, links


# --------------------------------------------------------------------------------------------------
# numbers from a file someone else wrote: finite, within range, or not a number at all
# --------------------------------------------------------------------------------------------------
def finite_number(v: Any, lo: float = -math.inf, hi: float = math.inf) -> float | None:
    """A JSON number (never a boolean) as a float when a float holds it, it is finite and lo <= v <= hi;
    else None.  An integer of 401 digits is a valid JSON number no float can hold: None, never an
    OverflowError."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        f = float(v)
    except OverflowError:
        return None
    return f if math.isfinite(f) and lo <= f <= hi else None


def whole_number(v: Any, lo: int, hi: int) -> int | None:
    """A JSON integer (never a boolean) with lo <= v <= hi; else None."""
    if isinstance(v, bool) or not isinstance(v, int):
        return None
    return v if lo <= v <= hi else None


def json_text(obj: Any) -> str:
    """Indented JSON text of a document that may hold lone surrogates (a model's reply cut mid-pair):
    UTF-8 where it can be, \\u escapes (still valid JSON, same value) where it cannot."""
    text = json.dumps(obj, indent=1, ensure_ascii=False) + "\n"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(obj, indent=1, ensure_ascii=True) + "\n"
    return text


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write a file so that a reader sees the old bytes or the new ones, never a part (a temporary
    file in the same folder, then rename; the name is unique per process and thread)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise


def write_json_atomic(path: Path, doc: Any) -> None:
    """A JSON document written atomically and surrogate-safe (`json_text`)."""
    write_bytes_atomic(path, json_text(doc).encode("utf-8"))
