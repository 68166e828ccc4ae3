"""Frame-accurate checks of a built case: what the video must show at a time, and what it does show.

    idx = position_index_at(gt, t)            # number of events at or before t (frame grid)
    img = expected_image(plugin, gt, t)       # re-render of that position (PIL)
    got = decode_frames(mp4, [t1, t2, ...])   # {t: RGB ndarray} decoded with PyAV
    frame_distance(got[t], img)               # mean absolute difference per channel (0..255)

The contract the tests check: the frame at an event's time shows the position after the event and the
frame 1 s before shows the position before it (pacing keeps events >= 1.5 s apart).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

import numpy as np
from PIL import Image, ImageDraw

from video_arena.media.pacing import positions_at_frames, time_to_frame


def event_frames(gt: dict[str, Any]) -> list[int]:
    fps = int(gt["video"]["fps"])
    return [round(e["t"] * fps) for e in gt["events"]]


def position_index_at(gt: dict[str, Any], t: float) -> int:
    """Index of the position the video shows at time t: the number of events at or before t."""
    k = time_to_frame(t, int(gt["video"]["fps"]))
    return sum(1 for ke in event_frames(gt) if ke <= k)


def expected_image(plugin, gt: dict[str, Any], t: float):
    return plugin.render_position(gt["record"], position_index_at(gt, t))


def decode_frames(mp4: str | Path, times: Iterable[float]) -> dict[float, np.ndarray]:
    """RGB frames shown at the given times (one sequential decode; a frame is 'shown at t' when t
    falls in [its start, next frame's start))."""
    # deferred: PyAV (about 0.1 s of CPU), only to decode
    import av

    wanted = sorted(set(times))
    out: dict[float, np.ndarray] = {}
    if not wanted:
        return out
    with av.open(str(mp4)) as container:
        stream = container.streams.video[0]
        fps = float(stream.average_rate or stream.guessed_rate)
        by_frame: dict[int, list[float]] = {}
        for t in wanted:
            by_frame.setdefault(time_to_frame(t, round(fps)), []).append(t)
        last = max(by_frame)
        for frame in container.decode(stream):
            k = round(frame.time * fps)
            if k in by_frame:
                arr = frame.to_ndarray(format="rgb24")
                for t in by_frame[k]:
                    out[t] = arr
            if k >= last:
                break
    missing = [t for t in wanted if t not in out]
    if missing:
        raise ValueError(f"{mp4}: no frame at t={missing[:5]} (video too short?)")
    return out


def frame_distance(frame: np.ndarray, image: Any) -> float:
    """Mean absolute difference (0..255) between a decoded frame and a rendered PIL image."""
    ref = np.asarray(image.convert("RGB"), dtype=np.int16)
    if ref.shape != frame.shape:
        raise ValueError(f"frame is {frame.shape}, the re-render is {ref.shape}")
    return float(np.abs(frame.astype(np.int16) - ref).mean())


def masked_distances(frame: np.ndarray, expected: Any, alternative: Any, threshold: int = 40) -> tuple[float, float]:
    """Mean absolute difference of `frame` to `expected` and to `alternative`, over the pixels where the
    two re-renders differ (by > threshold in some channel): a move changes a few squares of a large
    board, so a whole-frame mean would drown it in H.264 noise. (nan, nan) when they do not differ."""
    a = np.asarray(expected.convert("RGB"), dtype=np.int16)
    b = np.asarray(alternative.convert("RGB"), dtype=np.int16)
    mask = (np.abs(a - b) > threshold).any(axis=2)
    if not mask.any():
        return float("nan"), float("nan")
    f = frame.astype(np.int16)[mask]
    return float(np.abs(f - a[mask]).mean()), float(np.abs(f - b[mask]).mean())


STRIP_OFFSETS_S = (-1.0, -0.4, -0.2, 0.0, 0.2, 0.4, 1.0)


def event_strip(mp4: str | Path, gt: dict[str, Any], index: int, offsets: Iterable[float] = STRIP_OFFSETS_S,
                width: int = 420):
    """A PIL picture of the decoded frames around event `index` (at t + each offset, clamped to the
    video), each captioned with its offset and time, under a title naming the event: what a person
    looks at to see whether the video shows the event when the ground truth says."""

    events = gt["events"]
    if not 0 <= index < len(events):
        raise ValueError(f"event index {index} is out of range: the case has {len(events)} events")
    e = events[index]
    duration = float(gt["video"].get("duration_s") or 0) or None
    times = []
    for off in offsets:
        t = round(e["t"] + off, 3)
        t = max(0.0, t if duration is None else min(t, duration - 1e-3))
        times.append((off, t))
    got = decode_frames(mp4, [t for _, t in times])
    first = got[times[0][1]]
    h = round(first.shape[0] * width / first.shape[1])
    cap, title_h = 18, 24
    sheet = Image.new("RGB", (width * len(times), title_h + h + cap), (255, 255, 255))
    d = ImageDraw.Draw(sheet)
    what = f"event {index}: {e['type']} {e.get('actor', '')} {e.get('where', '')} at t = {e['t']} s"
    d.text((6, 5), what, fill=(0, 0, 0))
    for k, (off, t) in enumerate(times):
        img = Image.fromarray(got[t]).resize((width, h), Image.Resampling.BILINEAR)
        sheet.paste(img, (k * width, title_h))
        label = f"{off:+.1f} s  (t = {t:.2f})" if off else f"at the event (t = {t:.2f})"
        d.text((k * width + 6, title_h + h + 3), label, fill=(200, 0, 0) if off == 0 else (0, 0, 0))
        if off == 0:
            d.rectangle([k * width, title_h, (k + 1) * width - 1, title_h + h - 1], outline=(220, 0, 0), width=3)
    return sheet


def video_info(mp4: str | Path) -> dict[str, Any]:
    # deferred: PyAV (about 0.1 s of CPU), only to decode
    import av

    with av.open(str(mp4)) as container:
        s = container.streams.video[0]
        n = sum(1 for _ in container.demux(s) if True) - 1  # the last demuxed packet is the flush packet
        return {"width": s.codec_context.width, "height": s.codec_context.height,
                "fps": float(s.average_rate or s.guessed_rate), "codec": s.codec_context.name,
                "pix_fmt": s.codec_context.pix_fmt, "n_frames": s.frames or n}


__all__ = ["event_strip", "event_frames", "position_index_at", "expected_image", "decode_frames", "frame_distance",
           "masked_distances", "video_info", "positions_at_frames"]
