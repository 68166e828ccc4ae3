"""Safe file I/O, below every other part of the package: bounded reads of files that may be hostile (a
regular file only, opened without following a symbolic link and without blocking, never more than a cap
read), JSON objects read with that bound, and atomic writes.  Every reader of an outside file (a record,
a log, a results folder, a Harbor job, a tasks tree) reads through here (docs/SECURITY.md)."""
from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path
from typing import Any

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


def read_record_text(path: Path, cap: int) -> str:
    """The text of a record file a user hands in (a PGN, an SGF, a Gomocup .psq): a regular file of at most
    `cap` bytes reached through no link, decoded as UTF-8 (a byte-order mark dropped) or, when it is not
    UTF-8, as Latin-1 (old game records are).  Raises ValueError with one line naming the file."""
    name = Path(path).name
    try:
        data, size = read_bounded(path, cap)
    except OSError as exc:
        raise ValueError(f"{name}: cannot be read ({exc.strerror or exc})") from None
    if size > cap:
        raise ValueError(f"{name}: {size} bytes, more than the {cap} such a file may have")
    if b"\x00" in data:
        raise ValueError(f"{name}: holds NUL bytes: not a text record")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("latin-1")


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
