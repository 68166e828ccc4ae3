"""Chess: real World Championship games (1886-1985), V_t from Stockfish, a HUD-free 548x548 board.

Records come from `data/chess_masters_WCC.pgn.bz2` (685 games, as shipped by Debian's python3-networkx;
see data/README.md for its provenance and licence). The build selects decisive games of 40-140 plies.
V_t is White's expected score from Stockfish's WDL (Debian `stockfish`, fixed node budget, one thread,
16 MB hash cleared before every position: `ucinewgame`); see docs/CASES.md, "Chess" for the measured
class shares and why this model and band.
"""
from __future__ import annotations

import bz2
import functools
import io
import math
import os
import random
import shutil
from pathlib import Path
from typing import Any, Iterator

import chess
import chess.pgn
from PIL import Image, ImageDraw, ImageFont

from video_arena.digests import sha256_file
from video_arena.games.base import GamePlugin, Step
from video_arena.games.chess.pgn import match_key, read_pgn

DATA = Path(__file__).resolve().parent / "data" / "chess_masters_WCC.pgn.bz2"
COLLECTION = "wcc-1886-1985"
SOURCE_TEXT = ("World Chess Championship games 1886-1985 (685 games), file chess_masters_WCC.pgn.bz2 from the "
               "NetworkX examples as shipped by Debian python3-networkx 2.8.8-1")
LICENCE = ("game scores are historical facts; the file is distributed with NetworkX under BSD-3-Clause "
           "(see video_arena/games/chess/data/README.md)")

MIN_PLIES, MAX_PLIES = 40, 140
#: Decisive games of 40-140 plies whose recorded result the final position does not support (Stockfish
#: 15.1, 50k nodes, measured once over all 317 such games: the winner is not ahead by more than the band,
#: e.g. a loss on time, an adjournment or a wrong result in the file). Excluded so V_t and result agree:
#: 446 Smyslov-Botvinnik 1958 "1-0" (final V 0.011), 462 Botvinnik-Tal 1960 "1-0" (0.536),
#: 625 Korchnoi-Karpov 1981 "1-0" (0.489).
EXCLUDED_INDICES: frozenset[int] = frozenset({446, 462, 625})

STOCKFISH_ENV = "VA_STOCKFISH"
NODES = 50_000
HASH_MB = 16
WDL_MODEL = "stockfish"  # "stockfish": the engine's own UCI_ShowWDL; see docs/CASES.md

# -- rendering constants (548 = 8 * 68 + 2 * 2) --
SQUARE, BORDER = 68, 2
SIZE = 8 * SQUARE + 2 * BORDER
LIGHT, DARK, EDGE = (240, 217, 181), (181, 136, 99), (60, 40, 25)
LAST_LIGHT, LAST_DARK = (205, 210, 106), (170, 162, 58)
GLYPH = {"k": "\u265a", "q": "\u265b", "r": "\u265c", "b": "\u265d", "n": "\u265e", "p": "\u265f"}
OUTLINE = {"k": "\u2654", "q": "\u2655", "r": "\u2656", "b": "\u2657", "n": "\u2658", "p": "\u2659"}


@functools.lru_cache(maxsize=1)
def load_games() -> list[tuple[dict[str, str], list[str]]]:
    """[(headers, UCI moves)] of every game in the collection, in file order."""
    text = bz2.decompress(DATA.read_bytes()).decode("latin-1")
    out = []
    stream = io.StringIO(text)
    while True:
        game = chess.pgn.read_game(stream)
        if game is None:
            break
        if game.errors:
            raise ValueError(f"{DATA.name}: game {len(out)} does not parse: {game.errors[0]}")
        out.append((dict(game.headers), [m.uci() for m in game.mainline_moves()]))
    return out


def classify(board: chess.Board, move: chess.Move) -> str:
    """The event type of `move` played on `board` (before the move), by the game.toml precedence."""
    capture = board.is_capture(move)
    castle = board.is_castling(move)
    promotion = move.promotion is not None
    board.push(move)
    try:
        if board.is_checkmate():
            return "checkmate"
        if board.is_check():
            return "check"
    finally:
        board.pop()
    return "promotion" if promotion else "castle" if castle else "capture" if capture else "move"


def boards(record: dict[str, Any]) -> Iterator[tuple[chess.Board, chess.Move | None]]:
    """(position after i moves, the i-th move) for i = 0..n (the move is None for the start)."""
    board = chess.Board(record.get("start_fen", chess.STARTING_FEN))
    yield board.copy(stack=False), None
    for uci in record["moves"]:
        move = chess.Move.from_uci(uci)
        if not board.is_legal(move):
            raise ValueError(f"illegal move {uci} in {record['source']['id']} at ply {board.ply()}")
        board.push(move)
        yield board.copy(stack=False), move


def stockfish_path() -> str:
    path = os.environ.get(STOCKFISH_ENV) or shutil.which("stockfish") or "/usr/games/stockfish"
    if not Path(path).is_file():
        raise FileNotFoundError(f"Stockfish not found (apt-get install stockfish, or set ${STOCKFISH_ENV})")
    return path


@functools.lru_cache(maxsize=1)
def stockfish_version() -> str:
    # deferred: python-chess's engine module (asyncio, about 0.1 s of CPU); only V_t needs it
    import chess.engine

    engine = chess.engine.SimpleEngine.popen_uci(stockfish_path())
    try:
        return str(engine.id.get("name", "unknown"))
    finally:
        engine.quit()


@functools.lru_cache(maxsize=1)
def font_path() -> Path:
    """DejaVu Sans as bundled with matplotlib (a pinned pip dependency, so renders match across hosts)."""
    # deferred: matplotlib (about 0.2 s of CPU here, 3.2 s cold) only to find the font it bundles
    import matplotlib

    path = Path(matplotlib.get_data_path()) / "fonts" / "ttf" / "DejaVuSans.ttf"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: matplotlib's DejaVuSans.ttf is missing")
    return path


@functools.lru_cache(maxsize=1)
def sprites() -> dict[str, Any]:
    """12 RGBA piece images (SQUARE x SQUARE), keyed by python-chess symbols ('P', 'k', ...)."""

    font = ImageFont.truetype(str(font_path()), 58)
    out = {}
    for kind in GLYPH:
        for white in (True, False):
            img = Image.new("RGBA", (SQUARE, SQUARE), (0, 0, 0, 0))
            d = ImageDraw.Draw(img)
            c = (SQUARE / 2, SQUARE / 2 + 1)
            if white:
                d.text(c, GLYPH[kind], font=font, fill=(255, 255, 255, 255), anchor="mm")
                d.text(c, OUTLINE[kind], font=font, fill=(0, 0, 0, 255), anchor="mm")
            else:
                d.text(c, GLYPH[kind], font=font, fill=(0, 0, 0, 255), anchor="mm")
            out[kind.upper() if white else kind] = img
    return out


@functools.lru_cache(maxsize=1)
def empty_board():
    img = Image.new("RGB", (SIZE, SIZE), EDGE)
    d = ImageDraw.Draw(img)
    for sq in chess.SQUARES:
        x, y = square_xy(sq)
        d.rectangle([x, y, x + SQUARE - 1, y + SQUARE - 1], fill=LIGHT if is_light(sq) else DARK)
    return img


def square_xy(square: int) -> tuple[int, int]:
    """Top-left pixel of a square, White at the bottom (rank 1 at the bottom, file a on the left)."""
    return BORDER + chess.square_file(square) * SQUARE, BORDER + (7 - chess.square_rank(square)) * SQUARE


def is_light(square: int) -> bool:
    return (chess.square_file(square) + chess.square_rank(square)) % 2 == 1


def draw(board: chess.Board, last: chess.Move | None):
    img = empty_board().copy()
    if last is not None:  # last-move squares tinted, as on any broadcast board
        d = ImageDraw.Draw(img)
        for sq in (last.from_square, last.to_square):
            x, y = square_xy(sq)
            d.rectangle([x, y, x + SQUARE - 1, y + SQUARE - 1], fill=LAST_LIGHT if is_light(sq) else LAST_DARK)
    sp = sprites()
    for sq, piece in board.piece_map().items():
        img.paste(sp[piece.symbol()], square_xy(sq), sp[piece.symbol()])
    return img


@functools.lru_cache(maxsize=1)
def _candidates(plugin: "ChessPlugin") -> tuple[int, ...]:
    """The collection's selectable games (its rules replayed once per process: about a second of python-chess)."""
    return tuple(i for i in range(len(load_games()))
                 if i not in EXCLUDED_INDICES and not plugin.refusal(plugin.record_of(i)))


def _read_board(feature: dict[str, Any]) -> chess.Board | None:
    try:
        board = chess.Board(str(feature.get("fen")))
    except ValueError:
        return None
    return board if board.is_valid() else None


class ChessPlugin(GamePlugin):
    name = "chess"
    fps = 2
    lead_in_s = 4.0
    tail_s = 8.0
    value_range = (0.0, 1.0)

    # -- records -----------------------------------------------------------------------------------
    def candidates(self) -> list[int]:
        """The collection's games the cases may use: the game's rules (`refusal`) and not EXCLUDED_INDICES."""
        return list(_candidates(self))

    def record_of(self, index: int) -> dict[str, Any]:
        h, moves = load_games()[index]
        return {
            "source": {
                "collection": COLLECTION, "id": f"wcc-{index:03d}", "index": index,
                "event": h.get("Event", ""), "site": h.get("Site", ""), "date": h.get("Date", ""),
                "round": h.get("Round", ""), "white": h.get("White", ""), "black": h.get("Black", ""),
                "result": h.get("Result", ""), "eco": h.get("ECO", ""),
            },
            "moves": moves,
        }

    def select_records(self, n: int, seed: int) -> list[dict[str, Any]]:
        cands = self.candidates()
        if n > len(cands):
            raise ValueError(f"chess: {n} cases asked, {len(cands)} candidate games")
        picked = random.Random(f"chess/select/{seed}").sample(cands, n)
        return [self.record_of(i) for i in picked]

    # -- a user's PGN file (game.toml [import] record_formats) ----------------------------------------
    def records_from_files(self, fmt: str, paths: list[Path]) -> list[dict[str, Any]]:
        """Every game of the PGN files, in file order (a game the reader could not take whole carries
        `reader_error`, which `refusal` gives)."""
        if fmt != "pgn":
            raise ValueError(f"chess reads no {fmt!r} files, only PGN")
        return [record for path in paths for record in read_pgn(Path(path))]

    def record_from_files(self, fmt: str, paths: list[Path]) -> dict[str, Any]:
        """The one game these PGN files hold, or with several, the first that qualifies (`refusal`);
        ValueError with the first game's refusal when none does."""
        records = self.records_from_files(fmt, paths)
        for record in records:
            if not self.refusal(record):
                return record
        first = self.refusal(records[0])
        more = f" (and none of the other {len(records) - 1} games qualifies)" if len(records) > 1 else ""
        raise ValueError(f"{first}{more}")

    def refusal(self, record: dict[str, Any]) -> str:
        """The rules every case's game meets, the built-in selection's and an import's: standard chess read
        whole, a decisive result (1-0 or 0-1), MIN_PLIES..MAX_PLIES plies, every move legal, and a final
        position that does not contradict the result (a mate of the winner, a stalemate)."""
        src = record["source"]
        where = f"{src.get('file', src.get('id'))} game {src['game']}" if "game" in src else src.get("id", "")
        if record.get("reader_error"):
            return str(record["reader_error"])
        result = src.get("result", "")
        if result not in ("1-0", "0-1"):
            return f"{where}: result {result or '(none)'!r} is not decisive (1-0 or 0-1)"
        n = len(record["moves"])
        if not MIN_PLIES <= n <= MAX_PLIES:
            return f"{where}: {n} plies, outside the {MIN_PLIES}-{MAX_PLIES} a case has"
        board = chess.Board(record.get("start_fen", chess.STARTING_FEN))
        for ply, uci in enumerate(record["moves"], 1):
            try:
                move = chess.Move.from_uci(uci)
            except ValueError:
                return f"{where}: move {uci!r} at ply {ply} is not a move"
            if not board.is_legal(move):
                return f"{where}: illegal move {uci} at ply {ply}"
            board.push(move)
        outcome = board.outcome(claim_draw=False)
        if outcome is not None and outcome.result() != result:
            return f"{where}: the final position is {outcome.termination.name.lower()} ({outcome.result()}), not {result}"
        return ""

    def match_key(self, record: dict[str, Any]) -> str:
        return match_key(record)

    def replay(self, record: dict[str, Any]) -> list[Step]:
        steps = []
        board = chess.Board(record.get("start_fen", chess.STARTING_FEN))
        for uci in record["moves"]:
            move = chess.Move.from_uci(uci)
            if not board.is_legal(move):
                raise ValueError(f"illegal move {uci} in {record['source']['id']} at ply {board.ply()}")
            steps.append(Step(classify(board, move), "white" if board.turn == chess.WHITE else "black",
                              chess.square_name(move.to_square)))
            board.push(move)
        return steps

    # -- V_t ---------------------------------------------------------------------------------------
    def evaluator(self) -> dict[str, Any]:
        return {"engine": stockfish_version(), "nodes": NODES, "threads": 1, "hash_mb": HASH_MB,
                "ucinewgame_per_position": True, "wdl_model": WDL_MODEL}

    def evaluate(self, record: dict[str, Any], progress=None) -> list[float]:
        return self._values([b for b, _ in boards(record)], progress)

    def _values(self, positions: list[chess.Board | None], progress=None) -> list[float]:
        """V of each position; None (a position that cannot be read) repeats the value before it."""
        # deferred: python-chess's engine module (asyncio, about 0.1 s of CPU); only V_t needs it
        import chess.engine

        values: list[float] = []
        engine = chess.engine.SimpleEngine.popen_uci(stockfish_path())
        try:
            engine.configure({"Threads": 1, "Hash": HASH_MB, "UCI_ShowWDL": True})
            for i, board in enumerate(positions):
                values.append(self._value(engine, board) if board is not None else values[-1] if values else 0.5)
                if progress:
                    progress(i + 1, len(positions))
        finally:
            engine.quit()
        return values

    @staticmethod
    def _value(engine, board: chess.Board) -> float:
        # deferred: python-chess's engine module (asyncio, about 0.1 s of CPU); only V_t needs it
        import chess.engine

        outcome = board.outcome(claim_draw=False)
        if outcome is not None:  # mate, stalemate, insufficient material: the rules decide
            return 1.0 if outcome.winner is chess.WHITE else 0.0 if outcome.winner is chess.BLACK else 0.5
        # game=object() makes python-chess send ucinewgame: hash cleared, every position independent
        info = engine.analyse(board, chess.engine.Limit(nodes=NODES), game=object())
        wdl = info.get("wdl")
        if wdl is None:
            raise RuntimeError(f"Stockfish gave no WDL for {board.fen()} (UCI_ShowWDL unsupported?)")
        return float(wdl.white().expectation())

    def final_value(self, record: dict[str, Any]) -> float | None:
        return {"1-0": 1.0, "0-1": 0.0}.get(record["source"].get("result"))

    # -- what the video shows ----------------------------------------------------------------------
    def visible_features(self, record: dict[str, Any]) -> list[dict[str, Any]]:
        """{"fen": the position after each move}: the board drawn, and what a watcher of every move knows
        of it (side to move, castling rights, en passant, the half-move clock and move number)."""
        return [{"fen": board.fen()} for board, move in boards(record) if move is not None]

    def visible_values(self, features: list[dict[str, Any]], record_meta: dict[str, Any]) -> list[float]:
        """Stockfish as `evaluate` runs it on the start position and each read position: the same V_t when
        the read is right (a watcher sees every move, so nothing V_t uses is hidden); a position that is
        not a legal chess position repeats the value before it."""
        return self._values([chess.Board(), *(_read_board(f) for f in features)])

    # -- rendering ---------------------------------------------------------------------------------
    def render(self, record: dict[str, Any]):
        for board, move in boards(record):
            yield draw(board, move)

    def render_position(self, record: dict[str, Any], index: int):
        if not 0 <= index <= len(record["moves"]):
            raise IndexError(f"position {index} of a {len(record['moves'])}-move record")
        board = chess.Board(record.get("start_fen", chess.STARTING_FEN))
        for uci in record["moves"][:index]:
            board.push(chess.Move.from_uci(uci))
        return draw(board, chess.Move.from_uci(record["moves"][index - 1]) if index else None)

    # -- pacing ------------------------------------------------------------------------------------
    def think_times(self, record: dict[str, Any], rng: random.Random) -> list[float]:
        """Seconds before each move: a per-game tempo (rapid to classical), fast opening book moves,
        lognormal middlegame thinking with occasional long thinks, quick recaptures and forced replies."""
        tempo = math.exp(rng.uniform(math.log(0.3), math.log(2.4)))
        book_plies = 2 * rng.randint(4, 10)
        gaps = []
        board = chess.Board(record.get("start_fen", chess.STARTING_FEN))
        last_capture_sq = None
        for ply, uci in enumerate(record["moves"]):
            move = chess.Move.from_uci(uci)
            recapture = last_capture_sq is not None and move.to_square == last_capture_sq and board.is_capture(move)
            forced = board.is_check() and board.legal_moves.count() <= 2
            if ply < book_plies:
                gap = rng.uniform(1.8, 6.0)
            elif recapture or forced:
                gap = rng.uniform(2.0, 6.0)
            else:
                gap = tempo * rng.lognormvariate(math.log(13.0), 0.75)
                if rng.random() < 0.04:  # a long think
                    gap += tempo * rng.uniform(40, 110)
            gaps.append(round(min(180.0, max(1.6, gap)), 2))
            last_capture_sq = move.to_square if board.is_capture(move) else None
            board.push(move)
        return gaps

    # -- provenance --------------------------------------------------------------------------------
    def provenance(self) -> dict[str, Any]:
        return {
            "source": SOURCE_TEXT,
            "data_file": f"video_arena/games/chess/data/{DATA.name}",
            "data_sha256": sha256_file(DATA),
            "licence": LICENCE,
            "selection": f"decisive games (1-0 / 0-1) of {MIN_PLIES}-{MAX_PLIES} plies, seeded sample",
            "engine": "Stockfish (Debian package stockfish), GPL-3.0; the version is in each case's evaluator",
            "budget": {"nodes_per_position": NODES, "threads": 1, "hash_mb": HASH_MB, "ucinewgame_per_position": True},
            "v_t": f"White's expected score W + D/2 from Stockfish's WDL (model: {WDL_MODEL}); "
                   "terminal positions from the rules",
            "renderer": {"size": [SIZE, SIZE], "font": "DejaVu Sans (matplotlib's bundled copy)",
                         "font_sha256": sha256_file(font_path()),
                         "hud": "none: board, pieces and last-move tint only"},
        }

    def case_summary(self, record: dict[str, Any]) -> dict[str, Any]:
        return {"collection": record["source"]["collection"], "id": record["source"]["id"]}


PLUGIN = ChessPlugin()
