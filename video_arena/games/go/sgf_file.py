"""A user's SGF file as a Go case record (`video-arena import-cases --game go --sgf FILE`).

One file is one game: the first game tree's main line (`rules.parse_sgf`), on a 19x19 board (SZ absent
or 19), with the komi (KM) and handicap stones (AB before the first move, HA) the record gives, and a
result by resignation, time, forfeit or count (RE[B+R], RE[W+3.5], RE[B+T]).  The passes that end a
counted game (after the last stone) are dropped: the game ends at its last stone, as a resignation does.
The record is shaped as the built-in selection's (plugin.load_record), plus `handicap` (the AB points)
only when there are handicap stones, so `replay`, `evaluate` and `render` work on it unchanged.

Refused with one line: a file that is not SGF or holds more than one game tree, another game (GM) or
board size, white or empty setup stones (AW, AE: a composed position), setup stones after a move (an
edited record), an HA that the AB stones do not match, a missing komi or one that is not a whole or half
point within KOMI_LIMIT, a result that is none of the above (a draw, "?", a void game).  The game's own
rules (a decided game, alternating legal moves, no pass mid-game, the length window) are
`plugin.rules_refusal`, the built-in selection's.

Bounds: a file of at most MAX_SGF_BYTES (the parse is one pass over the text, no recursion), at most
MAX_MOVES moves on the main line, at most MAX_HANDICAP handicap stones.
"""
from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from video_arena.digests import sha256_text
from video_arena.games.go.rules import BLACK, WHITE, SgfError, is_pass, parse_sgf, sgf_to_xy
from video_arena.safe_io import read_record_text

MAX_SGF_BYTES = 1024 * 1024
MAX_MOVES = 1000
MAX_HANDICAP = 9
KOMI_LIMIT = 150.0
MAX_PROP_CHARS = 200
SIZE = 19
RESULT_RE = re.compile(r"^([BW])\+(\d+(\.\d+)?|R(esign)?|T(ime)?|F(orfeit)?)?(\s*\(.*\))?$", re.IGNORECASE)


def match_key(record: dict[str, Any]) -> str:
    """The game's identity: the board size, the handicap stones and the moves (komi, players and file
    left out), so the built-in case and the same game read from its SGF give the same key."""
    stones = ",".join(sorted(record.get("handicap", [])))
    moves = " ".join(f"{c}{p}" for c, p in record["moves"])
    return f"go|{int(record.get('size', SIZE))}|{stones}|{moves}"


def _komi(name: str, text: str) -> float:
    try:
        komi = float(text.strip())
    except ValueError:
        raise ValueError(f"{name}: komi KM[{text[:20]}] is not a number") from None
    if not math.isfinite(komi) or abs(komi) > KOMI_LIMIT or komi * 2 != int(komi * 2):
        raise ValueError(f"{name}: komi {text[:20]} is not a whole or half point within +-{KOMI_LIMIT:g}")
    return komi


def _handicap(name: str, game) -> list[str]:
    setup = game.initial_setup
    if game.setup_after_moves:
        raise ValueError(f"{name}: setup stones (AB/AW/AE) after a move: an edited record, not a game")
    if setup.get("AW") or setup.get("AE"):
        raise ValueError(f"{name}: white or empty setup stones (AW/AE): a composed position, not a game")
    stones = [p.strip().lower() for p in setup.get("AB", [])]
    ha_text = game.prop("HA").strip()
    try:
        ha = int(ha_text) if ha_text else len(stones)
    except ValueError:
        raise ValueError(f"{name}: handicap HA[{ha_text[:20]}] is not a number") from None
    if stones and ha != len(stones) or (not stones and ha > 1):
        raise ValueError(f"{name}: HA[{ha_text}] but {len(stones)} handicap stones (AB): the stones must be "
                         "given as AB before the first move")
    if len(stones) > MAX_HANDICAP or len(stones) == 1:
        raise ValueError(f"{name}: {len(stones)} handicap stones; a handicap is 2 to {MAX_HANDICAP}")
    for p in stones:
        try:
            if sgf_to_xy(p, SIZE) is None:
                raise SgfError("a pass")
        except SgfError:
            raise ValueError(f"{name}: handicap stone AB[{p[:10]}] is not a point of the board") from None
    if len(set(stones)) != len(stones):
        raise ValueError(f"{name}: a handicap stone is given twice")
    return stones


def read_sgf(path: Path) -> dict[str, Any]:
    """The record of the one game an SGF file holds; ValueError (one line) when the file cannot be one."""
    path = Path(path)
    name = path.name
    text = read_record_text(path, MAX_SGF_BYTES)
    try:
        game = parse_sgf(text)
    except SgfError as exc:
        raise ValueError(f"{name}: not SGF ({exc})") from None
    if "(" in text[game.end:]:
        raise ValueError(f"{name}: more than one game tree (an SGF collection): give one game per file")
    if game.prop("GM", "1").strip() != "1":
        raise ValueError(f"{name}: GM[{game.prop('GM')[:10]}] is not Go")
    size = game.prop("SZ", str(SIZE)).strip()
    if size not in (str(SIZE), f"{SIZE}:{SIZE}"):
        raise ValueError(f"{name}: a {size[:10]} board; Go cases are 19x19")
    if not game.prop("KM").strip():
        raise ValueError(f"{name}: no komi (KM): V_t depends on it")
    komi = _komi(name, game.prop("KM"))
    handicap = _handicap(name, game)
    result = " ".join(game.prop("RE").split())
    if not RESULT_RE.match(result):
        raise ValueError(f"{name}: result RE[{result[:40]}] is not a win by resignation, time, forfeit or a count "
                         "(B+R, W+3.5, B+T)")
    moves = list(game.moves)
    if len(moves) > MAX_MOVES:
        raise ValueError(f"{name}: {len(moves)} moves, more than the {MAX_MOVES} read")
    for colour, point in moves:
        if colour not in (BLACK, WHITE):
            raise ValueError(f"{name}: a move of colour {colour!r}")
    end_passes = 0
    while moves and is_pass(moves[-1][1], SIZE):
        moves.pop()
        end_passes += 1
    record: dict[str, Any] = {
        "source": {"collection": "imported", "id": "", "format": "sgf", "file": name,
                   "passes_at_end": end_passes},
        **{key: " ".join(game.prop(prop).split())[:MAX_PROP_CHARS]
           for key, prop in (("event", "EV"), ("round", "RO"), ("date", "DT"), ("black", "PB"), ("white", "PW"))},
        "result": result,
        "size": SIZE,
        "komi": komi,
        "rules": "japanese",
        "moves": [[c, p] for c, p in moves],
    }
    if handicap:
        record["handicap"] = handicap
    record["source"]["id"] = "sgf-" + sha256_text(match_key(record))[:16]
    return record
