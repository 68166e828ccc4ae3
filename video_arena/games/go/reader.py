"""Go's pixel reader: the stones of a Go video from its pixels (standalone: stdlib + numpy, and the shared
`pixel_reader`; see video_arena/games/pixel_reader.py).

What it knows: the rules, and the render's look (video_arena/games/go/plugin.py): 612 x 612, 19 lines
32 px apart from an 18 px margin, black and white stones. An event is a frame whose stones differ from the
previous frame's by a new stone; its time is that frame's, k / fps: `capture` when stones left the board
with it, else `move`. A pass changes nothing on the board, so it is not seen (the same colour then plays
twice in a row, which is logged).

Visible state after each event: `{"board": [19 rows, top row first]}`, each row one character per point,
`.` empty, `X` black, `O` white. `state` is a naive balance (prisoners); `delta` is `flat`.
"""
from __future__ import annotations

from pathlib import Path

import pixel_reader as px

READS = "the new stone and removed stones"

SIZE, MARGIN, SPACING = 19, 18, 32
COLUMNS = "abcdefghjklmnopqrst"


def point_name(r: int, c: int) -> str:
    return COLUMNS[c] + str(SIZE - r)


def read(video: Path, writer, log) -> list[dict]:
    seen: list[dict] = []
    to_move, prisoners = 1, {1: 0, 2: 0}
    for t, _, g, added, removed in px.stone_changes(video, SIZE, MARGIN, SPACING, log):
        r, c = (int(v) for v in added[0])
        colour = int(g[r, c])
        if colour != to_move:  # the other side passed (nothing on screen shows a pass but the turn)
            log(f"t={t}: {('black', 'white')[colour - 1]} plays twice in a row")
        prisoners[colour] += len(removed)
        to_move = 3 - colour
        bal = prisoners[1] - prisoners[2]
        state = "black" if bal >= 3 else "white" if bal <= -3 else "even"
        writer.add(px.row(t, "capture" if len(removed) else "move", ("black", "white")[colour - 1],
                          point_name(r, c), state))
        seen.append({"board": px.stone_rows(g)})
    return seen
