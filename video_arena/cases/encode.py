"""H.264 encoding with PyAV, bit-exact across rebuilds.

One encoder path only (PyAV's bundled libx264; the ffmpeg CLI gives a different bitstream): libx264,
preset veryfast with X264_PARAMS, crf 23, yuv420p, one thread, a keyframe at least every KEYFRAME_S
seconds, and the MP4 muxer with `fflags +bitexact` (no Lavf version tag), so the same positions and
schedule give the same bytes on every rebuild (docs/CASES.md, "Determinism"). The settings were chosen
with benchmarks/encode_settings.py for these mostly static pictures (docs/CASES.md, "Encoder settings").
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any, Iterable

import av

CRF = 23
PRESET = "veryfast"
#: On top of the preset: diamond motion search and the cheapest subpixel refinement (a board moves
#: nothing between events), and no adaptive quantization (it takes bits from flat squares and gives
#: them to edges; on drawn boards that only adds error).
X264_PARAMS = "me=dia:subme=1:aq-mode=0"
KEYFRAME_S = 120


def x264_params(fps: int, keyint: int | None = None, extra: str = X264_PARAMS) -> str:
    """The x264-params string of a video at `fps`: a keyframe at least every `keyint` frames (default
    KEYFRAME_S seconds), at most every second, plus `extra` (benchmarks/encode_settings.py builds its
    candidates with this too)."""
    keyint = KEYFRAME_S * fps if keyint is None else keyint
    return f"keyint={keyint}:min-keyint={fps}" + (f":{extra}" if extra else "")


def encoder_info() -> dict[str, Any]:
    """What the manifest records about the encoder (a different one gives different bytes)."""
    import PIL

    return {"muxer": "PyAV", "pyav": av.__version__, "ffmpeg": _ffmpeg_version(), "codec": "libx264",
            "preset": PRESET, "x264_params": X264_PARAMS, "crf": CRF, "pix_fmt": "yuv420p", "threads": 1, "keyframe_s": KEYFRAME_S,
            "pillow": PIL.__version__}


def _ffmpeg_version() -> str:
    return str(getattr(av, "ffmpeg_version_info", "unknown"))


def encode_mp4(positions: Iterable[Any], position_of_frame: list[int], fps: int, path: str | Path) -> None:
    """Write an MP4 whose frame k shows `positions[position_of_frame[k]]` (PIL images, one per position).

    `positions` is consumed lazily and in order (frames only move forward through the positions), so a
    renderer can yield them one at a time. The file is written to a temporary name and renamed.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".mp4", dir=path.parent)
    os.close(fd)
    try:
        _encode(iter(positions), position_of_frame, fps, tmp)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; media are ordinary files
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _encode(positions, position_of_frame: list[int], fps: int, out_path: str) -> None:
    container = av.open(out_path, "w", format="mp4", container_options={"fflags": "+bitexact"})
    try:
        stream = None
        current_index, current_frame = -1, None
        for k, want in enumerate(position_of_frame):
            while current_index < want:
                try:
                    image = next(positions)
                except StopIteration:
                    raise ValueError(f"renderer gave {current_index + 1} positions; frame {k} needs position {want}")
                current_index += 1
                if current_index == want:
                    image = image.convert("RGB")
                    if stream is None:
                        stream = _open_stream(container, fps, image.width, image.height)
                    elif (image.width, image.height) != (stream.width, stream.height):
                        raise ValueError(f"position {want} is {image.size}, the video is {stream.width}x{stream.height}")
                    current_frame = av.VideoFrame.from_image(image).reformat(format="yuv420p")
            current_frame.pts = k
            for packet in stream.encode(current_frame):
                container.mux(packet)
        if stream is None:
            raise ValueError("no frames to encode")
        for packet in stream.encode():
            container.mux(packet)
    finally:
        container.close()


def _open_stream(container, fps: int, width: int, height: int):
    if width % 2 or height % 2:
        raise ValueError(f"yuv420p needs even frame sizes, got {width}x{height}")
    stream = container.add_stream("libx264", rate=fps, options={
        "crf": str(CRF), "preset": PRESET, "threads": "1",
        "x264-params": x264_params(fps),
    })
    stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
    stream.codec_context.thread_count = 1
    return stream
