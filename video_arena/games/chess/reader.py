"""Chess's pixel reader: the moves of a chess video from its pixels (standalone: stdlib + numpy, and the
shared `pixel_reader`; see video_arena/games/pixel_reader.py).

What it knows: the rules, and the render's look (video_arena/games/chess/plugin.py): 548 x 548, a 2 px
edge, 68 px squares, White at the bottom, the last move's two squares tinted. An event is the first frame
whose pair of tinted squares differs from the previous frame's; its time is that frame's, k / fps. The
move is told from the tracked position (which of the two squares holds a piece of the side to move), or,
when tracking is lost, from the pixels (where the mover's colour now stands). A promotion is read as a
queen (the board's pieces are told apart by colour only).

Visible state after each event: `{"fen": FEN}`, the position a watcher who saw every move knows, written
as python-chess writes it (castling rights, an en passant square only when a legal capture exists, the
half-move clock and the move number; nothing of the game's history beyond that).
`state` is a naive balance (material); `delta` is `flat`.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

import pixel_reader as px

READS = "the two tinted squares"

SQ, EDGE = 68, 2
SQUARE_RGB = np.array([(240, 217, 181), (181, 136, 99), (205, 210, 106), (170, 162, 58)], float)  # light, dark, tinted
VALUES = {"P": 1, "N": 3, "B": 3, "R": 5, "Q": 9, "K": 0}
KNIGHT = [(1, 2), (2, 1), (-1, 2), (-2, 1), (1, -2), (2, -1), (-1, -2), (-2, -1)]
KING = [(1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (1, -1), (-1, 1), (-1, -1)]
ROOK_DIRS, BISHOP_DIRS = KING[:4], KING[4:]
#: castling right -> the squares whose piece moving (or being taken) loses it: the king's and the rook's
CASTLING_SQUARES = {"K": ((4, 0), (7, 0)), "Q": ((4, 0), (0, 0)), "k": ((4, 7), (7, 7)), "q": ((4, 7), (0, 7))}
START_FEN = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"


def square_name(f: int, r: int) -> str:
    return "abcdefgh"[f] + str(r + 1)


def tints(img: np.ndarray) -> list[tuple[int, int]]:
    """(file, rank) of the tinted squares: each square's colour from two corner patches away from the piece."""
    out = []
    for r in range(8):
        y = EDGE + (7 - r) * SQ
        for f in range(8):
            x = EDGE + f * SQ
            patch = np.concatenate([img[y + 2:y + 6, x + 2:x + 6].reshape(-1, 3),
                                    img[y + SQ - 6:y + SQ - 2, x + SQ - 6:x + SQ - 2].reshape(-1, 3)]).astype(float)
            c = np.median(patch, axis=0)
            if int(np.argmin(((SQUARE_RGB - c) ** 2).sum(1))) >= 2:
                out.append((f, r))
    return out


def occupancy(img: np.ndarray) -> dict[tuple[int, int], str]:
    """(file, rank) -> 'w' or 'b' for squares that hold a piece (ink near the centre), read from pixels."""
    out = {}
    g = img.astype(int)
    for r in range(8):
        y = EDGE + (7 - r) * SQ
        for f in range(8):
            x = EDGE + f * SQ
            core = g[y + 14:y + SQ - 10, x + 14:x + SQ - 14]
            lum = core.mean(axis=2)
            black = (lum < 45).mean()
            white = (core.min(axis=2) > 245).mean()
            if white > 0.05:
                out[(f, r)] = "w"
            elif black > 0.12:
                out[(f, r)] = "b"
    return out


class Board:
    def __init__(self):
        back = "RNBQKBNR"
        self.b: dict[tuple[int, int], str] = {}
        for f in range(8):
            self.b[(f, 0)], self.b[(f, 1)] = back[f], "P"
            self.b[(f, 7)], self.b[(f, 6)] = back[f].lower(), "p"
        self.white_to_move = True
        self.ep: tuple[int, int] | None = None
        self.castling = "KQkq"
        self.halfmove, self.fullmove = 0, 1

    @staticmethod
    def white(p: str) -> bool:
        return p.isupper()

    def attacked(self, sq: tuple[int, int], by_white: bool) -> bool:
        f, r = sq
        b = self.b
        pawn_r = r - 1 if by_white else r + 1
        for df in (-1, 1):
            p = b.get((f + df, pawn_r))
            if p == ("P" if by_white else "p"):
                return True
        for df, dr in KNIGHT:
            if b.get((f + df, r + dr)) == ("N" if by_white else "n"):
                return True
        for df, dr in KING:
            if b.get((f + df, r + dr)) == ("K" if by_white else "k"):
                return True
        for dirs, kinds in ((ROOK_DIRS, "RQ"), (BISHOP_DIRS, "BQ")):
            for df, dr in dirs:
                x, y = f + df, r + dr
                while 0 <= x < 8 and 0 <= y < 8:
                    p = b.get((x, y))
                    if p:
                        if self.white(p) == by_white and p.upper() in kinds:
                            return True
                        break
                    x, y = x + df, y + dr
        return False

    def king(self, white: bool) -> tuple[int, int] | None:
        return next((s for s, p in self.b.items() if p == ("K" if white else "k")), None)

    def in_check(self, white: bool) -> bool:
        k = self.king(white)
        return k is not None and self.attacked(k, not white)

    def pseudo_moves(self, white: bool):
        for (f, r), p in list(self.b.items()):
            if self.white(p) != white:
                continue
            kind = p.upper()
            if kind == "P":
                d = 1 if white else -1
                if (f, r + d) not in self.b and 0 <= r + d < 8:
                    yield (f, r), (f, r + d)
                    start = 1 if white else 6
                    if r == start and (f, r + 2 * d) not in self.b:
                        yield (f, r), (f, r + 2 * d)
                for df in (-1, 1):
                    t = (f + df, r + d)
                    q = self.b.get(t)
                    if (q and self.white(q) != white) or t == self.ep:
                        yield (f, r), t
            elif kind in "NK":
                for df, dr in (KNIGHT if kind == "N" else KING):
                    t = (f + df, r + dr)
                    if 0 <= t[0] < 8 and 0 <= t[1] < 8:
                        q = self.b.get(t)
                        if not q or self.white(q) != white:
                            yield (f, r), t
            else:
                dirs = ROOK_DIRS if kind == "R" else BISHOP_DIRS if kind == "B" else KING
                for df, dr in dirs:
                    x, y = f + df, r + dr
                    while 0 <= x < 8 and 0 <= y < 8:
                        q = self.b.get((x, y))
                        if q and self.white(q) == white:
                            break
                        yield (f, r), (x, y)
                        if q:
                            break
                        x, y = x + df, y + dr

    def push(self, frm, to, promo: str = "Q") -> dict:
        """Play frm -> to; returns what it was (capture, castle, promotion) and an undo record."""
        b = self.b
        p = b.pop(frm)
        white = self.white(p)
        captured = b.get(to)
        info = {"capture": captured is not None, "castle": False, "promotion": False,
                "undo": (dict(b), self.ep, self.white_to_move, self.castling, self.halfmove, self.fullmove)}
        info["undo"][0][frm] = p
        if p.upper() == "P" and to == self.ep and captured is None:
            b.pop((to[0], frm[1]), None)
            info["capture"] = True
        if p.upper() == "K" and abs(to[0] - frm[0]) == 2:
            info["castle"] = True
            rook_from, rook_to = ((7, frm[1]), (5, frm[1])) if to[0] > frm[0] else ((0, frm[1]), (3, frm[1]))
            if rook_from in b:
                b[rook_to] = b.pop(rook_from)
        pawn = p.upper() == "P"
        if pawn and to[1] in (0, 7):
            p = promo.upper() if white else promo.lower()
            info["promotion"] = True
        b[to] = p
        self.ep = (frm[0], (frm[1] + to[1]) // 2) if pawn and abs(to[1] - frm[1]) == 2 else None
        self.castling = "".join(c for c in self.castling if frm not in CASTLING_SQUARES[c] and to not in CASTLING_SQUARES[c])
        self.halfmove = 0 if pawn or info["capture"] else self.halfmove + 1
        self.fullmove += 0 if white else 1
        self.white_to_move = not white
        return info

    def undo(self, info: dict) -> None:
        (b, self.ep, self.white_to_move, self.castling, self.halfmove, self.fullmove) = info["undo"]
        self.b = dict(b)

    def legal(self, frm, to) -> bool:
        white = self.white(self.b[frm])
        info = self.push(frm, to)
        ok = not self.in_check(white)
        self.undo(info)
        return ok

    def has_legal_move(self, white: bool) -> bool:
        return any(self.legal(frm, to) for frm, to in list(self.pseudo_moves(white)))

    def legal_en_passant(self) -> str:
        """The en passant square when the side to move has a legal en passant capture, else '-'."""
        if self.ep is None:
            return "-"
        pawn = "P" if self.white_to_move else "p"
        r = self.ep[1] + (-1 if self.white_to_move else 1)
        for df in (-1, 1):
            frm = (self.ep[0] + df, r)
            if self.b.get(frm) == pawn and self.legal(frm, self.ep):
                return square_name(*self.ep)
        return "-"

    def fen(self) -> str:
        ranks = []
        for r in range(7, -1, -1):
            text, empty = "", 0
            for f in range(8):
                p = self.b.get((f, r))
                if p is None:
                    empty += 1
                    continue
                text += (str(empty) if empty else "") + p
                empty = 0
            ranks.append(text + (str(empty) if empty else ""))
        return (f"{'/'.join(ranks)} {'w' if self.white_to_move else 'b'} {self.castling or '-'} "
                f"{self.legal_en_passant()} {self.halfmove} {self.fullmove}")

    def material(self) -> int:
        return sum(VALUES[p.upper()] * (1 if self.white(p) else -1) for p in self.b.values())


def read(video: Path, writer, log) -> list[dict]:
    w, h, fps = px.probe(video)
    board = Board()
    seen: list[dict] = []
    prev: frozenset | None = None
    for k, img in px.frames(video, w, h):
        now = frozenset(tints(img))
        if prev is None:
            prev = now
            continue
        if now == prev or len(now) != 2:
            if len(now) not in (0, 2):
                log(f"frame {k}: {len(now)} tinted squares")
            continue
        prev = now
        a, b = sorted(now)
        mover_white = board.white_to_move
        own = lambda s: s in board.b and board.white(board.b[s]) == mover_white  # noqa: E731
        if own(a) and not own(b):
            frm, to = a, b
        elif own(b) and not own(a):
            frm, to = b, a
        else:  # tracking lost: trust the pixels (where the mover's colour now stands)
            occ = occupancy(img)
            c = "w" if mover_white else "b"
            frm, to = (a, b) if occ.get(b) == c else (b, a)
            log(f"frame {k}: ambiguous move {a}-{b}; read as {frm}->{to}")
            if frm not in board.b:
                board.b[frm] = "P" if mover_white else "p"
        info = board.push(frm, to)
        them = board.white_to_move
        if board.in_check(them):
            type_ = "check" if board.has_legal_move(them) else "checkmate"
        elif info["promotion"]:
            type_ = "promotion"
        elif info["castle"]:
            type_ = "castle"
        elif info["capture"]:
            type_ = "capture"
        else:
            type_ = "move"
        m = board.material()
        state = "white" if m >= 2 else "black" if m <= -2 else "even"
        if type_ == "checkmate":
            state = "white" if mover_white else "black"
        writer.add(px.row(k / fps, type_, "white" if mover_white else "black", square_name(*to), state))
        seen.append({"fen": board.fen()})
        occ = occupancy(img)
        mine = {s: ("w" if board.white(p) else "b") for s, p in board.b.items()}
        if occ != mine:
            diff = sorted(set(occ.items()) ^ set(mine.items()))
            log(f"frame {k}: tracked board differs from the pixels at {diff[:6]}")
    return seen
