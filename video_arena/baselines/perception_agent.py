#!/usr/bin/env python3
"""A perception agent for the built-in board and card games: reads match.mp4's pixels, nothing else.

    python3 perception_agent.py --sandbox DIR          (DIR holds match.mp4, instruction.md, answer.json)

Protocol B agent (video-arena run-b --agent-cmd 'python3 .../perception_agent.py --sandbox {sandbox}').
Standalone on purpose: Python 3.11 stdlib + numpy (+ Pillow for Doudizhu's rank glyphs) + ffmpeg/ffprobe,
the sandbox image's toolset; it imports nothing from the toolkit and opens no file but the sandbox's
three (and a system font for Doudizhu's glyph templates).

What it knows: the game's rules and the render's look (board geometry, colours, card layout), as a
human viewer of the renders would. What it reads: every frame, decoded by ffmpeg at the video's own
frame rate. An event is the first frame whose board (or table) differs from the previous frame's; the
event time is that frame's time, k / fps. `delta` is always `flat`; `state` is a naive balance
(material for chess, prisoners for go, the last threat for gomoku, cards left for doudizhu).
answer.json is rewritten (atomically) every few events and at the end.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np


# -- video ---------------------------------------------------------------------------------------------

def probe(video: Path) -> tuple[int, int, float]:
    out = subprocess.run(
        ["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=width,height,r_frame_rate",
         "-of", "json", str(video)], capture_output=True, text=True, check=True).stdout
    s = json.loads(out)["streams"][0]
    num, _, den = s["r_frame_rate"].partition("/")
    return int(s["width"]), int(s["height"]), float(num) / float(den or 1)


def frames(video: Path, width: int, height: int, pix_fmt: str = "rgb24"):
    """Yield (k, frame) for every frame in decode order: HxWx3 (rgb24) or HxW (gray) uint8 arrays."""
    ch = 3 if pix_fmt == "rgb24" else 1
    size = width * height * ch
    proc = subprocess.Popen(["ffmpeg", "-v", "error", "-nostdin", "-i", str(video), "-map", "0:v:0",
                             "-vsync", "passthrough", "-f", "rawvideo", "-pix_fmt", pix_fmt, "-"],
                            stdout=subprocess.PIPE)
    try:
        k = 0
        while True:
            buf = proc.stdout.read(size)
            if len(buf) < size:
                break
            a = np.frombuffer(buf, np.uint8)
            yield k, (a.reshape(height, width, 3) if ch == 3 else a.reshape(height, width))
            k += 1
    finally:
        proc.stdout.close()
        proc.wait()


class Writer:
    """Keeps the rows and rewrites answer.json atomically every `every` rows and at the end."""

    def __init__(self, path: Path, every: int = 10):
        self.path, self.every, self.rows = path, every, []

    def add(self, row: dict) -> None:
        self.rows.append(row)
        if len(self.rows) % self.every == 0:
            self.flush()

    def flush(self) -> None:
        tmp = self.path.with_name(".answer.json.tmp")
        tmp.write_text(json.dumps({"events": self.rows}, indent=0))
        os.replace(tmp, self.path)


def row(t: float, type_: str, actor: str, where: str, state: str) -> dict:
    return {"t": round(t, 3), "type": type_, "actor": actor, "where": where, "delta": "flat", "state": state}


# -- chess ---------------------------------------------------------------------------------------------
# Render: 548 x 548, 2 px edge, 68 px squares, White at the bottom; last move's two squares tinted.
SQ, EDGE = 68, 2
SQUARE_RGB = np.array([(240, 217, 181), (181, 136, 99), (205, 210, 106), (170, 162, 58)], float)  # light, dark, tinted
VALUES = {"P": 1, "N": 3, "B": 3, "R": 5, "Q": 9, "K": 0}
KNIGHT = [(1, 2), (2, 1), (-1, 2), (-2, 1), (1, -2), (2, -1), (-1, -2), (-2, -1)]
KING = [(1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (1, -1), (-1, 1), (-1, -1)]
ROOK_DIRS, BISHOP_DIRS = KING[:4], KING[4:]


def chess_square_name(f: int, r: int) -> str:
    return "abcdefgh"[f] + str(r + 1)


def chess_tints(img: np.ndarray) -> list[tuple[int, int]]:
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


def chess_occupancy(img: np.ndarray) -> dict[tuple[int, int], str]:
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


class ChessBoard:
    def __init__(self):
        back = "RNBQKBNR"
        self.b: dict[tuple[int, int], str] = {}
        for f in range(8):
            self.b[(f, 0)], self.b[(f, 1)] = back[f], "P"
            self.b[(f, 7)], self.b[(f, 6)] = back[f].lower(), "p"
        self.white_to_move = True
        self.ep: tuple[int, int] | None = None

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
                "undo": (dict(b), self.ep, self.white_to_move)}
        info["undo"][0][frm] = p
        if p.upper() == "P" and to == self.ep and captured is None:
            b.pop((to[0], frm[1]), None)
            info["capture"] = True
        if p.upper() == "K" and abs(to[0] - frm[0]) == 2:
            info["castle"] = True
            rook_from, rook_to = ((7, frm[1]), (5, frm[1])) if to[0] > frm[0] else ((0, frm[1]), (3, frm[1]))
            if rook_from in b:
                b[rook_to] = b.pop(rook_from)
        if p.upper() == "P" and to[1] in (0, 7):
            p = promo.upper() if white else promo.lower()
            info["promotion"] = True
        b[to] = p
        self.ep = (frm[0], (frm[1] + to[1]) // 2) if p.upper() == "P" and abs(to[1] - frm[1]) == 2 else None
        self.white_to_move = not white
        return info

    def undo(self, info: dict) -> None:
        self.b, self.ep, self.white_to_move = dict(info["undo"][0]), info["undo"][1], info["undo"][2]

    def has_legal_move(self, white: bool) -> bool:
        for frm, to in list(self.pseudo_moves(white)):
            info = self.push(frm, to)
            ok = not self.in_check(white)
            self.undo(info)
            if ok:
                return True
        return False

    def material(self) -> int:
        return sum(VALUES[p.upper()] * (1 if self.white(p) else -1) for p in self.b.values())


def chess(video: Path, writer: Writer, log) -> None:
    w, h, fps = probe(video)
    board = ChessBoard()
    prev: frozenset | None = None
    for k, img in frames(video, w, h):
        tints = frozenset(chess_tints(img))
        if prev is None:
            prev = tints
            continue
        if tints == prev or len(tints) != 2:
            if len(tints) not in (0, 2):
                log(f"frame {k}: {len(tints)} tinted squares")
            continue
        prev = tints
        a, b = sorted(tints)
        mover_white = board.white_to_move
        own = lambda s: s in board.b and board.white(board.b[s]) == mover_white  # noqa: E731
        if own(a) and not own(b):
            frm, to = a, b
        elif own(b) and not own(a):
            frm, to = b, a
        else:  # tracking lost: trust the pixels (where the mover's colour now stands)
            occ = chess_occupancy(img)
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
        writer.add(row(k / fps, type_, "white" if mover_white else "black", chess_square_name(*to), state))
        occ = chess_occupancy(img)
        mine = {s: ("w" if board.white(p) else "b") for s, p in board.b.items()}
        if occ != mine:
            diff = sorted(set(occ.items()) ^ set(mine.items()))
            log(f"frame {k}: tracked board differs from the pixels at {diff[:6]}")


# -- go and gomoku -------------------------------------------------------------------------------------

def stone_grid(gray: np.ndarray, n: int, margin: int, spacing: int, off: int = 3, size: int = 5) -> np.ndarray:
    """n x n array (row 0 at the top): 0 empty, 1 black, 2 white, from a patch beside each point."""
    idx = margin + np.arange(n) * spacing + off
    rows = idx[:, None] + np.arange(size)[None, :]
    patch = gray[rows[:, None, :, None], rows[None, :, None, :]]  # (n, n, size, size)
    # gray[y, x]: y = rows of row r, x = rows of column c
    m = patch.reshape(n, n, -1).mean(axis=2)
    out = np.zeros((n, n), np.int8)
    out[m < 100] = 1
    out[m > 205] = 2
    return out


def go_name(r: int, c: int) -> str:
    return "abcdefghjklmnopqrst"[c] + str(19 - r)


def stone_changes(video: Path, n: int, margin: int, spacing: int, log):
    """(time, board before, board after, added, removed) for every frame whose stones differ from the
    previous frame's (`added`, `removed`: arrays of (row, col))."""
    w, h, fps = probe(video)
    prev = None
    for k, gray in frames(video, w, h, "gray"):
        g = stone_grid(gray, n, margin, spacing)
        if prev is not None and not np.array_equal(g, prev):
            added = np.argwhere((g != 0) & (prev == 0))
            removed = np.argwhere((g == 0) & (prev != 0))
            changed = int(np.sum((g != 0) & (prev != 0) & (g != prev)))
            if len(added) != 1 or changed:
                log(f"frame {k}: {len(added)} stones added, {changed} changed colour, {len(removed)} removed")
            if len(added):
                yield k / fps, prev, g, added, removed
        prev = g


def go(video: Path, writer: Writer, log) -> None:
    to_move, prisoners = 1, {1: 0, 2: 0}
    for t, _, g, added, removed in stone_changes(video, 19, 18, 32, log):
        r, c = (int(v) for v in added[0])
        colour = int(g[r, c])
        if colour != to_move:  # the other side passed (nothing on screen shows a pass but the turn)
            log(f"t={t}: {('black', 'white')[colour - 1]} plays twice in a row")
        prisoners[colour] += len(removed)
        to_move = 3 - colour
        bal = prisoners[1] - prisoners[2]
        state = "black" if bal >= 3 else "white" if bal <= -3 else "even"
        writer.add(row(t, "capture" if len(removed) else "move", ("black", "white")[colour - 1],
                       go_name(r, c), state))


GOMOKU_COLUMNS = "ABCDEFGHJKLMNOP"


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


def gomoku_type(board: np.ndarray, r: int, c: int, colour: int) -> str:
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


def gomoku(video: Path, writer: Writer, log) -> None:
    for t, before, g, added, _ in stone_changes(video, 15, 35, 31, log):
        r, c = (int(v) for v in added[0])
        colour = int(g[r, c])
        type_ = gomoku_type(before, r, c, colour)
        actor = ("black", "white")[colour - 1]
        state = actor if type_ in ("five", "four") else "even"
        writer.add(row(t, type_, actor, f"{GOMOKU_COLUMNS[c]}{15 - r}", state))


# -- doudizhu ------------------------------------------------------------------------------------------
# Render: 1280 x 720 felt; 60 x 84 cards; play areas (centre x, top y, max width) per seat; the acting
# seat's play (cards or PASS) appears in its area and the next seat's area is cleared.
CARD_W, CARD_H = 60, 84
PLAY_AREA = {0: (640, 448, 760), 1: (900, 250, 440), 2: (380, 250, 440)}
SEATS = ("landlord", "peasant_right", "peasant_left")
RANKS = "3456789TJQKA2BR"
FONT_DIRS = ["/usr/share/fonts/truetype/dejavu", "/usr/share/fonts/dejavu", "/usr/local/share/fonts"]


def _font_file(name: str) -> str | None:
    for d in FONT_DIRS:
        if os.path.isfile(os.path.join(d, name)):
            return os.path.join(d, name)
    try:  # matplotlib bundles DejaVu (the sandbox image has matplotlib)
        import importlib.util
        spec = importlib.util.find_spec("matplotlib")
        if spec and spec.origin:
            p = os.path.join(os.path.dirname(spec.origin), "mpl-data", "fonts", "ttf", name)
            if os.path.isfile(p):
                return p
    except Exception:
        pass
    return None


LABEL_BOX = (1, 1, 27, 27)  # x0, y0, x1, y1 inside a card: the rank label


def rank_templates() -> dict[str, np.ndarray]:
    """Green channel of each rank's corner label drawn the way the render draws it (green: ink of both colours is dark)."""
    from PIL import Image, ImageDraw, ImageFont

    bold, regular = _font_file("DejaVuSans-Bold.ttf"), _font_file("DejaVuSans.ttf")
    if not bold or not regular:
        raise FileNotFoundError("DejaVu fonts not found")
    out = {}
    for rank in RANKS:
        img = Image.new("RGB", (CARD_W, CARD_H), (250, 250, 246))
        d = ImageDraw.Draw(img)
        if rank in "BR":
            d.text((5, 2), "\u2605", fill=(20, 20, 20), font=ImageFont.truetype(regular, 22))
            f = ImageFont.truetype(bold, 10)
            for j, ch in enumerate("JOKER"):
                d.text((12, 30 + j * 10), ch, fill=(20, 20, 20), font=f, anchor="mt")
        else:
            label = "10" if rank == "T" else rank
            d.text((3 if len(label) > 1 else 6, 3), label, fill=(20, 20, 20),
                   font=ImageFont.truetype(bold, 19 if len(label) > 1 else 21))
        x0, y0, x1, y1 = LABEL_BOX
        out[rank] = np.asarray(img, dtype=float)[y0:y1, x0:x1, 1]
    return out


def _white_cols(img: np.ndarray, y0: int, y1: int, x0: int, x1: int) -> np.ndarray:
    band = img[y0:y1, x0:x1].astype(int)
    white = (band.min(axis=2) > 235).sum(axis=0)
    return np.nonzero(white > (y1 - y0) // 3)[0] + x0


def read_play(img: np.ndarray, seat: int, templates) -> tuple[str, str]:
    """('empty'|'pass'|'cards', ranks low to high) of a seat's play area."""
    cx, top, max_w = PLAY_AREA[seat]
    cols = _white_cols(img, top + 30, top + CARD_H - 4, max(0, cx - max_w // 2 - 4), min(img.shape[1], cx + max_w // 2 + 4))
    if len(cols) == 0:
        region = img[top + 20:top + CARD_H - 20, cx - 60:cx + 60].astype(int)
        text = ((region[..., 0] > 200) & (region[..., 2] > 160) & (region[..., 1] > 200)).sum()
        return ("pass", "") if text > 50 else ("empty", "")
    width = int(cols[-1] - cols[0] + 1)
    x0 = int(cols[0])
    if width < max_w - 2:
        n = max(1, round((width - CARD_W) / 30) + 1)
        step = 30.0
    else:  # squeezed fan: step = (max_w - CARD_W) / (n - 1); pick n by label fit below
        n, step = None, None
    if templates is None:
        return "cards", ""

    def read(n: int, step: float) -> tuple[float, str]:
        total, ranks = 0.0, []
        for j in range(n):
            x = round(x0 + j * step)
            best = (1e18, "?")
            for dx in (-1, 0, 1):
                for dy in (-1, 0, 1):
                    bx0, by0, bx1, by1 = LABEL_BOX
                    w = min(bx1 - bx0, int(step) - 2) if j < n - 1 else bx1 - bx0
                    crop = img[top + by0 + dy:top + by1 + dy, x + bx0 + dx:x + bx0 + dx + w, 1].astype(float)
                    for rank, tpl in templates.items():
                        e = float(((crop - tpl[:, :w]) ** 2).mean())
                        if e < best[0]:
                            best = (e, rank)
            rank = best[1]
            if rank in "BR":  # joker: colour decides small (black) or big (red)
                crop = img[top + 2:top + 24, x + 4:x + 24].astype(int)
                ink = crop[..., 1] < 120
                red = (crop[..., 0][ink] > 120).mean() if ink.any() else 0
                rank = "R" if red > 0.5 else "B"
            total += best[0]
            ranks.append(rank)
        return total / max(1, n), "".join(sorted(ranks, key=RANKS.index))

    if n is not None:
        return "cards", read(n, step)[1]
    best = min((read(m, (max_w - CARD_W) / (m - 1)) + (m,) for m in range(13, 21)), key=lambda x: x[0])
    return "cards", best[1]


def hand_count(img: np.ndarray, seat: int) -> int:
    H, W = img.shape[:2]
    if seat == 0:
        cols = _white_cols(img, H - CARD_H - 18 + 30, H - 18 - 4, 0, W)
        return 0 if len(cols) == 0 else max(1, round((cols[-1] - cols[0] + 1 - CARD_W) / 42) + 1)
    x = W - CARD_W - 24 if seat == 1 else 24
    band = img[80:H, x + 30:x + 50].astype(int)
    rows = np.nonzero((band.min(axis=2) > 235).sum(axis=1) > 8)[0]
    return 0 if len(rows) == 0 else max(1, round((rows[-1] - rows[0] + 1 - CARD_H) / 28) + 1)


def doudizhu(video: Path, writer: Writer, log) -> None:
    w, h, fps = probe(video)
    try:
        templates = rank_templates()
    except Exception as exc:  # no Pillow or no font: report the plays without their cards
        log(f"no rank templates ({exc!r}): `where` left empty")
        templates = None
    prev_small = None
    prev_areas = None
    pending = None  # (k, frame) of a change, read one frame later (the picture is settled then)
    n_events = 0

    def areas_of(img):
        return {s: read_play(img, s, None)[0] for s in (0, 1, 2)}

    def emit(k: int, img: np.ndarray, before) -> None:
        nonlocal n_events
        now = {s: read_play(img, s, templates) for s in (0, 1, 2)}
        # the actor: the seat whose area shows something new; by turn order when unclear
        turn = n_events % 3
        cands = [s for s in (0, 1, 2) if now[s][0] != "empty" and (before is None or before[s] != now[s][0] or s == turn)]
        seat = turn if turn in cands or not cands else cands[0]
        kind, ranks = now[seat]
        left = hand_count(img, seat)
        if kind == "pass":
            type_, where = "pass", ""
        elif left == 0:
            type_, where = "win", ranks
        elif ranks == "BR":
            type_, where = "rocket", ranks
        elif len(ranks) == 4 and len(set(ranks)) == 1:
            type_, where = "bomb", ranks
        else:
            type_, where = "play", ranks
        counts = [hand_count(img, s) for s in (0, 1, 2)]
        if type_ == "win":
            state = "landlord" if seat == 0 else "peasants"
        else:
            lead = min(counts[1], counts[2]) - counts[0]
            state = "landlord" if lead >= 4 else "peasants" if lead <= -4 else "even"
        writer.add(row(k / fps, type_, SEATS[seat], where, state))
        n_events += 1

    for k, img in frames(video, w, h):
        small = img[::8, ::8].astype(np.int16)
        if pending is not None:
            pk, pimg, before = pending
            same = np.abs(small - prev_small).max() < 40
            emit(pk, img if same else pimg, before)
            prev_areas = areas_of(img if same else pimg)
            pending = None
            if same:
                prev_small = small
                continue
        if prev_small is None:
            prev_small = small
            prev_areas = areas_of(img)
            continue
        if np.abs(small - prev_small).max() >= 40 and (np.abs(small - prev_small) >= 40).sum() >= 4:
            pending = (k, img.copy(), prev_areas)
        prev_small = small
    if pending is not None:
        emit(pending[0], pending[1], pending[2])


# -- main ----------------------------------------------------------------------------------------------
GAMES = {"chess": chess, "go": go, "gomoku": gomoku, "doudizhu": doudizhu}


def game_of(instruction: str) -> str:
    m = re.search(r"^#\s*Video-Arena:\s*(.+)$", instruction, re.M)
    title = (m.group(1) if m else "").strip().lower()
    for name in GAMES:
        if title == name:
            return name
    raise SystemExit(f"perception agent: unsupported game {title!r} (instruction.md's title)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sandbox", default=".", help="the sandbox folder (default: the working directory)")
    ap.add_argument("--game", help="override the game read from instruction.md's title")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    sandbox = Path(args.sandbox)
    video, answer = sandbox / "match.mp4", sandbox / "answer.json"
    game = args.game or game_of((sandbox / "instruction.md").read_text(encoding="utf-8"))
    log = (lambda msg: None) if args.quiet else (lambda msg: print(f"[{game}] {msg}", file=sys.stderr))
    writer = Writer(answer)
    try:
        GAMES[game](video, writer, log)
    finally:
        writer.flush()
    print(f"perception agent: {game}: {len(writer.rows)} events written to {answer}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
