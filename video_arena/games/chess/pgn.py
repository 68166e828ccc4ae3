"""A user's PGN file as chess case records (`video-arena import-cases --game chess --pgn FILE`).

A PGN file holds one game or many.  Every game becomes one record, in file order, shaped as the built-in
selection's (`moves` in UCI from the start, `source` with the headers, `start_fen` only when the game
starts from a set-up position), so `replay`, `evaluate`, `render` and `think_times` work on it unchanged.
Only the main line counts: comments, NAGs and variations are read past (a variation is skipped, never
replayed).  A game the reader cannot take whole (a variant other than standard chess, a FEN that is not
a legal position, an illegal or unreadable move, more plies than MAX_PLIES) still gives a record, with
`reader_error` saying why: `ChessPlugin.refusal` refuses it, so one bad game never hides the others.

Bounds: a file of at most MAX_PGN_BYTES, at most MAX_GAMES games, at most MAX_PLIES plies read per game
(the parser skips the rest of a longer game without replaying it), each header value cut to
MAX_HEADER_CHARS.  The parse is linear in the file (python-chess, variations skipped).
"""
from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import chess
import chess.pgn

from video_arena.digests import sha256_text
from video_arena.safe_io import read_record_text

MAX_PGN_BYTES = 4 * 1024 * 1024
MAX_GAMES = 5000
MAX_PLIES = 600
MAX_HEADER_CHARS = 200
#: `Variant` header values that mean standard chess (lichess writes "From Position" with a FEN).
STANDARD_VARIANTS = frozenset({"", "standard", "chess", "normal", "from position"})
HEADERS = ("event", "site", "date", "round", "white", "black", "result", "eco")


class _MainLine(chess.pgn.BaseVisitor):
    """Collects one game's headers, main-line moves and first error; variations are skipped unread."""

    def begin_game(self):
        self.headers: dict[str, str] = {}
        self.board: chess.Board | None = None
        self.moves: list[str] = []
        self.error = ""
        self.too_long = False

    def visit_header(self, tagname: str, tagvalue: str) -> None:
        self.headers.setdefault(tagname, tagvalue[:MAX_HEADER_CHARS])

    def visit_result(self, result: str) -> None:
        if self.headers.get("Result", "*") == "*":
            self.headers["Result"] = result

    def visit_board(self, board: chess.Board) -> None:
        if self.board is None:
            self.board = board.copy(stack=False)

    def begin_variation(self):
        return chess.pgn.SKIP

    def begin_parse_san(self, board: chess.Board, san: str):
        if len(self.moves) >= MAX_PLIES or self.error:
            self.too_long = self.too_long or not self.error
            return chess.pgn.SKIP
        return None

    def visit_move(self, board: chess.Board, move: chess.Move) -> None:
        self.moves.append(move.uci())

    def handle_error(self, error: Exception) -> None:
        if not self.error:
            self.error = " ".join(str(error).split())[:MAX_HEADER_CHARS]

    def result(self) -> "_MainLine":
        return self


def _variant_problem(headers: dict[str, str], board: chess.Board | None) -> str:
    variant = headers.get("Variant", "").strip()
    if variant.lower() not in STANDARD_VARIANTS:
        return f"a {variant!r} game: only standard chess is read"
    if board is None:
        return "its start position cannot be set up"
    if type(board) is not chess.Board or board.chess960 or board.has_chess960_castling_rights():
        return "a Chess960 or variant position: only standard chess is read"
    if board.status() != chess.STATUS_VALID:
        return f"its FEN {board.fen()!r} is not a legal chess position"
    return ""


def match_key(record: dict[str, Any]) -> str:
    """The game's identity: the start position (EPD: placement, side to move, castling, en passant; the
    move counters are left out) and the moves, whatever file, headers or format it came in."""
    start = chess.Board(record.get("start_fen", chess.STARTING_FEN)).epd()
    return f"chess|{start}|{' '.join(record['moves'])}"


def _record(path: Path, k: int, game: _MainLine) -> dict[str, Any]:
    h = game.headers
    source = {"collection": "imported", "id": "", "format": "pgn", "file": path.name, "game": k}
    source |= {key: h.get(key.upper() if key == "eco" else key.capitalize(), "") for key in HEADERS}
    record: dict[str, Any] = {"source": source, "moves": game.moves}
    problem = _variant_problem(h, game.board)
    if not problem and game.board is not None and game.board.fen() != chess.STARTING_FEN:
        record["start_fen"] = game.board.fen()
    if problem or game.error or game.too_long or not game.moves:
        why = problem or (f"move {len(game.moves) + 1} cannot be read ({game.error})" if game.error
                          else f"more than {MAX_PLIES} plies" if game.too_long else "no move in it")
        record["reader_error"] = f"{path.name} game {k}: {why}"
        source["id"] = f"pgn-unread-{k}"
    else:
        source["id"] = "pgn-" + sha256_text(match_key(record))[:16]
    return record


def read_pgn(path: Path) -> list[dict[str, Any]]:
    """Every game of a PGN file as a record, in file order; ValueError (one line) for a file that is not
    a readable PGN of at most MAX_GAMES games."""
    path = Path(path)
    text = read_record_text(path, MAX_PGN_BYTES)
    stream = io.StringIO(text)
    out: list[dict[str, Any]] = []
    anything = False
    while True:
        game = chess.pgn.read_game(stream, Visitor=_MainLine)
        if game is None:
            break
        if len(out) == MAX_GAMES:
            raise ValueError(f"{path.name}: more than {MAX_GAMES} games; split the file")
        anything = anything or bool(game.headers or game.moves or game.error)
        out.append(_record(path, len(out) + 1, game))
    if not anything:
        raise ValueError(f"{path.name}: no PGN game in it (no tag pair, no move)")
    return out
