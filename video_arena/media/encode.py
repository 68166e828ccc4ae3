"""H.264 encoding with PyAV, bit-exact across rebuilds.

One encoder path only (PyAV's bundled libx264; the ffmpeg CLI gives a different bitstream): libx264,
preset ultrafast with X264_PARAMS, crf 23, yuv420p, one thread, a keyframe at least every KEYFRAME_S
seconds, and the MP4 muxer with `fflags +bitexact` (no Lavf version tag), so the same positions and
schedule give the same bytes on every rebuild, whatever else the process encoded before (docs/CASES.md,
"Determinism"). The settings were chosen
with benchmarks/encode_settings.py for these mostly static pictures (docs/CASES.md, "Encoder settings").
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any, Iterable, Sequence

import av
import numpy as np
import PIL

CRF = 23
PRESET = "ultrafast"
#: On top of the preset (which already turns both off; they are named so that a change of preset cannot
#: turn them back on silently): no adaptive quantization (it takes bits from flat squares and gives them
#: to edges; on drawn pictures that only adds error), and no macroblock-tree rate control: with it, x264
#: sometimes coded a macroblock differently (same decoded pixels, other bytes) depending on what
#: earlier encoders in the same process left in memory, so a rebuild was not always byte-identical
#: (benchmarks/encode_determinism.py measures it; tests/unit/test_encode.py checks the shipped settings).
#: ultrafast rather than veryfast: 0.57-0.78x the CPU of a whole render at 1.07-1.43x the bytes, with the same
#: fidelity (docs/CASES.md, "Encoder settings"; benchmarks/media_speed.py --compare-encoder measures it).
X264_PARAMS = "aq-mode=0:mbtree=0"
KEYFRAME_S = 120


def x264_params(fps: int, keyint: int | None = None, extra: str = X264_PARAMS) -> str:
    """The x264-params string of a video at `fps`: a keyframe at least every `keyint` frames (default
    KEYFRAME_S seconds), at most every second, plus `extra` (benchmarks/encode_settings.py builds its
    candidates with this too)."""
    keyint = KEYFRAME_S * fps if keyint is None else keyint
    return f"keyint={keyint}:min-keyint={fps}" + (f":{extra}" if extra else "")


def encoder_info() -> dict[str, Any]:
    """What the manifest records about the encoder (a different one gives different bytes)."""

    return {"muxer": "PyAV", "pyav": av.__version__, "ffmpeg": _ffmpeg_version(), "codec": "libx264",
            "preset": PRESET, "x264_params": X264_PARAMS, "crf": CRF, "pix_fmt": "yuv420p", "threads": 1, "keyframe_s": KEYFRAME_S,
            "pillow": PIL.__version__}


def _ffmpeg_version() -> str:
    return str(getattr(av, "ffmpeg_version_info", "unknown"))


def yuv420p(picture: Any) -> av.VideoFrame:
    """The reference conversion of a picture (PIL image, or (H, W, 3) uint8 RGB array) to the encoder's
    input: swscale's RGB to yuv420p with PyAV's defaults. Every video frame is this conversion of its
    picture (`IncrementalYuv420p` gives the same bytes faster)."""
    if isinstance(picture, np.ndarray):
        return av.VideoFrame.from_ndarray(picture, format="rgb24").reformat(format="yuv420p")
    return av.VideoFrame.from_image(picture.convert("RGB")).reformat(format="yuv420p")


def picture_size(picture: Any) -> tuple[int, int]:
    """(width, height) of a position as `encode_mp4` takes it: a PIL image or a yuv420p `av.VideoFrame`."""
    return (picture.width, picture.height)


Box = Sequence[int]


class IncrementalYuv420p:
    """`yuv420p(canvas)` of one canvas that changes only inside known boxes from frame to frame, for
    continuous play where a few sprites move over a still background (gfootball: 23 sprites on the pitch).

    The first frame, and any frame with a changed box near the picture's edge, is converted whole. Later
    frames convert only the changed boxes: each is widened to even coordinates and cut out with CONTEXT
    pixels of the canvas on every side (swscale's chroma filter reaches 2 to 4 pixels; the context keeps the
    box's pixels away from the cut-out's own edges), the cut-outs are stacked into one picture so swscale
    runs once per frame, and each box's interior is written back into the frame kept from before.
    Bit-identical to `yuv420p(canvas)` on every frame: tests/unit/test_encode.py checks it on random boxes and on
    a real match, and the manifest digests check every video again.
    """
    REACH = 4          # pixels round a changed box whose chroma may change with it (1 is enough, measured)
    CONTEXT = 8        # pixels of canvas round each rewritten box in its cut-out (2 is enough, measured)
    SHEET_W = 320      # width of the sheet the cut-outs are packed on

    def __init__(self) -> None:
        self._buf: np.ndarray | None = None     # the last frame: PyAV's (H * 3/2, W) yuv420p layout
        self._size = (0, 0)

    def frame(self, canvas: np.ndarray, changed: Iterable[Box]) -> av.VideoFrame:
        """The yuv420p frame of `canvas` ((H, W, 3) uint8 RGB) whose pixels differ from the previous call's
        canvas only inside the boxes `changed` ((x0, y0, x1, y1), any integers; clipped to the picture)."""
        size = (canvas.shape[1], canvas.shape[0])
        interiors = None if self._buf is None or size != self._size else self._interiors(changed, *size)
        if interiors is None:
            full = yuv420p(canvas)
            self._buf, self._size = full.to_ndarray(), size
            return full
        if interiors:
            self._update(canvas, interiors)
        return av.VideoFrame.from_ndarray(self._buf, format="yuv420p")

    def _interiors(self, changed: Iterable[Box], width: int, height: int) -> list[tuple[int, int, int, int]] | None:
        """The boxes clipped and widened to even coordinates; None when one is within CONTEXT of an edge."""
        c, r, out = self.CONTEXT, self.REACH, []
        for x0, y0, x1, y1 in changed:
            x0, y0, x1, y1 = max(int(x0) - r, 0) & ~1, max(int(y0) - r, 0) & ~1, min(int(x1) + r, width), min(int(y1) + r, height)
            if x1 <= x0 or y1 <= y0:
                continue
            x1, y1 = x1 + (x1 & 1), y1 + (y1 & 1)
            if x0 < c or y0 < c or x1 > width - c or y1 > height - c:
                return None
            out.append((x0, y0, x1, y1))
        return out

    def _update(self, pixels: np.ndarray, interiors: list[tuple[int, int, int, int]]) -> None:
        """Convert the cut-outs of `pixels` packed on one sheet (shelves SHEET_W wide, tallest first:
        swscale's cost is mostly per line) and write each interior back."""
        c = self.CONTEXT
        order = sorted(interiors, key=lambda b: b[1] - b[3])
        sheet_w = max(self.SHEET_W, -(-max(x1 - x0 + 2 * c for x0, _, x1, _ in order) // 16) * 16)
        places, x, y, shelf_h = [], 0, 0, 0
        for x0, y0, x1, y1 in order:
            w, h = x1 - x0 + 2 * c, y1 - y0 + 2 * c
            if x + w > sheet_w:
                x, y, shelf_h = 0, y + shelf_h, 0
            places.append((x, y))
            x, shelf_h = x + w, max(shelf_h, h)
        sheet_h = y + shelf_h
        sheet = np.zeros((sheet_h, sheet_w, 3), np.uint8)
        for (x0, y0, x1, y1), (sx, sy) in zip(order, places):
            sheet[sy:sy + y1 - y0 + 2 * c, sx:sx + x1 - x0 + 2 * c] = pixels[y0 - c:y1 + c, x0 - c:x1 + c]
        conv = av.VideoFrame.from_ndarray(sheet, format="rgb24").reformat(format="yuv420p").to_ndarray()
        dst, src = _planes(self._buf, *self._size), _planes(conv, sheet_w, sheet_h)
        for (x0, y0, x1, y1), (sx, sy) in zip(order, places):
            sx, sy = sx + c, sy + c
            sx1, sy1 = sx + x1 - x0, sy + y1 - y0
            dst[0][y0:y1, x0:x1] = src[0][sy:sy1, sx:sx1]
            for k in (1, 2):
                dst[k][y0 // 2:y1 // 2, x0 // 2:x1 // 2] = src[k][sy // 2:sy1 // 2, sx // 2:sx1 // 2]


def _planes(buf: np.ndarray, width: int, height: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Views of the Y, U and V planes in PyAV's (H * 3/2, W) yuv420p array."""
    flat = buf.reshape(-1)
    n = width * height
    return (flat[:n].reshape(height, width), flat[n:n + n // 4].reshape(height // 2, width // 2),
            flat[n + n // 4:n + n // 2].reshape(height // 2, width // 2))


def encode_mp4(positions: Iterable[Any], position_of_frame: list[int], fps: int, path: str | Path, *,
               x264_extra: str = X264_PARAMS) -> None:
    """Write an MP4 whose frame k shows `positions[position_of_frame[k]]` (one per position: PIL images, or
    yuv420p `av.VideoFrame`s already converted with `yuv420p` or `IncrementalYuv420p`). `x264_extra`
    replaces X264_PARAMS (benchmarks/encode_determinism.py compares settings; media use the default).

    `positions` is consumed lazily and in order (frames only move forward through the positions), so a
    renderer can yield them one at a time. The file is written to a temporary name and renamed.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".mp4", dir=path.parent)
    os.close(fd)
    try:
        _encode(iter(positions), position_of_frame, fps, tmp, x264_extra)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; media are ordinary files
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _encode(positions, position_of_frame: list[int], fps: int, out_path: str, x264_extra: str) -> None:
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
                    if isinstance(image, av.VideoFrame):
                        if image.format.name != "yuv420p":
                            raise ValueError(f"position {want} is a {image.format.name} frame; yuv420p frames only")
                        current_frame = image
                    else:
                        current_frame = yuv420p(image)
                    if stream is None:
                        stream = _open_stream(container, fps, current_frame.width, current_frame.height, x264_extra)
                    elif picture_size(current_frame) != (stream.width, stream.height):
                        raise ValueError(f"position {want} is {picture_size(current_frame)}, "
                                         f"the video is {stream.width}x{stream.height}")
            current_frame.pts = k
            for packet in stream.encode(current_frame):
                container.mux(packet)
        if stream is None:
            raise ValueError("no frames to encode")
        for packet in stream.encode():
            container.mux(packet)
    finally:
        container.close()


def _open_stream(container, fps: int, width: int, height: int, x264_extra: str):
    if width % 2 or height % 2:
        raise ValueError(f"yuv420p needs even frame sizes, got {width}x{height}")
    stream = container.add_stream("libx264", rate=fps, options={
        "crf": str(CRF), "preset": PRESET, "threads": "1",
        "x264-params": x264_params(fps, extra=x264_extra),
    })
    stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
    stream.codec_context.thread_count = 1
    return stream
