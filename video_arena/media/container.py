"""A video from outside, checked as a real container before anything decodes it, and the ffmpeg arguments
that then open that file and nothing else.

ffmpeg guesses what a file is from its bytes, and some of what it can read names other files: a
five-line `.mp4` that is an ffconcat script (`ffconcat version 1.0`, `file other.mp4`) is read as the video
it names, a playlist (HLS, m3u8) as the segments it lists, an image2 pattern as many pictures, a URL or
`subfile:` as what they point to, an MP4 data reference (`dref`) as media in another file.  So a video is:

- a regular file reached through no symbolic link (as its last component), of at most MAX_VIDEO_BYTES;
- probed by ffprobe with only the demuxers of DEMUXERS allowed (`-format_whitelist`) and only the
  `file` protocol (`-protocol_whitelist file`), the path given as `file:<absolute path>`;
- for MP4/MOV, read for data references: every `dref` entry must say its data is in this file (the
  self-contained flag), and a reference movie (`rmra`) or a compressed movie header (`cmov`, which
  would hide them) is refused;
- decoded only with `Container.input_args()`: the demuxer the probe found forced with `-f` (ffmpeg
  cannot sniff another one), the same whitelists, MP4 data references off (`-enable_drefs 0`).

Anything else is a ContainerError: one line naming the file and why.
"""
from __future__ import annotations

import json
import os
import re
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from video_arena.safe_io import open_regular

#: The demuxers a video may be read with (ffmpeg's names) and what they read.
DEMUXERS = {"mov": "MP4, MOV, M4V", "matroska": "Matroska, WebM", "avi": "AVI", "mpegts": "MPEG-TS"}
#: The largest video read (a 4-hour 1080p60 broadcast recording is about 20 GB).
MAX_VIDEO_BYTES = 64 << 30
#: The movie header of an MP4/MOV is read whole to look for data references, up to this size (a 4-hour
#: video at 60 fps has a header of about 15 MB).
MAX_MOVIE_HEADER_BYTES = 256 << 20
#: How many top-level boxes are passed over looking for the movie header (ffmpeg reads the first one).
MAX_TOP_BOXES = 100_000
#: ffprobe's wall time on one file.
PROBE_TIMEOUT_S = 120
#: MP4/MOV boxes that hold boxes on the way to a data reference (`meta` is a full box: 4 bytes first).
_MOV_PATH = {b"moov", b"trak", b"mdia", b"minf", b"dinf", b"meta"}


class ContainerError(ValueError):
    """A video that is not a container the toolkit reads, or one that names other files (one line)."""


@dataclass(frozen=True)
class Container:
    """A checked video: its absolute path, the demuxer that reads it and ffprobe's report (streams, format)."""

    path: Path
    demuxer: str
    probe: dict[str, Any]

    def input_args(self) -> list[str]:
        """ffmpeg (or ffprobe) input arguments that open this file with its demuxer forced and the file
        protocol only: put them where `-i FILE` goes."""
        return [*_whitelists(self.demuxer), "-f", self.demuxer,
                *(["-enable_drefs", "0"] if self.demuxer == "mov" else []), "-i", f"file:{self.path}"]


def _whitelists(demuxers: str) -> list[str]:
    return ["-protocol_whitelist", "file", "-format_whitelist", demuxers]


def open_container(path: str | Path, demuxer: str | None = None) -> Container:
    """Check `path` as a real container (module docstring) and probe it; `demuxer` forces one of DEMUXERS
    (a file the toolkit wrote itself).  Raises ContainerError."""
    path = Path(os.path.abspath(path))
    name = f"video {path}"
    try:
        fd, st = open_regular(path)
        os.close(fd)
    except OSError as exc:
        why = ("a symbolic link (a video is read as a regular file only)" if path.is_symlink()
               else "no such file" if isinstance(exc, FileNotFoundError)
               else "not a regular file" if path.exists() else exc.strerror or str(exc))
        raise ContainerError(f"{name}: {why}") from None
    if st.st_size > MAX_VIDEO_BYTES:
        raise ContainerError(f"{name}: {st.st_size} bytes, more than the {MAX_VIDEO_BYTES} a video may have")
    allowed = demuxer or ",".join(DEMUXERS)
    cmd = ["ffprobe", "-v", "error", *_whitelists(allowed), *(["-f", demuxer] if demuxer else []),
           "-show_streams", "-show_format", "-of", "json", "-i", f"file:{path}"]
    p = run_tool(cmd, f"{name}: probing", PROBE_TIMEOUT_S)
    try:
        doc = json.loads(p.stdout or "{}")
    except ValueError:
        doc = {}
    found = str((doc.get("format") or {}).get("format_name") or "").split(",")[0]
    lines = [re.sub(r"^\[(\S+) @ 0x[0-9a-f]+\] ", "", line) for line in p.stderr.strip().splitlines()]
    refused = next((re.sub(r"^\[(\S+) @.*", r"\1", line) for line in p.stderr.splitlines()
                    if "not on whitelist" in line), None)
    if refused is not None or (p.returncode == 0 and found not in DEMUXERS):
        raise ContainerError(f"{name} is read by ffmpeg's {refused or found} demuxer, not as one of the video "
                             f"containers the toolkit reads ({', '.join(DEMUXERS.values())}): scripts, playlists, "
                             f"image sequences and references are refused")
    if p.returncode != 0:
        raise ContainerError(f"{name} does not decode: {(lines or ['ffprobe failed'])[0]}")
    if found == "mov":
        try:
            fd, st = open_regular(path)
        except OSError as exc:
            raise ContainerError(f"{name}: {exc.strerror or exc}") from None
        with os.fdopen(fd, "rb") as f:
            why = mov_external_reference(f, st.st_size)
        if why:
            raise ContainerError(f"{name} refers to data outside itself ({why}): only self-contained videos are read")
    return Container(path, found, doc)


def run_tool(cmd: list[str], what: str, timeout: float | None = None) -> subprocess.CompletedProcess:
    """ffmpeg or ffprobe, its output captured as text; ContainerError when it is missing or runs past `timeout`."""
    try:
        return subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, errors="replace",
                              timeout=timeout)
    except FileNotFoundError:
        raise ContainerError(f"{cmd[0]} is not installed (needed for {what}); see scripts/apt-packages.txt") from None
    except subprocess.TimeoutExpired:
        raise ContainerError(f"{what}: {cmd[0]} took more than {timeout:.0f} s") from None


# -- MP4 / MOV data references --------------------------------------------------------------------------

def mov_external_reference(f: BinaryIO, size: int) -> str:
    """"" when the first movie header (`moov`, the one ffmpeg reads) of an MP4/MOV file keeps all its media in
    the file, else why not: a data reference entry without the self-contained flag, a reference movie, a
    compressed header (whose references cannot be seen), a header too large or malformed."""
    def header(pos: int, n: int) -> bytes:
        f.seek(pos)
        return f.read(n)

    try:
        for k, (typ, start, end) in enumerate(_boxes(header, 0, size)):
            if k >= MAX_TOP_BOXES:
                return f"no movie header among its first {MAX_TOP_BOXES} boxes"
            if typ == b"moov":
                if end - start > MAX_MOVIE_HEADER_BYTES:
                    return f"a movie header of {end - start} bytes, more than {MAX_MOVIE_HEADER_BYTES}"
                data = header(start, end - start)
                return _moov_reference(data, 0, len(data), 0)
    except ValueError as exc:
        return f"malformed: {exc}"
    return ""


def _moov_reference(data: bytes, start: int, end: int, depth: int) -> str:
    def header(pos: int, n: int) -> bytes:
        return data[pos:pos + n]

    for typ, s, e in _boxes(header, start, end):
        if typ in (b"rmra", b"cmov"):
            return "a reference movie (rmra)" if typ == b"rmra" else "a compressed movie header (cmov)"
        if typ == b"dref":
            why = _dref_external(data[s:e])
            if why:
                return why
        elif typ in _MOV_PATH and depth < 8:
            # an ISO `meta` box starts with version and flags, a QuickTime one with its first child (`hdlr`)
            first = s + 4 if typ == b"meta" and data[s + 4:s + 8] != b"hdlr" else s
            why = _moov_reference(data, first, e, depth + 1)
            if why:
                return why
    return ""


def _dref_external(payload: bytes) -> str:
    """Why a `dref` payload (version, flags, entry count, entries) names data outside the file, or ""."""
    if len(payload) < 8:
        raise ValueError("a data reference box shorter than its header")
    count = struct.unpack(">I", payload[4:8])[0]
    entries = list(_boxes(lambda pos, n: payload[pos:pos + n], 8, len(payload)))
    if len(entries) != count:
        raise ValueError(f"a data reference box says {count} entries and holds {len(entries)}")
    for typ, s, _ in entries:
        flags = int.from_bytes(payload[s + 1:s + 4], "big") if s + 4 <= len(payload) else 0
        if not flags & 1:
            return f"a data reference entry {typ.decode('latin-1')!r} without the self-contained flag"
    return ""


def _boxes(read, start: int, end: int):
    """(type, payload start, end) of each box between start and end; ValueError on a box that does not fit."""
    pos = start
    while pos + 8 <= end:
        size, typ = struct.unpack(">I4s", read(pos, 8))
        head = 8
        if size == 1:
            big = read(pos + 8, 8)
            if len(big) < 8:
                raise ValueError(f"a box at offset {pos} cut short")
            size, head = struct.unpack(">Q", big)[0], 16
        elif size == 0:
            size = end - pos
        if size < head or pos + size > end:
            raise ValueError(f"a {typ!r} box at offset {pos} of {size} bytes does not fit in {end - pos}")
        yield typ, pos + head, pos + size
        pos += size
