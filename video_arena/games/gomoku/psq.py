"""A Gomocup / Piskvork `.psq` game file as a Gomoku case record (`import-cases --game gomoku --psq FILE`).

The format is what the Piskvork manager writes (and Gomocup publishes its tournament games in):

    Piskvorky 15x15, 11:11, 0        board width x height, the two players' levels, who started (0/1)
    8,8,1500                         one line per stone: x (column from the left), y (row from the top),
    9,8,800                          both from 1, then the milliseconds the move took
    ...
    pbrain-a.zip                     then, as the file has them, the players' names and an end code
    pbrain-b.zip
    -1

Stones alternate Black (the first) and White.  A record is shaped as the built-in selection's (moves in
the game's notation and `result`; V_t's playouts are seeded as for every game, not by the record), so
`replay`, `evaluate` and `render` work on it unchanged.  The file does not name its rule; a freestyle game is what
the moves make it: every stone on an empty point, nothing after the first five (or longer) row, and the
game ending with that row (`plugin.rules_refusal`, the built-in selection's rules).  A standard, renju
or caro game that is not also a complete freestyle game (a win by an opponent's forbidden move, play on
after an overline) is refused by those rules.

Bounds: a file of at most MAX_PSQ_BYTES, a 15x15 header, at most 225 stones, each coordinate 1-15 and
each time at most MAX_MS; the lines after the stones (names, code) are kept only as at most two names of
MAX_NAME_CHARS.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from video_arena.digests import sha256_text
from video_arena.games.gomoku import engine as E
from video_arena.safe_io import read_record_text

MAX_PSQ_BYTES = 64 * 1024
MAX_MS = 10**9
MAX_NAME_CHARS = 100
HEADER_RE = re.compile(r"^Piskvorky\s+(\d{1,4})\s*x\s*(\d{1,4})\s*,\s*(-?\d{1,9})\s*:\s*(-?\d{1,9})\s*,\s*(\d{1,9})\s*$")
MOVE_RE = re.compile(r"^\s*(-?\d{1,4})\s*,\s*(-?\d{1,4})\s*(?:,\s*(-?\d{1,12})\s*)?$")


def match_key(record: dict[str, Any]) -> str:
    """The game's identity: the board and the stones in order (players, times and file left out)."""
    return f"gomoku|{E.SIZE}|{' '.join(record['moves'])}"


def final_result(moves: list[str]) -> str:
    """Who made five (or more) in a row with the last stone ("black"/"white"), "draw" on a full board, else
    "none" (the game stopped without a row: a resignation, a forfeit, a time loss, a forbidden move)."""
    board = E.Board()
    for name in moves:
        i = E.idx_of(*E.parse_coord(name))
        if board.cells[i] != E.EMPTY or board.over:
            return "none"
        board.play(i)
    return {E.BLACK: "black", E.WHITE: "white"}.get(board.winner, "draw" if board.over else "none")


def read_psq(path: Path) -> dict[str, Any]:
    """The record of the game a .psq file holds; ValueError (one line) when the file cannot be one."""
    path = Path(path)
    name = path.name
    lines = read_record_text(path, MAX_PSQ_BYTES).splitlines()
    header = HEADER_RE.match(lines[0].strip()) if lines else None
    if header is None:
        first = lines[0][:60] if lines else ""
        raise ValueError(f"{name}: not a Piskvork .psq file (the first line is {first!r}, not "
                         "'Piskvorky 15x15, L1:L2, S')")
    width, height = int(header.group(1)), int(header.group(2))
    if (width, height) != (E.SIZE, E.SIZE):
        raise ValueError(f"{name}: a {width}x{height} board; Gomoku cases are {E.SIZE}x{E.SIZE} freestyle")
    moves: list[str] = []
    k = 1
    for k, line in enumerate(lines[1:], 1):
        m = MOVE_RE.match(line)
        if m is None:
            break
        x, y = int(m.group(1)), int(m.group(2))
        if len(moves) == E.SIZE * E.SIZE:
            raise ValueError(f"{name}: more than {E.SIZE * E.SIZE} stones on a {E.SIZE}x{E.SIZE} board")
        if not (1 <= x <= E.SIZE and 1 <= y <= E.SIZE):
            raise ValueError(f"{name}: stone {len(moves) + 1} at {x},{y} is off the {E.SIZE}x{E.SIZE} board")
        if m.group(3) is not None and not 0 <= int(m.group(3)) <= MAX_MS:
            raise ValueError(f"{name}: stone {len(moves) + 1} took {m.group(3)} ms, outside 0-{MAX_MS}")
        moves.append(E.coord_name(y - 1, x - 1))
    else:
        k = len(lines)
    if not moves:
        raise ValueError(f"{name}: no stone in it")
    players = [ln.strip()[:MAX_NAME_CHARS] for ln in lines[k:k + 2] if ln.strip() and not MOVE_RE.match(ln)
               and not ln.strip().lstrip("-").isdigit()]
    record: dict[str, Any] = {
        "source": {"collection": "imported", "id": "", "format": "psq", "file": name, "players": players},
        "moves": moves,
        "result": final_result(moves),
    }
    key = match_key(record)
    record["source"]["id"] = "psq-" + sha256_text(key)[:16]
    return record
