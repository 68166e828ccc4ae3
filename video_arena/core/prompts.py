"""The prompts of both protocols, one text each for the native runners and the Harbor datasets.

- Protocol A (docs/PROTOCOLS.md, "The request"): the A-rendered instruction, the frame timestamps as an
  explicit `video_ts` array, and the single-reply tail.
- Protocol B (docs/PROTOCOLS.md, "Protocol B: agentic"; docs/HARBOR.md, "A task folder"): the turn-1
  prompt. The same text drives the native runner (prompt.txt beside the sandbox) and the Harbor task
  (instruction.md pointing at /app), so a native number and a Harbor number measure one thing.
"""
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

SANDBOX_FILES = ("match.mp4", "instruction.md", "answer.json")


def turn1_prompt(workdir: str, max_turns: int, timeout_min: float) -> str:
    """The first user turn of a Protocol B cell.  `max_turns` 0 = the harness cannot count turns."""
    if max_turns < 0 or timeout_min <= 0:
        raise ValueError("max_turns must be >= 0 and timeout_min > 0")
    minutes = f"{timeout_min:g}"
    if max_turns:
        budget = (f"You have at most {max_turns} tool-call turns and {minutes} minutes of wall clock. "
                  "Whichever runs out first ends your work.")
    else:
        budget = f"You have {minutes} minutes of wall clock; at the limit your work is stopped."
    return (
        f"Your working directory is {workdir}. It holds exactly three files:\n"
        "- match.mp4: a video of one whole match, the only input;\n"
        "- instruction.md: the task. Read it first and follow it;\n"
        '- answer.json: your answer, which now holds the empty answer {"events": []}.\n'
        "\n"
        "ffmpeg, ffprobe, Python 3 (with numpy, scipy, pandas, Pillow, OpenCV, scikit-image, imageio, "
        "PyAV, matplotlib, pytesseract, tqdm) and tesseract are already installed. Do not install "
        "anything, download anything, use external services or models, or look the match up: work "
        "from the video alone.\n"
        "\n"
        f"{budget} Rewrite answer.json with every row you have as you go, not only at the end: when "
        "the budget runs out, whatever answer.json holds is scored, and rows that are not in it "
        "score nothing. Do not delete or rename answer.json.\n"
    )
