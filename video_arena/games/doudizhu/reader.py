"""Doudizhu's pixel reader: the turns of a Doudizhu video from its pixels (standalone: stdlib + numpy +
Pillow, and the shared `pixel_reader`; see video_arena/games/pixel_reader.py).

What it knows: the rules, and the render's look (video_arena/games/doudizhu/plugin.py): a 1280 x 720 felt,
60 x 84 cards with the rank at the top left (DejaVu Sans Bold, drawn here the same way as templates), the
landlord's hand fanned at the bottom and the peasants' down the right and left edges, a play area per seat
showing that seat's last action (its cards or the word PASS), cleared when its turn comes. An event is a
frame that differs from the previous one (read one frame later, when the picture has settled); its seat is
the one whose area shows something new (by turn order when unclear).

Visible state after each event: `{"hands": [landlord, peasant_right, peasant_left], "table": [...]}`:
each hand's ranks and each play area's (ranks, `pass` or "" when empty), ranks written low to high
(`3`-`9`, `T`, `J`, `Q`, `K`, `A`, `2`, `B` black joker, `R` red joker). `state` is a naive balance
(cards left); `delta` is `flat`.
"""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import numpy as np

import pixel_reader as px

READS = "the play area that changed, its cards' rank glyphs, the hands left"

CARD_W, CARD_H = 60, 84
PLAY_AREA = {0: (640, 448, 760), 1: (900, 250, 440), 2: (380, 250, 440)}
SEATS = ("landlord", "peasant_right", "peasant_left")
RANKS = "3456789TJQKA2BR"
FONT_DIRS = ["/usr/share/fonts/truetype/dejavu", "/usr/share/fonts/dejavu", "/usr/local/share/fonts"]
LABEL_BOX = (1, 1, 27, 27)  # x0, y0, x1, y1 inside a card: the rank label
HAND_STEP_X, HAND_STEP_Y, HAND_TOP, HAND_EDGE, HAND_BOTTOM = 42, 28, 90, 24, 18


def _font_file(name: str) -> str | None:
    for d in FONT_DIRS:
        if os.path.isfile(os.path.join(d, name)):
            return os.path.join(d, name)
    try:  # matplotlib bundles DejaVu (the sandbox image has matplotlib)
        spec = importlib.util.find_spec("matplotlib")
        if spec and spec.origin:
            p = os.path.join(os.path.dirname(spec.origin), "mpl-data", "fonts", "ttf", name)
            if os.path.isfile(p):
                return p
    except Exception:
        pass
    return None


def rank_templates() -> dict[str, np.ndarray]:
    """Green channel of each rank's corner label drawn the way the render draws it (green: ink of both colours is dark)."""
    # deferred: the reader is standalone (stdlib + numpy + ffmpeg): Pillow is asked for only when the templates are drawn
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


def card_rank(img: np.ndarray, x: int, top: int, templates, w: int) -> tuple[float, str]:
    """(error, rank) of the card whose top-left corner is (x, top), `w` columns of its label visible."""
    best = (1e18, "?")
    bx0, by0, bx1, by1 = LABEL_BOX
    for dx in (-1, 0, 1):
        for dy in (-1, 0, 1):
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
    return best[0], rank


def low_to_high(ranks) -> str:
    return "".join(sorted(ranks, key=RANKS.index))


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

    def fit(n: int, step: float) -> tuple[float, str]:
        total, ranks = 0.0, []
        full = LABEL_BOX[2] - LABEL_BOX[0]
        for j in range(n):
            e, rank = card_rank(img, round(x0 + j * step), top, templates,
                                min(full, int(step) - 2) if j < n - 1 else full)
            total += e
            ranks.append(rank)
        return total / max(1, n), low_to_high(ranks)

    if n is not None:
        return "cards", fit(n, step)[1]
    best = min((fit(m, (max_w - CARD_W) / (m - 1)) + (m,) for m in range(13, 21)), key=lambda x: x[0])
    return "cards", best[1]


def hand_count(img: np.ndarray, seat: int) -> int:
    H, W = img.shape[:2]
    if seat == 0:
        cols = _white_cols(img, H - CARD_H - HAND_BOTTOM + 30, H - HAND_BOTTOM - 4, 0, W)
        return 0 if len(cols) == 0 else max(1, round((cols[-1] - cols[0] + 1 - CARD_W) / HAND_STEP_X) + 1)
    x = W - CARD_W - HAND_EDGE if seat == 1 else HAND_EDGE
    band = img[80:H, x + 30:x + 50].astype(int)
    rows = np.nonzero((band.min(axis=2) > 235).sum(axis=1) > 8)[0]
    return 0 if len(rows) == 0 else max(1, round((rows[-1] - rows[0] + 1 - CARD_H) / HAND_STEP_Y) + 1)


def read_hand(img: np.ndarray, seat: int, templates) -> str:
    """The ranks of a seat's hand, low to high, read card by card from the fan's labels."""
    H, W = img.shape[:2]
    n = hand_count(img, seat)
    full = LABEL_BOX[2] - LABEL_BOX[0]
    if seat == 0:
        x0 = (W - (CARD_W + HAND_STEP_X * (n - 1))) / 2
        places = [(round(x0 + k * HAND_STEP_X), H - CARD_H - HAND_BOTTOM) for k in range(n)]
    else:
        x = W - CARD_W - HAND_EDGE if seat == 1 else HAND_EDGE
        places = [(x, HAND_TOP + k * HAND_STEP_Y) for k in range(n)]
    return low_to_high(card_rank(img, x, y, templates, full)[1] for x, y in places)


def visible_state(img: np.ndarray, templates) -> dict:
    table = []
    for s in (0, 1, 2):
        kind, ranks = read_play(img, s, templates)
        table.append(ranks if kind == "cards" else "pass" if kind == "pass" else "")
    return {"hands": [read_hand(img, s, templates) for s in (0, 1, 2)], "table": table}


def read(video: Path, writer, log) -> list[dict]:
    w, h, fps = px.probe(video)
    try:
        templates = rank_templates()
    except Exception as exc:  # no Pillow or no font: report the plays without their cards
        log(f"no rank templates ({exc!r}): `where` left empty")
        templates = None
    seen: list[dict] = []
    prev_small = None
    prev_areas = None
    pending = None  # (k, frame) of a change, read one frame later (the picture is settled then)

    def areas_of(img):
        return {s: read_play(img, s, None)[0] for s in (0, 1, 2)}

    def emit(k: int, img: np.ndarray, before) -> None:
        now = {s: read_play(img, s, templates) for s in (0, 1, 2)}
        # the actor: the seat whose area shows something new; by turn order when unclear
        turn = len(seen) % 3
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
        writer.add(px.row(k / fps, type_, SEATS[seat], where, state))
        if templates is None:
            seen.append({"hands": ["", "", ""], "table": ["", "", ""]})
        else:
            seen.append(visible_state(img, templates))

    for k, img in px.frames(video, w, h):
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
    return seen
