"""The imported video: probe it, bring it to the game's render size at a constant frame rate, check it.

- Never upscaled: a source smaller than render_size (either side) is an error.
- The aspect ratio must match render_size (within 1 %): the importer neither crops nor pads, because
  a crop could cut the action and padding changes what the instruction describes. Crop it yourself.
- Remuxed (stream copy) when the source already is H.264 yuv420p at render_size with a constant
  integer frame rate equal to the target; re-encoded otherwise (ffmpeg's libx264, crf 23, yuv420p).
- Audio, subtitles, data streams, chapters and container metadata (titles can name the teams) are dropped.
- The source is checked as a real container first (media/container.py: a regular file reached through no
  link, a whitelisted demuxer, no script, playlist or external reference) and every ffmpeg run opens it
  with that demuxer forced and the file protocol only.
- The output is decoded in full; any decoder error rejects the video.
- Bounded: at most MAX_VIDEO_S seconds (ffmpeg stops writing one frame past it, and that is an error)
  and MAX_SIDE pixels a side.
"""
from __future__ import annotations

import math
import os
from fractions import Fraction
from pathlib import Path
from typing import Any

from video_arena.importing.logs import ImportCaseError
from video_arena.media.container import Container, ContainerError, open_container, run_tool

CRF = 23
PRESET = "medium"
KEYFRAME_S = 10
MAX_FPS = 60
ASPECT_TOLERANCE = 0.01
#: The longest video imported (6 hours: longer than any match the games have) ...
MAX_VIDEO_S = 6 * 3600
#: ... and its largest side (8K).
MAX_SIDE = 8192


def _run(cmd: list[str], what: str):
    try:
        return run_tool(cmd, what)
    except ContainerError as exc:
        raise ImportCaseError(str(exc)) from None


def checked(path: Path, demuxer: str | None = None) -> Container:
    """`path` as a checked container (media/container.py), else ImportCaseError."""
    try:
        return open_container(path, demuxer)
    except ContainerError as exc:
        raise ImportCaseError(str(exc)) from None


def probe(path: Path, demuxer: str | None = None) -> dict[str, Any]:
    """The first video stream of `path` (checked as a container first): codec, size, pix_fmt, frame rates,
    duration, other streams; `container`: the checked container, for decoding it."""
    c = checked(path, demuxer)
    doc = c.probe
    streams = [s for s in doc.get("streams") or [] if isinstance(s, dict)]
    videos = [s for s in streams if s.get("codec_type") == "video"
              and not (s.get("disposition") or {}).get("attached_pic")]
    if not videos:
        raise ImportCaseError(f"video {path} does not decode: no video stream")
    s = videos[0]
    try:
        rate = Fraction(s.get("r_frame_rate", "0/1"))
        avg = Fraction(s.get("avg_frame_rate", "0/1")) if s.get("avg_frame_rate", "0/0") != "0/0" else Fraction(0)
    except (ValueError, ZeroDivisionError):
        rate = avg = Fraction(0)
    fmt = doc.get("format") or {}
    info = {
        "codec": s.get("codec_name"), "width": _whole(s.get("width")), "height": _whole(s.get("height")),
        "pix_fmt": s.get("pix_fmt"), "r_frame_rate": rate, "avg_frame_rate": avg,
        "start_time": _number(s.get("start_time")),
        "duration": _number(s.get("duration")) or _number(fmt.get("duration")),
        "nb_frames": _whole(s.get("nb_frames")),
        "rotation": _rotation(s),
        "n_streams": len(streams),
        "format": str(fmt.get("format_name", "")),
        "container": c,
    }
    if max(info["width"], info["height"]) > MAX_SIDE:
        raise ImportCaseError(f"video {path} is {info['width']}x{info['height']}, larger than {MAX_SIDE} pixels a side")
    if info["duration"] > MAX_VIDEO_S:
        raise ImportCaseError(f"video {path} lasts {info['duration']:.0f} s, longer than the {MAX_VIDEO_S} s a video "
                              f"may last")
    return info


def _whole(value: Any) -> int:
    """A count or a size as ffprobe reports it (a string or a number), 0 when it is none."""
    try:
        return max(0, int(value or 0))
    except (TypeError, ValueError):
        return 0


def _number(value: Any) -> float:
    """A time or an angle as ffprobe reports it (a string or a number), 0.0 when it is none or not finite."""
    try:
        x = float(value or 0.0)
    except (TypeError, ValueError):
        return 0.0
    return x if math.isfinite(x) else 0.0


def _rotation(stream: dict[str, Any]) -> int:
    for sd in stream.get("side_data_list", []) or []:
        if isinstance(sd, dict) and "rotation" in sd:
            return round(_number(sd["rotation"])) % 360
    return round(_number((stream.get("tags") or {}).get("rotate"))) % 360


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
    most = MAX_VIDEO_S * out_fps
    common = ["-map", "0:v:0", "-an", "-sn", "-dn", "-map_metadata", "-1", "-map_chapters", "-1",
              "-frames:v", str(most + 1), "-fflags", "+bitexact", "-movflags", "+faststart", "-f", "mp4"]
    source = info["container"].input_args()
    if can_remux(info, size, out_fps):
        method = "remux"
        cmd = ["ffmpeg", "-nostdin", "-v", "error", "-y", *source, "-c:v", "copy", *common, f"file:{os.path.abspath(dst)}"]
    else:
        method = "re-encode"
        vf = f"fps={out_fps},scale={W}:{H}:flags=bicubic,setsar=1,format=yuv420p"
        cmd = ["ffmpeg", "-nostdin", "-v", "error", "-xerror", "-y", *source, "-vf", vf,
               "-c:v", "libx264", "-preset", PRESET, "-crf", str(CRF), "-pix_fmt", "yuv420p",
               "-g", str(KEYFRAME_S * out_fps), "-flags:v", "+bitexact", *common, f"file:{os.path.abspath(dst)}"]
    p = _run(cmd, "convert the video")
    if p.returncode != 0 or not dst.is_file():
        why = (p.stderr.strip().splitlines() or ["ffmpeg failed"])[-1]
        raise ImportCaseError(f"video {src} does not decode: {why}")
    out = probe(dst, "mov")
    n_frames = count_frames(src, out["container"])
    if n_frames > most:
        raise ImportCaseError(f"video {src} lasts longer than the {MAX_VIDEO_S} s a video may last")
    if (out["width"], out["height"]) != (W, H) or n_frames < 1:
        raise ImportCaseError(f"video {src}: the converted video is {out['width']}x{out['height']} with "
                              f"{n_frames} frames, expected {W}x{H}")
    return {"method": method, "fps": out_fps, "n_frames": n_frames, "width": W, "height": H,
            "source": {"codec": info["codec"], "width": info["width"], "height": info["height"],
                       "pix_fmt": info["pix_fmt"], "frame_rate": str(info["avg_frame_rate"] or info["r_frame_rate"]),
                       "duration_s": round(info["duration"], 4)},
            "encoder": encoder_info(method)}


def count_frames(src: Path, dst: Container) -> int:
    """Decode `dst` completely (any decoder error rejects the video) and count its frames."""
    p = _run(["ffmpeg", "-nostdin", "-v", "error", "-xerror", *dst.input_args(), "-map", "0:v:0",
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
