"""What every game's pixel reader shares: the video's geometry and rate, its frames, the answer rows.

Standalone on purpose (Python 3.11 stdlib + numpy + ffmpeg/ffprobe, the sandbox image's toolset): it
runs inside an agent's sandbox beside the games' readers, which import it as the top-level module
`pixel_reader` (the perception agent puts it and every `<game>_reader.py` in one folder, flat;
`video_arena.games.readers` gives the toolkit the same modules). It imports nothing from the toolkit.

A game's reader (`video_arena/games/<game>/reader.py`) exposes

    READS: str                                   one line: what it reads from the pixels
    read(video, writer, log) -> list[dict]       writes answer rows through `writer` as it finds events
                                                 and returns, per written row in order, the visible state
                                                 it recovered after that event (the keys of the game
                                                 plugin's `visible_features`)
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any, Iterator

import numpy as np


def probe(video: Path) -> tuple[int, int, float]:
    """(width, height, frames per second) of the video's first video stream."""
    out = subprocess.run(
        ["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=width,height,r_frame_rate",
         "-of", "json", str(video)], capture_output=True, text=True, check=True).stdout
    s = json.loads(out)["streams"][0]
    num, _, den = s["r_frame_rate"].partition("/")
    return int(s["width"]), int(s["height"]), float(num) / float(den or 1)


def frames(video: Path, width: int, height: int, pix_fmt: str = "rgb24", vf: str = "",
           threads: int = 1) -> Iterator[tuple[int, Any]]:
    """Yield (k, frame) for every frame in decode order (frame k is at k / fps): a (height, width, 3) uint8 array for
    rgb24, (height, width) for gray, and for yuv420p (the codec's own planes, no conversion) the tuple (Y, U, V) of
    (height, width), (height / 2, width / 2) and (height / 2, width / 2) arrays.  `vf` is an ffmpeg filter applied
    first (a crop, a scale, a frame selection): then `width` and `height` are the filtered size.  One decoding thread
    by default (a reader runs on one core)."""
    if pix_fmt not in ("rgb24", "gray", "yuv420p"):
        raise ValueError(f"pix_fmt {pix_fmt!r}: rgb24, gray or yuv420p")
    area = width * height
    size = {"rgb24": 3 * area, "gray": area, "yuv420p": area + 2 * (area // 4)}[pix_fmt]
    cmd = ["ffmpeg", "-v", "error", "-nostdin", "-threads", str(threads), "-i", str(video), "-map", "0:v:0",
           "-vsync", "passthrough"]
    if vf:
        cmd += ["-vf", vf]
    cmd += ["-f", "rawvideo", "-pix_fmt", pix_fmt, "-"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE)
    try:
        k = 0
        while True:
            buf = proc.stdout.read(size)
            if len(buf) < size:
                break
            a = np.frombuffer(buf, np.uint8)
            if pix_fmt == "rgb24":
                yield k, a.reshape(height, width, 3)
            elif pix_fmt == "gray":
                yield k, a.reshape(height, width)
            else:
                q = area // 4
                yield k, (a[:area].reshape(height, width), a[area:area + q].reshape(height // 2, width // 2),
                          a[area + q:].reshape(height // 2, width // 2))
            k += 1
    finally:
        proc.stdout.close()
        proc.wait()


class Writer:
    """Keeps the rows and rewrites the answer file atomically every `every` rows and at the end."""

    def __init__(self, path: Path, every: int = 10):
        self.path, self.every, self.rows = path, every, []

    def add(self, row: dict) -> None:
        self.rows.append(row)
        if len(self.rows) % self.every == 0:
            self.flush()

    def flush(self) -> None:
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        tmp.write_text(json.dumps({"events": self.rows}, indent=0))
        os.replace(tmp, self.path)


def row(t: float, type_: str, actor: str, where: str, state: str, delta: str = "flat") -> dict:
    """One answer row (the six fields of the answer format), `t` to the millisecond."""
    return {"t": round(t, 3), "type": type_, "actor": actor, "where": where, "delta": delta, "state": state}


# -- stones on a grid (the stone-board renders: video_arena/games/stone_board.py) -------------------------
#: a stone grid's cells as the visible state writes them: empty, black, white
STONE_CHARS = ".XO"


def stone_grid(gray: np.ndarray, n: int, margin: int, spacing: int, off: int = 3, size: int = 5) -> np.ndarray:
    """n x n array (row 0 at the top): 0 empty, 1 black, 2 white, from a patch beside each point."""
    idx = margin + np.arange(n) * spacing + off
    rows = idx[:, None] + np.arange(size)[None, :]
    patch = gray[rows[:, None, :, None], rows[None, :, None, :]]  # (n, n, size, size): gray[y, x]
    m = patch.reshape(n, n, -1).mean(axis=2)
    out = np.zeros((n, n), np.int8)
    out[m < 100] = 1
    out[m > 205] = 2
    return out


def stone_rows(grid: np.ndarray) -> list[str]:
    """The grid as text, top row first: one character per point (STONE_CHARS)."""
    return ["".join(STONE_CHARS[int(v)] for v in r) for r in grid]


def stone_changes(video: Path, n: int, margin: int, spacing: int, log):
    """(time, grid before, grid after, added, removed) for every frame whose stones differ from the
    previous frame's (`added`, `removed`: arrays of (row, col)) and a stone was added."""
    w, h, fps = probe(video)
    prev = None
    for k, gray in frames(video, w, h, "gray"):
        g = stone_grid(gray, n, margin, spacing)
        if prev is not None and not np.array_equal(g, prev):
            added = np.argwhere((g != 0) & (prev == 0))
            removed = np.argwhere((g == 0) & (prev != 0))
            changed = int(np.sum((g != 0) & (prev != 0) & (g != prev)))
            if len(added) != 1 or changed:
                log(f"frame {k}: {len(added)} stones added, {changed} changed colour, {len(removed)} removed")
            if len(added):
                yield k / fps, prev, g, added, removed
        prev = g
