"""Safe file I/O, below every other part of the package: bounded reads of files that may be hostile (a
regular file only, opened without following a symbolic link and without blocking, never more than a cap
read), JSON parsed with bounds on its nesting and its numbers, paths checked for a symbolic link on any
component below a root, the numbers such a file holds held to finite values in a range, and atomic writes.
Every reader of an outside file (a record, a log, a results folder, a Harbor job, a tasks tree) reads
through here (docs/SECURITY.md).  A parser that cannot be trusted with a hostile file (one that may
allocate or loop on a crafted input) runs in a child process with bounds on its time, memory and output
(`run_limited`)."""
from __future__ import annotations

import errno
import json
import math
import os
import signal
import stat
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable

#: Run records, manifests, Harbor result and config documents are read with this bound (far above any
#: real one): a hostile or broken file costs at most this much memory.
MAX_RECORD_BYTES = 16 * 1024 * 1024
#: JSON from outside is nested at most this deep (a match parse: 7 levels) ...
MAX_JSON_DEPTH = 64
#: ... and its integers have at most this many digits (the largest 64-bit id has 20).
MAX_JSON_INT_DIGITS = 20


def read_bounded(path: Path, cap: int) -> tuple[bytes, int]:
    """(at most cap + 1 bytes of a regular file, its size).  The size is checked before reading, so a
    2 GB (sparse) file costs cap + 1 bytes of memory, never its size.  Raises OSError (a symlink or a
    folder is refused: O_NOFOLLOW)."""
    return _read_regular(path, lambda size: (0, min(size, cap) + 1))


class FileRefused(ValueError):
    """A file `read_capped` refuses (not a regular file, unreadable, over its cap): one line naming it."""


def read_capped(path: Path, cap: int, what: str = "such a file") -> bytes:
    """The bytes of a regular file of at most `cap` bytes (read_bounded's refusals: a link, a folder, a FIFO
    or a device is refused), else FileRefused with one line naming the file and what is wrong."""
    try:
        data, size = read_bounded(path, cap)
    except OSError as exc:
        raise FileRefused(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if size > cap:
        raise FileRefused(f"{path}: {size} bytes, more than the {cap} {what} may have")
    return data


def read_tail(path: Path, cap: int) -> tuple[bytes, int]:
    """(the last `cap` bytes of a regular file, its size), with read_bounded's refusals (a symlink, a
    folder; a FIFO is refused without blocking)."""
    return _read_regular(path, lambda size: (max(0, size - cap), cap))


def open_regular(path: Path) -> tuple[int, os.stat_result]:
    """(a read-only descriptor, its stat) of a regular file, opened without following a symbolic link (as
    its last component) and without blocking (a FIFO opens without a writer, then fails the check).
    Raises OSError: a symlink, a folder, a FIFO, a device."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{Path(path).name} is not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def _read_regular(path: Path, span) -> tuple[bytes, int]:
    """(the bytes span(size) = (offset, at most n) names of a regular file opened without following a
    symlink or blocking, its size).  Raises OSError."""
    fd, st = open_regular(path)
    try:
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


class JSONLimitError(ValueError):
    """JSON that is not JSON or is beyond a bound (nesting, an integer's digits, a number that is no
    finite float): one line saying what and where."""


def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def loads_bounded(data: bytes | str, max_depth: int = MAX_JSON_DEPTH,
                  max_int_digits: int = MAX_JSON_INT_DIGITS) -> Any:
    """JSON text (its size already bounded by the read) parsed with bounds: nested at most `max_depth`
    deep, every integer of at most `max_int_digits` digits, every number a finite float (json reads
    `1e400` as inf; NaN and Infinity are refused).  Python's own limits would end elsewhere in a
    traceback: nesting past about 1000 is a RecursionError, an integer past 4300 digits a ValueError, and
    a 400-digit one loads but overflows the first float() it meets.  Raises JSONLimitError."""
    try:
        doc = json.loads(data, parse_constant=_no_constant)
    except RecursionError:
        raise JSONLimitError(f"nested deeper than {max_depth} levels") from None
    except ValueError as exc:   # JSONDecodeError, a bad encoding, an integer past Python's 4300 digits
        raise JSONLimitError(f"not valid JSON ({(str(exc).splitlines() or [type(exc).__name__])[0][:120]})") from None
    limit = 10 ** max_int_digits
    stack: list[tuple[Any, int, tuple]] = [(doc, 1, ())]
    while stack:
        value, depth, where = stack.pop()
        if isinstance(value, (dict, list)):
            if depth > max_depth:
                raise JSONLimitError(f"nested deeper than {max_depth} levels (at {_json_path(where)})")
            items = value.items() if isinstance(value, dict) else enumerate(value)
            stack.extend((v, depth + 1, (k, where)) for k, v in items)
        elif isinstance(value, int) and not isinstance(value, bool):
            if not -limit < value < limit:
                raise JSONLimitError(f"an integer of {len(str(abs(value)))} digits at {_json_path(where)} "
                                     f"(at most {max_int_digits})")
        elif isinstance(value, float) and not math.isfinite(value):
            raise JSONLimitError(f"a number too large for a float at {_json_path(where)}")
    return doc


def shown(value: Any, width: int = 40) -> str:
    """A value from outside as a one-line refusal shows it: its repr, cut to `width` characters with the
    length said (a 400-digit number or a megabyte string is not printed whole)."""
    text = repr(value)
    return text if len(text) <= width else f"{text[:width // 2]}... ({len(text)} characters)"


def _json_path(where: tuple) -> str:
    """`objectives[3].time` from the linked (key, parent) tuples of loads_bounded's walk."""
    keys = []
    while where:
        key, where = where
        keys.append(f"[{key}]" if isinstance(key, int) else f".{key}")
    return "".join(reversed(keys)).lstrip(".") or "the top"


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


def read_record_text(path: Path, cap: int) -> str:
    """The text of a record file a user hands in (a PGN, an SGF, a Gomocup .psq): `read_capped`'s bytes,
    decoded as UTF-8 (a byte-order mark dropped) or, when it is not UTF-8, as Latin-1 (old game records
    are).  Raises FileRefused (a ValueError) with one line naming the file."""
    data = read_capped(path, cap)
    if b"\x00" in data:
        raise FileRefused(f"{path}: holds NUL bytes: not a text record")
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


def remove_files(folder: Path, names: tuple[str, ...]) -> None:
    """Remove the named files of a folder where they exist (never a folder, never through a link: a link
    itself is removed)."""
    for name in names:
        try:
            (Path(folder) / name).unlink()
        except FileNotFoundError:
            pass


def write_json_atomic(path: Path, doc: Any) -> None:
    """A JSON document written atomically and surrogate-safe (`json_text`)."""
    write_bytes_atomic(path, json_text(doc).encode("utf-8"))


class LimitExceeded(RuntimeError):
    """A bounded child (`run_limited`) went past one of its limits or died: one line saying which."""


#: The child's bootstrap: its limits are set before the module that reads the hostile bytes is imported.
_CHILD = """
import importlib, resource, sys
cpu, memory, output = (int(v) for v in sys.argv[3:6])
resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
resource.setrlimit(resource.RLIMIT_FSIZE, (output, output))
function = getattr(importlib.import_module(sys.argv[1]), sys.argv[2])
sys.stdout.buffer.write(function(sys.stdin.buffer.read()))
sys.stdout.buffer.flush()
"""


def out_of_memory(exc: BaseException) -> bool:
    """Whether `exc` is how a child under its address-space cap ran out of memory: a MemoryError, an OSError
    ENOMEM, or a shared library the loader could not map (an ImportError "failed to map segment")."""
    text = str(exc)
    return (isinstance(exc, MemoryError) or (isinstance(exc, OSError) and exc.errno == errno.ENOMEM)
            or (isinstance(exc, ImportError) and ("failed to map segment" in text or "Cannot allocate memory" in text)))


def run_limited(module: str, function: str, data: bytes, *, wall_s: float, cpu_s: int, memory_bytes: int,
                output_bytes: int) -> bytes:
    """`module.function(data) -> bytes` run in a child Python process that can neither take more than `cpu_s`
    seconds of CPU (`wall_s` seconds of wall time), nor address more than `memory_bytes`, nor write more than
    `output_bytes` (its answer and its stderr go to files, so the cap holds them both); the child starts
    with these limits set, before `module` is imported.  Returns what the function returned; raises
    LimitExceeded with one line when a limit was hit or the child failed (the function itself should
    catch what its input can make it raise and answer with it)."""
    argv = [sys.executable, "-c", _CHILD, module, function, str(int(cpu_s)), str(int(memory_bytes)),
            str(int(output_bytes) + 1)]    # one byte over the cap shows that the child went past it
    with tempfile.TemporaryFile() as fin, tempfile.TemporaryFile() as fout, tempfile.TemporaryFile() as ferr:
        fin.write(data)
        fin.seek(0)
        try:
            proc = subprocess.run(argv, stdin=fin, stdout=fout, stderr=ferr, timeout=wall_s, close_fds=True)
        except subprocess.TimeoutExpired:   # run() kills the child before raising
            raise LimitExceeded(f"took more than {wall_s:g} s") from None
        fout.seek(0)
        out = fout.read(output_bytes + 1)
        ferr.seek(0)
        err = ferr.read(output_bytes).decode("utf-8", "replace").strip().splitlines()
    if proc.returncode == 0 and len(out) <= output_bytes:
        return out
    raise LimitExceeded(_child_failure(proc.returncode, err, cpu_s=cpu_s, memory_bytes=memory_bytes,
                                       output_bytes=output_bytes))


def _child_failure(code: int, err: list[str], *, cpu_s: int, memory_bytes: int, output_bytes: int) -> str:
    last = err[-1][:200] if err else ""
    if code in (-signal.SIGXCPU, -signal.SIGKILL) and not last:
        return f"used more than {cpu_s} s of CPU"
    if code in (-signal.SIGXFSZ, 0) or "File too large" in last:
        return f"wrote more than {output_bytes} bytes"
    if last.startswith("MemoryError") or "Cannot allocate memory" in last or "failed to map segment" in last:
        return f"needed more than {memory_bytes // (1024 * 1024)} MiB of memory"
    return f"failed ({'signal ' + str(-code) if code < 0 else 'exit ' + str(code)}{': ' + last if last else ''})"
