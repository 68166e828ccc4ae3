"""The project's own Gomoku engine: 15x15, five in a row, freestyle (an overline of six or more wins).

No dependency beyond the standard library. Three parts:

* Rules: `Board` (play / undo, five detection incl. overlines, full-board draw).
* Pattern evaluation: for every empty point, every direction and both colours, the shape the colour
  would make by playing there, read from the 9-point window centred on the point (radius 4 holds every
  five, open four and open three through the point).  Shapes (`LEVEL_*`): five, open four (two or more
  points complete a five in that line), four (exactly one), open three (one more stone makes an open
  four), three (one more stone makes a four), open two, two.  They are kept up to date incrementally:
  a stone changes only the 4 x 8 windows through it.
* Play: `Engine` = threat-ordered candidate scoring (`greedy`) or negamax alpha-beta over the best
  `width` candidates to `depth` plies with a static evaluation (`search`), with seeded tie-breaking
  and an optional seeded softmax temperature.  `rollout_value` is the V_t evaluator: seeded
  epsilon-greedy playouts from the exact position.

Coordinates: (row, col) with row 0 at the TOP of the array; the public notation (`coord_name`) is Go's:
columns A..P without I from the left, rows 1..15 from the bottom.
"""
from __future__ import annotations

import math
import random
from functools import lru_cache

SIZE = 15
PAD = 4
W = SIZE + 2 * PAD
EMPTY, BLACK, WHITE, EDGE = 0, 1, 2, 3
DIRS = (1, W, W + 1, W - 1)
COLUMNS = "ABCDEFGHJKLMNOP"  # Go convention: no I
BOARD_IDX = tuple((r + PAD) * W + (c + PAD) for r in range(SIZE) for c in range(SIZE))

LEVEL_NONE, LEVEL_TWO, LEVEL_OPEN2, LEVEL_THREE, LEVEL_OPEN3, LEVEL_FOUR, LEVEL_OPEN4, LEVEL_FIVE = range(8)
LEVEL_WEIGHT = (0, 20, 150, 200, 2_000, 2_500, 50_000, 1_000_000)
SCORE_WIN = 1_000_000
SCORE_THREAT = 50_000   # open four, double four, four-three: wins unless the opponent has a five first
SCORE_DOUBLE3 = 20_000


def idx_of(r: int, c: int) -> int:
    return (r + PAD) * W + (c + PAD)


def rc_of(idx: int) -> tuple[int, int]:
    return idx // W - PAD, idx % W - PAD


def coord_name(r: int, c: int) -> str:
    """Go-style name of array point (r, c): column letter (no I), then row number counted from the bottom."""
    return f"{COLUMNS[c]}{SIZE - r}"


def parse_coord(name: str) -> tuple[int, int]:
    name = name.strip().upper()
    c = COLUMNS.index(name[0])
    n = int(name[1:])
    if not 1 <= n <= SIZE:
        raise ValueError(f"bad coordinate {name!r}")
    return SIZE - n, c


# -- line shapes ---------------------------------------------------------------------------------------
@lru_cache(maxsize=None)
def _level_of_line(s: str) -> int:
    """Shape of a 9-character line (X own, . empty, O blocked) whose centre is an own stone."""
    if "XXXXX" in s:
        return LEVEL_FIVE
    empties = [i for i, ch in enumerate(s) if ch == "."]
    fives = sum(1 for i in empties if "XXXXX" in s[:i] + "X" + s[i + 1:])
    if fives >= 2:
        return LEVEL_OPEN4
    if fives == 1:
        return LEVEL_FOUR
    best = max((_level_of_line(s[:i] + "X" + s[i + 1:]) for i in empties), default=LEVEL_NONE)
    return {LEVEL_OPEN4: LEVEL_OPEN3, LEVEL_FOUR: LEVEL_THREE, LEVEL_OPEN3: LEVEL_OPEN2,
            LEVEL_THREE: LEVEL_TWO}.get(best, LEVEL_NONE)


def _build_table() -> list[int]:
    """LEVEL for every window key: 8 neighbours (-4..-1, +1..+4), base 3 (0 empty, 1 own, 2 blocked)."""
    table = []
    for key in range(3 ** 8):
        digits = []
        k = key
        for _ in range(8):
            digits.append(k % 3)
            k //= 3
        digits.reverse()
        chars = [".XO"[d] for d in digits]
        table.append(_level_of_line("".join(chars[:4]) + "X" + "".join(chars[4:])))
    return table


LEVEL_TABLE = _build_table()
_level_of_line.cache_clear()


def combine(levels) -> int:
    """Score of a point from its 4 direction shapes for one colour."""
    total = 0
    fours = opens3 = 0
    for lv in levels:
        if lv == LEVEL_FIVE:
            return SCORE_WIN
        total += LEVEL_WEIGHT[lv]
        if lv >= LEVEL_FOUR:
            fours += 1 + (lv == LEVEL_OPEN4)
        elif lv == LEVEL_OPEN3:
            opens3 += 1
    if fours >= 2 or (fours and opens3):
        total += SCORE_THREAT
    elif opens3 >= 2:
        total += SCORE_DOUBLE3
    return total


_WINDOW_LEVELS: dict[tuple[int, ...], tuple[int, int]] = {}
_COMBINED: dict[tuple[int, ...], int] = {}
_REL = {BLACK: (0, 1, 2, 2), WHITE: (0, 2, 1, 2)}  # cell value -> 0 empty, 1 own, 2 blocked


def _window_levels(key: tuple[int, ...]) -> tuple[int, int]:
    """(Black's level, White's level) of the 8 cells around an empty point (raw cell values)."""
    out = []
    for color in (BLACK, WHITE):
        rel = _REL[color]
        k = 0
        for v in key:
            k = k * 3 + rel[v]
        out.append(LEVEL_TABLE[k])
    return out[0], out[1]


# -- board ---------------------------------------------------------------------------------------------
class Board:
    """15x15 board with incrementally maintained per-point shape levels for both colours."""

    def __init__(self) -> None:
        self.cells = [EDGE] * (W * W)
        for i in BOARD_IDX:
            self.cells[i] = EMPTY
        # levels[color][idx*4 + d], score[color][idx]; colour index 1/2 (0 unused)
        self.levels = [None, [0] * (W * W * 4), [0] * (W * W * 4)]
        self.score = [None, [0] * (W * W), [0] * (W * W)]
        self.moves: list[int] = []
        self.winner = 0  # BLACK / WHITE once a five is made
        for i in BOARD_IDX:
            for d in range(4):
                self._update(i, d)
            self._rescore(i)

    def copy(self) -> "Board":
        b = Board.__new__(Board)
        b.cells = self.cells[:]
        b.levels = [None, self.levels[1][:], self.levels[2][:]]
        b.score = [None, self.score[1][:], self.score[2][:]]
        b.moves = self.moves[:]
        b.winner = self.winner
        return b

    @property
    def to_move(self) -> int:
        return BLACK if len(self.moves) % 2 == 0 else WHITE

    @property
    def over(self) -> bool:
        return self.winner != 0 or len(self.moves) == SIZE * SIZE

    def _update(self, i: int, d: int) -> None:
        o = DIRS[d]
        c = self.cells
        key = (c[i - 4 * o], c[i - 3 * o], c[i - 2 * o], c[i - o], c[i + o], c[i + 2 * o], c[i + 3 * o], c[i + 4 * o])
        lv = _WINDOW_LEVELS.get(key)
        if lv is None:
            lv = _WINDOW_LEVELS[key] = _window_levels(key)
        self.levels[1][i * 4 + d], self.levels[2][i * 4 + d] = lv

    def _rescore(self, i: int) -> None:
        if self.cells[i] != EMPTY:
            self.score[1][i] = self.score[2][i] = 0
            return
        b = i * 4
        for color in (1, 2):
            key = tuple(self.levels[color][b:b + 4])
            sc = _COMBINED.get(key)
            if sc is None:
                sc = _COMBINED[key] = combine(key)
            self.score[color][i] = sc

    def _refresh_around(self, i: int) -> None:
        cells = self.cells
        touched = {i}
        for d, o in enumerate(DIRS):
            for step in (-4, -3, -2, -1, 0, 1, 2, 3, 4):
                j = i + step * o
                if cells[j] == EMPTY:
                    self._update(j, d)
                    touched.add(j)
        for j in touched:
            self._rescore(j)

    def level(self, color: int, i: int) -> list[int]:
        return self.levels[color][i * 4:i * 4 + 4]

    def play(self, i: int) -> None:
        if self.cells[i] != EMPTY or self.over:
            raise ValueError(f"illegal move {i} ({'game over' if self.over else 'occupied'})")
        color = self.to_move
        makes_five = LEVEL_FIVE in self.level(color, i)
        self.cells[i] = color
        self.moves.append(i)
        if makes_five:
            self.winner = color
        self._refresh_around(i)

    def undo(self) -> None:
        i = self.moves.pop()
        self.cells[i] = EMPTY
        self.winner = 0
        self._refresh_around(i)

    def has_five_through(self, i: int) -> bool:
        """Direct check (no tables): the stone at i is part of five or more in a row."""
        color = self.cells[i]
        for o in DIRS:
            n = 1
            for sgn in (1, -1):
                j = i + sgn * o
                while self.cells[j] == color:
                    n += 1
                    j += sgn * o
            if n >= 5:
                return True
        return False

    def empties(self) -> list[int]:
        return [i for i in BOARD_IDX if self.cells[i] == EMPTY]


# -- move choice ---------------------------------------------------------------------------------------
DEFENCE = 0.9


def move_scores(board: Board, color: int) -> list[tuple[float, int]]:
    """(score, point) of every empty point with any shape for either colour, best first (ties: index)."""
    me, opp = board.score[color], board.score[3 - color]
    cells = board.cells
    out = [(me[i] + DEFENCE * opp[i], i) for i in BOARD_IDX
           if cells[i] == EMPTY and (me[i] or opp[i])]
    if not out:
        centre = idx_of(SIZE // 2, SIZE // 2)
        if cells[centre] == EMPTY:
            return [(1.0, centre)]
        out = [(0.0, i) for i in BOARD_IDX if cells[i] == EMPTY]
    out.sort(key=lambda t: (-t[0], t[1]))
    return out


def static_eval(board: Board, color: int) -> float:
    """Evaluation for `color`, the side to move."""
    me, opp = board.score[color], board.score[3 - color]
    cells = board.cells
    best_me = best_opp = 0
    tot_me = tot_opp = 0
    n_opp_five = 0
    for i in BOARD_IDX:
        if cells[i] != EMPTY:
            continue
        a, b = me[i], opp[i]
        tot_me += a
        tot_opp += b
        if a > best_me:
            best_me = a
        if b > best_opp:
            best_opp = b
        if b >= SCORE_WIN:
            n_opp_five += 1
    if best_me >= SCORE_WIN:
        return 1e9
    if n_opp_five >= 2:
        return -1e9
    if best_me >= SCORE_THREAT and best_opp < SCORE_WIN:
        return 1e8
    return (best_me + 0.1 * tot_me) - DEFENCE * (best_opp + 0.1 * tot_opp)


class Engine:
    """A move chooser. mode 'greedy' (1 ply, threat-ordered scores) or 'search' (alpha-beta).

    temperature > 0 samples among candidates within the top `width` with softmax over the score
    ratio (seeded); epsilon > 0 plays a uniformly random top-5 candidate with that probability.
    """

    def __init__(self, mode: str = "search", depth: int = 2, width: int = 8,
                 temperature: float = 0.0, epsilon: float = 0.0) -> None:
        if mode not in ("greedy", "search", "random"):
            raise ValueError(mode)
        self.mode, self.depth, self.width = mode, depth, width
        self.temperature, self.epsilon = temperature, epsilon

    def spec(self) -> dict:
        return {"mode": self.mode, "depth": self.depth, "width": self.width,
                "temperature": self.temperature, "epsilon": self.epsilon}

    def choose(self, board: Board, rng: random.Random) -> int:
        color = board.to_move
        if self.mode == "random":
            return rng.choice(board.empties())
        cands = move_scores(board, color)
        # forced replies are never randomised: win now, or block the opponent's five
        if cands[0][0] >= DEFENCE * SCORE_WIN:
            return cands[0][1]
        if self.epsilon and rng.random() < self.epsilon:
            return rng.choice(cands[:5])[1]
        if self.mode == "greedy":
            scored = cands
        else:
            scored = self._search_root(board, color, cands[:self.width])
        return self._pick(scored, rng)

    def _pick(self, scored: list[tuple[float, int]], rng: random.Random) -> int:
        """The best move; with temperature > 0, a seeded choice among the near-best (never in tactics)."""
        best = scored[0][0]
        if self.temperature > 0 and abs(best) < SCORE_THREAT:
            margin = self.temperature * max(100.0, abs(best))
            near = [(s, i) for s, i in scored[:self.width] if s >= best - margin]
            weights = [math.exp((s - best) / margin * 3.0) for s, _ in near]
            return rng.choices([i for _, i in near], weights=weights)[0]
        ties = [i for s, i in scored if s == best]
        return ties[0] if len(ties) == 1 else rng.choice(ties)

    def _search_root(self, board: Board, color: int, cands) -> list[tuple[float, int]]:
        out = []
        alpha = -math.inf
        for _, i in cands:
            board.play(i)
            v = 1e9 + 1 if board.winner else -self._negamax(board, self.depth - 1, -math.inf, -alpha)
            board.undo()
            out.append((v, i))
            alpha = max(alpha, v)
        out.sort(key=lambda t: (-t[0], t[1]))
        # only exact values matter for the best move; others are bounds, kept for the softmax order
        return out

    def _negamax(self, board: Board, depth: int, alpha: float, beta: float) -> float:
        color = board.to_move
        if depth <= 0 or len(board.moves) == SIZE * SIZE:
            return static_eval(board, color)
        cands = move_scores(board, color)
        if cands[0][0] >= SCORE_WIN:
            return 1e9  # a five is available
        best = -math.inf
        for _, i in cands[:self.width]:
            board.play(i)
            v = 1e9 if board.winner else -self._negamax(board, depth - 1, -beta, -alpha)
            board.undo()
            if v > best:
                best = v
            if best > alpha:
                alpha = best
            if alpha >= beta:
                break
        return best


# -- games and rollouts --------------------------------------------------------------------------------
def play_game(black: Engine, white: Engine, seed: int, opening_random: int = 0,
              max_moves: int = SIZE * SIZE) -> Board:
    """A seeded game.  The first `opening_random` moves are random points within 2 of the centre."""
    rng = random.Random(seed)
    board = Board()
    while not board.over and len(board.moves) < max_moves:
        if len(board.moves) < opening_random:
            c = SIZE // 2
            near = [idx_of(r, q) for r in range(c - 2, c + 3) for q in range(c - 2, c + 3)
                    if board.cells[idx_of(r, q)] == EMPTY]
            board.play(rng.choice(near))
            continue
        eng = black if board.to_move == BLACK else white
        board.play(eng.choose(board, rng))
    return board


ROLLOUT_POLICY = Engine(mode="greedy", temperature=0.0, epsilon=0.15)


def rollout_value(board: Board, n: int, seed: int, policy: Engine = ROLLOUT_POLICY) -> float:
    """Black's win chance (draw = 1/2) from `board` over n seeded playouts of `policy` for both sides."""
    if board.winner:
        return 1.0 if board.winner == BLACK else 0.0
    if len(board.moves) == SIZE * SIZE:
        return 0.5
    total = 0.0
    for k in range(n):
        rng = random.Random(seed * 1_000_003 + k)  # same seeds at every position: common random numbers
        b = board.copy()
        while not b.over:
            b.play(policy.choose(b, rng))
        total += 1.0 if b.winner == BLACK else 0.0 if b.winner == WHITE else 0.5
    return total / n
