"""Gomoku's pixel reader: the stones of a Gomoku video from its pixels (standalone: stdlib + numpy, and the
shared `pixel_reader`; see video_arena/games/pixel_reader.py).

What it knows: the rules (freestyle five in a row), and the render's look (video_arena/games/gomoku/plugin.py):
504 x 504, 15 lines 31 px apart from a 35 px margin, black and white stones. An event is a frame with a new
stone; its time is that frame's, k / fps; its type is the strongest shape the stone makes in a line through
it (five, four, open three) on the board before it.

Visible state after each event: `{"board": [15 rows, top row first]}`, each row one character per point,
`.` empty, `X` black, `O` white. `state` is a naive balance (the last threat); `delta` is `flat`.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

import pixel_reader as px

READS = "the new stone and removed stones"

SIZE, MARGIN, SPACING = 15, 35, 31
COLUMNS = "ABCDEFGHJKLMNOP"


def _line_level(s: str) -> int:
    """5 five, 4 open four, 3 four, 2 open three, 1 three, 0 less (a 9-cell line centred on own stone)."""
    if "XXXXX" in s:
        return 5
    empties = [i for i, ch in enumerate(s) if ch == "."]
    fives = sum(1 for i in empties if "XXXXX" in s[:i] + "X" + s[i + 1:])
    if fives >= 2:
        return 4
    if fives == 1:
        return 3
    best = max((_line_level(s[:i] + "X" + s[i + 1:]) for i in empties), default=0)
    return {4: 2, 3: 1}.get(best, 0)


def event_type(board: np.ndarray, r: int, c: int, colour: int) -> str:
    n = board.shape[0]
    best = 0
    for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
        s = ""
        for j in range(-4, 5):
            y, x = r + j * dr, c + j * dc
            if j == 0:
                s += "X"
            elif not (0 <= y < n and 0 <= x < n):
                s += "O"
            else:
                v = board[y, x]
                s += "." if v == 0 else "X" if v == colour else "O"
        best = max(best, _line_level(s))
    return {5: "five", 4: "four", 3: "four", 2: "three"}.get(best, "move")


def read(video: Path, writer, log) -> list[dict]:
    seen: list[dict] = []
    for t, before, g, added, _ in px.stone_changes(video, SIZE, MARGIN, SPACING, log):
        r, c = (int(v) for v in added[0])
        colour = int(g[r, c])
        type_ = event_type(before, r, c, colour)
        actor = ("black", "white")[colour - 1]
        state = actor if type_ in ("five", "four") else "even"
        writer.add(px.row(t, type_, actor, f"{COLUMNS[c]}{SIZE - r}", state))
        seen.append({"board": px.stone_rows(g)})
    return seen
