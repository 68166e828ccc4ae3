"""The imported video: probe it, bring it to the game's render size at a constant frame rate, check it.

- Never upscaled: a source smaller than render_size (either side) is an error.
- The aspect ratio must match render_size (within 1 %): the importer neither crops nor pads, because
  a crop could cut the action and padding changes what the instruction describes. Crop it yourself.
- Remuxed (stream copy) when the source already is H.264 yuv420p at render_size with a constant
  integer frame rate equal to the target; re-encoded otherwise (ffmpeg's libx264, crf 23, yuv420p).
- Audio, subtitles, data streams, chapters and container metadata (titles can name the teams) are dropped.
- The output is decoded in full; any decoder error rejects the video.
"""
from __future__ import annotations

import json
import subprocess
from fractions import Fraction
from pathlib import Path
from typing import Any

from video_arena.importing.logs import ImportCaseError

CRF = 23
PRESET = "medium"
KEYFRAME_S = 10
MAX_FPS = 60
ASPECT_TOLERANCE = 0.01


def _run(cmd: list[str], what: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, errors="replace")
    except FileNotFoundError:
        raise ImportCaseError(f"{cmd[0]} is not installed (needed to {what}); see scripts/apt-packages.txt") from None


def probe(path: Path) -> dict[str, Any]:
    """The first video stream of `path`: codec, size, pix_fmt, frame rates, duration, other streams."""
    path = Path(path)
    if not path.is_file():
        raise ImportCaseError(f"video {path}: no such file")
    p = _run(["ffprobe", "-v", "error", "-show_streams", "-show_format", "-of", "json", str(path)], "read the video")
    try:
        doc = json.loads(p.stdout or "{}")
    except ValueError:
        doc = {}
    videos = [s for s in doc.get("streams", []) if s.get("codec_type") == "video"
              and not s.get("disposition", {}).get("attached_pic")]
    if p.returncode != 0 or not videos:
        why = (p.stderr.strip().splitlines() or ["no video stream"])[-1]
        raise ImportCaseError(f"video {path} does not decode: {why}")
    s = videos[0]
    try:
        rate = Fraction(s.get("r_frame_rate", "0/1"))
        avg = Fraction(s.get("avg_frame_rate", "0/1")) if s.get("avg_frame_rate", "0/0") != "0/0" else Fraction(0)
    except (ValueError, ZeroDivisionError):
        rate = avg = Fraction(0)
    return {
        "codec": s.get("codec_name"), "width": int(s.get("width") or 0), "height": int(s.get("height") or 0),
        "pix_fmt": s.get("pix_fmt"), "r_frame_rate": rate, "avg_frame_rate": avg,
        "start_time": float(s.get("start_time") or 0.0),
        "duration": float(s.get("duration") or doc.get("format", {}).get("duration") or 0.0),
        "nb_frames": int(s.get("nb_frames") or 0),
        "rotation": _rotation(s),
        "n_streams": len(doc.get("streams", [])),
        "format": doc.get("format", {}).get("format_name", ""),
    }


def _rotation(stream: dict[str, Any]) -> int:
    for sd in stream.get("side_data_list", []) or []:
        if "rotation" in sd:
            return int(sd["rotation"]) % 360
    return int(stream.get("tags", {}).get("rotate", 0) or 0) % 360


def target_fps(info: dict[str, Any], requested: int | None) -> int:
    if requested is not None:
        if not 1 <= requested <= MAX_FPS:
            raise ImportCaseError(f"--fps {requested}: must be 1..{MAX_FPS}")
        return requested
    rate = info["avg_frame_rate"] or info["r_frame_rate"]
    if rate <= 0:
        raise ImportCaseError("the video has no frame rate; pass --fps N")
    return max(1, min(MAX_FPS, round(float(rate))))


def check_size(path: Path, info: dict[str, Any], size: tuple[int, int]) -> None:
    w, h = info["width"], info["height"]
    if info["rotation"] in (90, 270):
        w, h = h, w
    W, H = size
    if w < W or h < H:
        raise ImportCaseError(f"video {path} is {w}x{h}, smaller than the game's render size {W}x{H} "
                              f"(the importer never upscales)")
    if abs(w * H - h * W) > ASPECT_TOLERANCE * W * h:
        raise ImportCaseError(f"video {path} is {w}x{h}, aspect {w / h:.4f}; the game's render size {W}x{H} "
                              f"is {W / H:.4f}: crop the footage to that aspect first (the importer neither "
                              f"crops nor pads)")


def can_remux(info: dict[str, Any], size: tuple[int, int], fps: int) -> bool:
    return (info["codec"] == "h264" and info["pix_fmt"] == "yuv420p" and info["rotation"] == 0
            and (info["width"], info["height"]) == tuple(size)
            and info["r_frame_rate"] == info["avg_frame_rate"] == Fraction(fps)
            and abs(info["start_time"]) < 1e-6 and "mp4" in info["format"]
            and abs(info["nb_frames"] - info["duration"] * fps) <= 1)  # frames evenly spread: constant rate


def prepare(src: Path, dst: Path, size: tuple[int, int], fps: int | None = None) -> dict[str, Any]:
    """Write the case's video to `dst`; returns what the manifest records about it."""
    info = probe(src)
    check_size(src, info, size)
    out_fps = target_fps(info, fps)
    W, H = size
    common = ["-map", "0:v:0", "-an", "-sn", "-dn", "-map_metadata", "-1", "-map_chapters", "-1",
              "-fflags", "+bitexact", "-movflags", "+faststart", "-f", "mp4"]
    if can_remux(info, size, out_fps):
        method = "remux"
        cmd = ["ffmpeg", "-nostdin", "-v", "error", "-y", "-i", str(src), "-c:v", "copy", *common, str(dst)]
    else:
        method = "re-encode"
        vf = f"fps={out_fps},scale={W}:{H}:flags=bicubic,setsar=1,format=yuv420p"
        cmd = ["ffmpeg", "-nostdin", "-v", "error", "-xerror", "-y", "-i", str(src), "-vf", vf,
               "-c:v", "libx264", "-preset", PRESET, "-crf", str(CRF), "-pix_fmt", "yuv420p",
               "-g", str(KEYFRAME_S * out_fps), "-flags:v", "+bitexact", *common, str(dst)]
    p = _run(cmd, "convert the video")
    if p.returncode != 0 or not dst.is_file():
        why = (p.stderr.strip().splitlines() or ["ffmpeg failed"])[-1]
        raise ImportCaseError(f"video {src} does not decode: {why}")
    out = probe(dst)
    n_frames = count_frames(src, dst)
    if (out["width"], out["height"]) != (W, H) or n_frames < 1:
        raise ImportCaseError(f"video {src}: the converted video is {out['width']}x{out['height']} with "
                              f"{n_frames} frames, expected {W}x{H}")
    return {"method": method, "fps": out_fps, "n_frames": n_frames, "width": W, "height": H,
            "source": {"codec": info["codec"], "width": info["width"], "height": info["height"],
                       "pix_fmt": info["pix_fmt"], "frame_rate": str(info["avg_frame_rate"] or info["r_frame_rate"]),
                       "duration_s": round(info["duration"], 4)},
            "encoder": encoder_info(method)}


def count_frames(src: Path, dst: Path) -> int:
    """Decode `dst` completely (any decoder error rejects the video) and count its frames."""
    p = _run(["ffmpeg", "-nostdin", "-v", "error", "-xerror", "-i", str(dst), "-map", "0:v:0",
              "-f", "framemd5", "-"], "decode the video")
    if p.returncode != 0 or p.stderr.strip():
        why = (p.stderr.strip().splitlines() or ["decoder error"])[-1]
        raise ImportCaseError(f"video {src} does not decode cleanly: {why}")
    return sum(1 for line in p.stdout.splitlines() if line and not line.startswith("#"))


def encoder_info(method: str) -> dict[str, Any]:
    version = _run(["ffmpeg", "-version"], "read its version").stdout.splitlines()[:1]
    base = {"tool": "ffmpeg", "ffmpeg": version[0] if version else "unknown", "method": method}
    if method == "re-encode":
        base |= {"codec": "libx264", "preset": PRESET, "crf": CRF, "pix_fmt": "yuv420p", "keyframe_s": KEYFRAME_S}
    return base
