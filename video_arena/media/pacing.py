"""Pacing: turn a plugin's think times into event frames on the video's 1/fps grid.

Event i (0-based) appears at frame k_i; frame k shows the position after every event with k_i <= k.
The first event comes `lead_in_s + gaps[0]` after the start, each next one `gaps[i]` after the
previous, and no two events are closer than MIN_GAP_S, so the frame 1 s before an event always shows
the position before it (the pipeline's frame contract, checked by the tests).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

#: Smallest time between two events (s): 1 s (the "frame 1 s before" contract) plus a margin.
MIN_GAP_S = 1.5


@dataclass(frozen=True)
class Schedule:
    fps: int
    event_frames: tuple[int, ...]
    n_frames: int

    @property
    def times(self) -> list[float]:
        return [frame_time(k, self.fps) for k in self.event_frames]

    @property
    def duration_s(self) -> float:
        return frame_time(self.n_frames, self.fps)


def frame_time(k: int, fps: int) -> float:
    """Seconds of frame k, rounded so JSON holds a short, exact-looking number."""
    return round(k / fps, 4)


def time_to_frame(t: float, fps: int) -> int:
    """The frame shown at time t (the last frame whose start is <= t, robust to float noise)."""
    return int(math.floor(t * fps + 1e-6))


def schedule(gaps: list[float], fps: int, lead_in_s: float, tail_s: float,
             min_gap_s: float = MIN_GAP_S) -> Schedule:
    if fps < 1:
        raise ValueError(f"fps must be >= 1, got {fps}")
    min_gap = max(1, math.ceil(min_gap_s * fps - 1e-9))
    frames: list[int] = []
    k = round(lead_in_s * fps)
    for i, gap in enumerate(gaps):
        if not (gap > 0 and math.isfinite(gap)):
            raise ValueError(f"think time {i} is {gap!r}: must be a finite number > 0")
        step = max(min_gap, round(gap * fps))
        k += step
        frames.append(k)
    n_frames = (frames[-1] if frames else k) + max(1, round(tail_s * fps)) + 1
    return Schedule(fps=fps, event_frames=tuple(frames), n_frames=n_frames)


def schedule_from_times(times: list[float], fps: int, n_frames: int) -> Schedule:
    """The schedule a ground truth file describes (its event times are on the 1/fps grid)."""
    frames = tuple(round(t * fps) for t in times)
    for t, k in zip(times, frames):
        if abs(k / fps - t) > 1e-3:
            raise ValueError(f"event time {t} is not on the 1/{fps} s grid")
    return Schedule(fps=fps, event_frames=frames, n_frames=n_frames)


def positions_at_frames(event_frames: tuple[int, ...] | list[int], n_frames: int) -> list[int]:
    """For every frame, the index of the position it shows (= number of events at or before it)."""
    out, i = [], 0
    for k in range(n_frames):
        while i < len(event_frames) and event_frames[i] <= k:
            i += 1
        out.append(i)
    return out
