"""The stills a Protocol A model received, as thumbnails for the explorer.

A cell's receipt.json lists every still's SHA-256 and its `video_ts`.  The stills themselves are in
run-a's cache (`<cache>/<media sha>/<grid key>/frames/`) or, for a Harbor ProtocolA trial, in the
trial's `agent/frames/`.  A still is shown only when its bytes hash to the receipt's digest, so the
page shows exactly what was sent, or says why it cannot.  Thumbnails are content-addressed
(`stills/<sha[:20]>.jpg`), so a case's stills are drawn once however many systems share them.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from PIL import Image

from video_arena import paths
from video_arena.core.tasks import TasksTree
from video_arena.digests import sha256_file
from video_arena.media import grid as G
from video_arena.safe_io import finite_number, regular_file

THUMB_WIDTH = 224
#: The most stills a cell page lists (the reference grid sends 256; a receipt is data, not trusted),
#: the largest still hashed, and the most pixels a still may have to be drawn (its header is read first,
#: so a small file claiming a huge image is never decoded).
MAX_STILLS = 4096
MAX_STILL_BYTES = 16 << 20
MAX_STILL_PIXELS = 4096 * 4096


class StillSource:
    def __init__(self, cache_dir: str | os.PathLike | None, tasks_root: Path, extract: bool = False):
        self.cache = G.cache_root(cache_dir)
        self.tasks_root = tasks_root
        self.extract = extract

    def _spec(self, receipt: dict[str, Any]):
        g = receipt.get("grid") or {}
        return G.GridSpec(fps=float(g["fps"]), max_frames=int(g["max_frames"]),
                          longest_side=int(g["longest_side"]), jpeg_q=int(g["jpeg_q"]))

    def _frames_dir(self, receipt: dict[str, Any], frames_dir: Path | None, game: str, case_id: str) -> tuple[Path | None, str]:
        if frames_dir is not None:
            return frames_dir, ""
        sha = (receipt.get("media") or {}).get("sha256")
        try:
            spec = self._spec(receipt)
        except (KeyError, TypeError, ValueError, OverflowError):
            return None, "the receipt names no usable grid"
        if not isinstance(sha, str):
            return None, "the receipt names no media digest"
        entry = self.cache / sha / spec.key() / "frames"
        if entry.is_dir():
            return entry, ""
        if not self.extract:
            return None, "stills not in the cache (run with --extract-stills to re-extract them from the media)"
        media = TasksTree(self.tasks_root, paths.media_root(self.tasks_root)).media(game, case_id)
        if not media.is_file():
            return None, "stills not cached and the case's media is not in the tasks tree"
        try:
            fs = G.FrameCache(self.cache).get(media, spec)
        except Exception as exc:  # noqa: BLE001 - shown on the page, never fatal
            return None, f"re-extraction failed: {exc}"
        if fs.media_sha256 != sha:
            return None, "the tasks tree's media is not the video this run was given (digest differs)"
        return fs.frames_dir, ""

    def stills_for(self, receipt: dict[str, Any], frames_dir: Path | None, game: str, case_id: str,
                   thumb_jobs: dict[str, Path]) -> tuple[list[dict[str, Any]], str]:
        """[{"thumb", "ts", "i", "ok"}] for the receipt's stills; adds the thumbnails to make."""
        frames = receipt.get("frames") if isinstance(receipt.get("frames"), list) else []
        ts = receipt.get("video_ts") if isinstance(receipt.get("video_ts"), list) else []
        d, note = self._frames_dir(receipt, frames_dir, game, case_id)
        out = []
        bad = 0
        if len(frames) > MAX_STILLS:
            note = (note + "; " if note else "") + f"the receipt lists {len(frames)} stills: the first {MAX_STILLS} shown"
            frames = frames[:MAX_STILLS]
        for k, f in enumerate(frames):
            sha = f.get("sha256") if isinstance(f, dict) else None
            t = finite_number(ts[k]) if k < len(ts) else None  # a time no float holds is not shown
            item = {"i": k, "ts": t, "thumb": None}
            if d is not None and isinstance(sha, str):
                p = regular_file(d, d / G.FRAME_NAME.format(k))
                if p is not None and p.stat().st_size <= MAX_STILL_BYTES and sha256_file(p) == sha:
                    name = f"{sha[:20]}.jpg"
                    thumb_jobs.setdefault(name, p)
                    item["thumb"] = f"stills/{name}"
                else:
                    bad += 1
            out.append(item)
        if bad:
            note = (note + "; " if note else "") + f"{bad} still(s) missing or not the bytes the receipt names: not shown"
        return out, note


def make_thumbs(batch: list[tuple[str, Path]]) -> int:
    """Write each (destination, source JPEG) thumbnail; returns how many were written.  A source that is
    not a JPEG, claims more than MAX_STILL_PIXELS, or does not decode gets no thumbnail (the page then
    says the still is not shown), never an error that stops the site."""

    Image.MAX_IMAGE_PIXELS = MAX_STILL_PIXELS  # Pillow's own bomb check, below its default
    n = 0
    for dest, src in batch:
        try:
            with Image.open(src, formats=["JPEG"]) as im:
                if im.width * im.height > MAX_STILL_PIXELS:
                    continue
                im.draft("RGB", (THUMB_WIDTH, THUMB_WIDTH))  # JPEG DCT scaling: decode small, fast
                im = im.convert("RGB")
                if im.width > THUMB_WIDTH:
                    im = im.resize((THUMB_WIDTH, max(1, round(im.height * THUMB_WIDTH / im.width))))
                im.save(dest, "JPEG", quality=80)
        except (OSError, ValueError, Image.DecompressionBombError, SyntaxError):
            continue
        n += 1
    return n
