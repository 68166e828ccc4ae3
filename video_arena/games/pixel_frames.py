"""Shared standalone helpers of the games' pixel readers (`video_arena/games/<game>/reader.py`): probe a video,
decode its frames with ffmpeg at the video's own rate, make an answer row, and write answer.json atomically.

Standalone on purpose: Python 3.11 stdlib + numpy + ffmpeg/ffprobe, the sandbox image's toolset; a reader
imports it as the plain top-level module `pixel_frames` (the agent puts it and the readers in one folder on
sys.path).  It imports nothing from the toolkit.
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


def row(t: float, type_: str, actor: str, where: str, delta: str, state: str) -> dict:
    """One answer row (docs/ARCHITECTURE.md, "Answer file")."""
    return {"t": round(t, 3), "type": type_, "actor": actor, "where": where, "delta": delta, "state": state}


class Writer:
    """Keeps the rows and rewrites answer.json atomically every `every` rows and at `flush`."""

    def __init__(self, path: Path, every: int = 10):
        self.path, self.every, self.rows = Path(path), every, []

    def add(self, answer_row: dict) -> None:
        self.rows.append(answer_row)
        if len(self.rows) % self.every == 0:
            self.flush()

    def flush(self) -> None:
        tmp = self.path.with_name(".answer.json.tmp")
        tmp.write_text(json.dumps({"events": self.rows}, indent=0))
        os.replace(tmp, self.path)
