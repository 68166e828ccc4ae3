"""The Protocol A prompt (docs/PROTOCOLS.md, "The request"): the A-rendered instruction, the frame timestamps
as an explicit `video_ts` array, and the single-reply tail."""
from __future__ import annotations

import json
from os import PathLike
from typing import Sequence

from video_arena.core.instruction import instruction_for

SINGLE_REPLY_TAIL = (
    "This is a single request. You have no tools, no filesystem and no second turn, and you cannot "
    "ask a follow-up question. Reply with exactly one JSON object of the form "
    '{"events": [ ... ]} holding every row, following the schema above. Put nothing after it.'
)


def format_ts(t: float) -> float | int:
    """A timestamp as it appears in video_ts: an int when whole, else rounded to milliseconds."""
    r = round(float(t), 3)
    return int(r) if r == int(r) else r


def video_ts_block(video_ts: Sequence[float]) -> str:
    ts = [format_ts(t) for t in video_ts]
    return (
        f"The video is given as {len(ts)} frames, in temporal order. Frame k (counting from 0) "
        "shows the match at the time video_ts[k], in seconds from the start of the video; use "
        "these times for `t`.\n"
        f"video_ts = {json.dumps(ts, separators=(',', ':'))}\n"
    )


def protocol_a_prompt(instruction_path: str | PathLike, video_ts: Sequence[float]) -> str:
    """The one user-turn text that accompanies the frames of a Protocol A request."""
    if not len(video_ts):
        raise ValueError("a Protocol A prompt needs at least one frame timestamp")
    if any(b <= a for a, b in zip(video_ts, video_ts[1:])):
        raise ValueError("video_ts must be strictly increasing")
    text = instruction_for("video", instruction_path)
    if not text.endswith("\n"):
        text += "\n"
    return f"{text}\n{video_ts_block(video_ts)}\n{SINGLE_REPLY_TAIL}\n"
