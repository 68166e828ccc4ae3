"""Go for the Video-Arena Go plugin: a small SGF reader, the board rules and the coordinate convention.

No dependency beyond the standard library.

Coordinates
    SGF point   two letters, column then row, "a" = left column / top row ("pd" = column 16, row 4 from top);
                "" or "tt" (on 19x19) is a pass.
    where       GTP style, lower case: column letter a..t skipping "i", then row 1..19 counted from the
                bottom ("pd" -> "q16", "aa" -> "a19", "as" -> "a1", "ss" -> "t1"); "" for a pass.
    (col, row)  0-based, column from the left, row from the top (the renderer's and the board's indices).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

GTP_COLUMNS = "abcdefghjklmnopqrst"  # no "i"
BLACK, WHITE, EMPTY = "B", "W", "."


class SgfError(ValueError):
    pass


class IllegalMove(ValueError):
    pass


# -- SGF ---------------------------------------------------------------------------------------------

_PROP_RE = re.compile(r"\s*([A-Za-z]+)\s*")


@dataclass
class SgfGame:
    """The main line of one SGF game: root properties and the moves [(colour, sgf point)]."""

    props: dict[str, list[str]]
    moves: list[tuple[str, str]]
    setup: dict[str, list[str]]  # AB/AW/AE found anywhere on the main line (handicap or edits)
    #: AB/AW/AE of the nodes before the first move (the start position: handicap stones), and whether any
    #: setup comes after a move (an edited record); `end`: the offset just past the first game tree.
    initial_setup: dict[str, list[str]] = field(default_factory=dict)
    setup_after_moves: bool = False
    end: int = 0

    def prop(self, key: str, default: str = "") -> str:
        vals = self.props.get(key)
        return vals[0] if vals else default


def parse_sgf(text: str) -> SgfGame:
    """Parse the first game tree of an SGF text and follow its main line (the first variation at every
    branch).  Property identifiers are upper-cased (FF[1-3] files may write e.g. `PlayerBlack`; only the
    capitals count, as the SGF spec says).  Raises SgfError on malformed text."""
    i, n = 0, len(text)
    nodes: list[dict[str, list[str]]] = []
    depth = 0
    started = False
    skip_depth = None  # when inside a non-first variation, the depth at which it started
    seen_child_at: dict[int, bool] = {}
    current: dict[str, list[str]] | None = None
    while i < n:
        c = text[i]
        if c == "(":
            if started and seen_child_at.get(depth) and skip_depth is None:
                skip_depth = depth + 1  # a second variation of the node at `depth`: skip it
            if started:
                seen_child_at[depth] = True
            started = True
            depth += 1
            seen_child_at[depth] = False
            i += 1
        elif c == ")":
            if depth == 0:
                raise SgfError(f"unbalanced ')' at offset {i}")
            if skip_depth is not None and depth == skip_depth:
                skip_depth = None
            depth -= 1
            i += 1
            if depth == 0:
                break  # end of the first game tree
        elif c == ";":
            if not started:
                raise SgfError("a node before the first '('")
            i += 1
            if skip_depth is None:
                current = {}
                nodes.append(current)
            else:
                current = None
        elif c.isalpha():
            m = _PROP_RE.match(text, i)
            assert m is not None
            key = "".join(ch for ch in m.group(1) if ch.isupper())
            i = m.end()
            values = []
            while i < n and text[i] == "[":
                j = i + 1
                buf = []
                while j < n and text[j] != "]":
                    if text[j] == "\\" and j + 1 < n:
                        j += 1
                    buf.append(text[j])
                    j += 1
                if j >= n:
                    raise SgfError(f"unterminated value of {key} at offset {i}")
                values.append("".join(buf))
                i = j + 1
                while i < n and text[i].isspace():
                    i += 1
            if not values:
                raise SgfError(f"property {m.group(1)!r} without a value at offset {m.start()}")
            if current is not None and key:
                current.setdefault(key, []).extend(values)
        elif c.isspace():
            i += 1
        else:
            raise SgfError(f"unexpected {c!r} at offset {i}")
    if not nodes:
        raise SgfError("no game tree")
    if depth != 0:
        raise SgfError("unbalanced '(': the game tree is not closed")
    root = nodes[0]
    moves: list[tuple[str, str]] = []
    setup: dict[str, list[str]] = {}
    initial: dict[str, list[str]] = {}
    after = False
    for node in nodes:
        for key in ("AB", "AW", "AE"):
            if key in node:
                setup.setdefault(key, []).extend(node[key])
                if moves:
                    after = True
                else:
                    initial.setdefault(key, []).extend(node[key])
        has_b, has_w = "B" in node, "W" in node
        if has_b and has_w:
            raise SgfError("a node with both B and W")
        if has_b or has_w:
            colour = BLACK if has_b else WHITE
            moves.append((colour, node[colour][0].strip().lower()))
    return SgfGame(props=root, moves=moves, setup=setup, initial_setup=initial, setup_after_moves=after, end=i)


# -- coordinates -------------------------------------------------------------------------------------

def is_pass(point: str, size: int = 19) -> bool:
    return point == "" or (size <= 19 and point == "tt")


def sgf_to_xy(point: str, size: int = 19) -> tuple[int, int] | None:
    """SGF point -> (col, row) from the top-left, or None for a pass."""
    if is_pass(point, size):
        return None
    if len(point) != 2 or not point.isalpha():
        raise SgfError(f"bad SGF point {point!r}")
    col, row = ord(point[0]) - ord("a"), ord(point[1]) - ord("a")
    if not (0 <= col < size and 0 <= row < size):
        raise SgfError(f"SGF point {point!r} is off a {size}x{size} board")
    return col, row


def xy_to_where(xy: tuple[int, int] | None, size: int = 19) -> str:
    """(col, row) from the top-left -> the answer's `where` ("q16"); None (a pass) -> ""."""
    if xy is None:
        return ""
    col, row = xy
    return f"{GTP_COLUMNS[col]}{size - row}"


def sgf_to_where(point: str, size: int = 19) -> str:
    return xy_to_where(sgf_to_xy(point, size), size)


def sgf_to_gtp(point: str, size: int = 19) -> str:
    """SGF point -> GTP vertex as KataGo takes it ("Q16", "pass")."""
    where = sgf_to_where(point, size)
    return where.upper() if where else "pass"


# -- rules -------------------------------------------------------------------------------------------

class Board:
    """A Go board that plays legal moves: captures, and no suicide.  Ko is not enforced: the records are
    games that were played (a wrong ko retake would show as a replay of a real record, not as an error)."""

    def __init__(self, size: int = 19):
        self.size = size
        self.grid = [[EMPTY] * size for _ in range(size)]  # grid[row][col]

    def copy(self) -> "Board":
        b = Board(self.size)
        b.grid = [r[:] for r in self.grid]
        return b

    def __getitem__(self, xy: tuple[int, int]) -> str:
        return self.grid[xy[1]][xy[0]]

    def neighbours(self, xy: tuple[int, int]):
        c, r = xy
        if c > 0:
            yield (c - 1, r)
        if c < self.size - 1:
            yield (c + 1, r)
        if r > 0:
            yield (c, r - 1)
        if r < self.size - 1:
            yield (c, r + 1)

    def group(self, xy: tuple[int, int]) -> tuple[set[tuple[int, int]], bool]:
        """The chain through xy and whether it has at least one liberty."""
        colour = self[xy]
        chain, stack, has_liberty = {xy}, [xy], False
        while stack:
            p = stack.pop()
            for q in self.neighbours(p):
                v = self[q]
                if v == EMPTY:
                    has_liberty = True
                elif v == colour and q not in chain:
                    chain.add(q)
                    stack.append(q)
        return chain, has_liberty

    def play(self, colour: str, xy: tuple[int, int] | None) -> list[tuple[int, int]]:
        """Play a stone (None = pass); return the opposing stones it captured (sorted).  Raises IllegalMove
        on an occupied point or a suicide."""
        if colour not in (BLACK, WHITE):
            raise ValueError(f"colour must be B or W, got {colour!r}")
        if xy is None:
            return []
        if self[xy] != EMPTY:
            raise IllegalMove(f"{xy_to_where(xy, self.size)} is occupied")
        c, r = xy
        self.grid[r][c] = colour
        other = WHITE if colour == BLACK else BLACK
        captured: set[tuple[int, int]] = set()
        for q in self.neighbours(xy):
            if self[q] == other and q not in captured:
                chain, alive = self.group(q)
                if not alive:
                    captured |= chain
        for qc, qr in captured:
            self.grid[qr][qc] = EMPTY
        if not captured and not self.group(xy)[1]:
            self.grid[r][c] = EMPTY
            raise IllegalMove(f"{xy_to_where(xy, self.size)} is suicide")
        return sorted(captured)

    def stones(self) -> list[tuple[int, int, str]]:
        return [(c, r, self.grid[r][c]) for r in range(self.size) for c in range(self.size)
                if self.grid[r][c] != EMPTY]
