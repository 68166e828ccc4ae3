"""The badminton picture: a fixed broadcast-like camera behind the near baseline, 1280x720, no text.

The court (lines, surround, net) is drawn once (supersampled) as the background; each frame pastes a few
cheap sprites over it: both players (a shirt-coloured body and a head, with a shadow; player_a red,
player_b blue, whichever end they are at), the shuttle (white, drawn at its height) and its shadow on the
floor (the height cue: the further the shuttle from its shadow, the higher it flies).  `Canvas` redraws only
where the sprites were and are, for `IncrementalYuv420p`.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from PIL import Image, ImageDraw

from video_arena.games.badminton import records as R
from video_arena.games.badminton.scene import NET_H, Scene

W, H = 1280, 720
SS = 2
CAM = np.array([R.COURT_W / 2, R.COURT_L + 8.0, 7.0])   # 8 m behind the near baseline, 7 m up
TARGET = np.array([R.COURT_W / 2, 7.4, 0.0])
FOCAL = 900.0
#: sprites stay this far inside the picture (IncrementalYuv420p converts the whole frame otherwise)
EDGE = 30

SURROUND = (24, 62, 78)
COURT = (36, 118, 86)
LINE = (236, 236, 236)
NET_MESH = (18, 22, 26)
NET_TAPE = (245, 245, 245)
PLAYER_RGB = {"a": (214, 58, 48), "b": (46, 104, 214)}
SKIN = (224, 180, 140)
SHORTS = (30, 30, 36)
SHUTTLE = (255, 255, 255)
SHADOW = (8, 30, 24)
PLAYER_H = 1.75


def _basis():
    fwd = TARGET - CAM
    fwd = fwd / np.linalg.norm(fwd)
    right = np.cross(fwd, [0.0, 0.0, 1.0])
    right = right / np.linalg.norm(right)
    up = np.cross(right, fwd)
    return fwd, right, up


_FWD, _RIGHT, _UP = _basis()


def project(x: float, y: float, z: float = 0.0) -> tuple[float, float, float]:
    """Court metres -> (pixel x, pixel y, pixels per metre at that depth)."""
    d = np.array([x, y, z]) - CAM
    depth = float(d @ _FWD)
    s = FOCAL / depth
    return W / 2 - s * float(d @ _RIGHT), H / 2 - s * float(d @ _UP), s


# -- the background ----------------------------------------------------------------------------------------

def _lines() -> list[tuple[tuple[float, float], tuple[float, float]]]:
    cw, cl, ny = R.COURT_W, R.COURT_L, R.NET_Y
    s_in = 0.46            # singles sideline
    short = 1.98           # short service line from the net
    long_d = 0.76          # doubles long service line inside the baseline
    segs = [((0, 0), (cw, 0)), ((0, cl), (cw, cl)), ((0, 0), (0, cl)), ((cw, 0), (cw, cl)),
            ((s_in, 0), (s_in, cl)), ((cw - s_in, 0), (cw - s_in, cl)),
            ((0, ny - short), (cw, ny - short)), ((0, ny + short), (cw, ny + short)),
            ((0, long_d), (cw, long_d)), ((0, cl - long_d), (cw, cl - long_d)),
            ((cw / 2, 0), (cw / 2, ny - short)), ((cw / 2, ny + short), (cw / 2, cl))]
    return segs


@lru_cache(maxsize=1)
def background_image() -> Image.Image:
    img = Image.new("RGB", (W * SS, H * SS), SURROUND)
    d = ImageDraw.Draw(img)

    def P(x, y, z=0.0):
        px, py, _ = project(x, y, z)
        return (px * SS, py * SS)

    m = 0.6
    d.polygon([P(-m, -m), P(R.COURT_W + m, -m), P(R.COURT_W + m, R.COURT_L + m), P(-m, R.COURT_L + m)], fill=COURT)
    for (x0, y0), (x1, y1) in _lines():
        # a line 4 cm wide: a thin quad
        if y0 == y1:
            quad = [P(x0, y0 - 0.02), P(x1, y1 - 0.02), P(x1, y1 + 0.02), P(x0, y0 + 0.02)]
        else:
            quad = [P(x0 - 0.02, y0), P(x1 - 0.02, y1), P(x1 + 0.02, y1), P(x0 + 0.02, y0)]
        d.polygon(quad, fill=LINE)
    # the net: a dark mesh (translucent) between two posts, a white tape on top
    ny = R.NET_Y
    mesh = Image.new("L", img.size, 0)
    ImageDraw.Draw(mesh).polygon([P(0, ny, 0.78), P(R.COURT_W, ny, 0.78), P(R.COURT_W, ny, NET_H), P(0, ny, NET_H)], fill=120)
    img = Image.composite(Image.new("RGB", img.size, NET_MESH), img, mesh)
    d = ImageDraw.Draw(img)
    tape = [P(0, ny, NET_H - 0.07), P(R.COURT_W, ny, NET_H - 0.07), P(R.COURT_W, ny, NET_H), P(0, ny, NET_H)]
    d.polygon(tape, fill=NET_TAPE)
    for x in (-0.05, R.COURT_W + 0.05):
        x0, y0 = P(x, ny, 0)
        x1, y1 = P(x, ny, NET_H + 0.02)
        d.line([(x0, y0), (x1, y1)], fill=(200, 200, 200), width=3 * SS)
    return img.resize((W, H), Image.Resampling.LANCZOS)


@lru_cache(maxsize=1)
def background_pixels() -> np.ndarray:
    out = np.asarray(background_image()).copy()
    out.flags.writeable = False
    return out


# -- sprites -------------------------------------------------------------------------------------------------

Sprite = tuple[np.ndarray, np.ndarray, int, int]   # (255 - alpha, rgb * alpha) as uint32; anchor (ax, ay)


def _terms(rgba: Image.Image, ax: int, ay: int) -> Sprite:
    a = np.asarray(rgba, dtype=np.uint32)
    alpha = a[:, :, 3:4]
    return (255 - alpha, a[:, :, :3] * alpha, ax, ay)


@lru_cache(maxsize=None)
def player_sprite(side: str, scale_q: int) -> Sprite:
    """A standing player PLAYER_H tall at `scale_q` / 2 pixels per metre; anchor at the feet."""
    s = scale_q / 2.0
    h = PLAYER_H * s
    w = 0.5 * s
    bw, bh = int(math.ceil(w + 6)), int(math.ceil(h + 6))
    big = Image.new("RGBA", (bw * 4, bh * 4), (0, 0, 0, 0))
    d = ImageDraw.Draw(big)
    cx = bw * 2
    foot = (bh - 2) * 4
    head_r = 0.11 * s * 4
    shirt_top, shirt_bot = foot - h * 4 + 2 * head_r, foot - 0.50 * h * 4
    d.rounded_rectangle([cx - w * 2, shirt_top, cx + w * 2, shirt_bot], radius=w * 1.2, fill=PLAYER_RGB[side] + (255,))
    d.rectangle([cx - w * 1.6, shirt_bot - 1, cx + w * 1.6, foot - 0.30 * h * 4], fill=SHORTS + (255,))
    leg = w * 0.55
    d.rectangle([cx - w * 1.4, foot - 0.30 * h * 4, cx - w * 1.4 + leg, foot], fill=SKIN + (255,))
    d.rectangle([cx + w * 1.4 - leg, foot - 0.30 * h * 4, cx + w * 1.4, foot], fill=SKIN + (255,))
    d.ellipse([cx - head_r, foot - h * 4, cx + head_r, foot - h * 4 + 2 * head_r], fill=SKIN + (255,))
    small = big.resize((bw, bh), Image.Resampling.LANCZOS)
    return _terms(small, bw // 2, bh - 2)


@lru_cache(maxsize=None)
def disc_sprite(radius_q: int, rgb: tuple[int, int, int], alpha: int, flat: float, outline: bool) -> Sprite:
    """A disc (radius `radius_q` / 4 px; squashed vertically by `flat`), anchor at its centre."""
    r = radius_q / 4.0
    n = int(math.ceil(2 * r + 4))
    big = Image.new("RGBA", (n * 4, n * 4), (0, 0, 0, 0))
    d = ImageDraw.Draw(big)
    c = n * 2
    if outline:
        d.ellipse([c - r * 4, c - r * 4 * flat, c + r * 4, c + r * 4 * flat], fill=(30, 30, 30, alpha))
        ri = max(r - 1.0, r * 0.6) * 4
        d.ellipse([c - ri, c - ri * flat, c + ri, c + ri * flat], fill=rgb + (alpha,))
    else:
        d.ellipse([c - r * 4, c - r * 4 * flat, c + r * 4, c + r * 4 * flat], fill=rgb + (alpha,))
    small = big.resize((n, n), Image.Resampling.LANCZOS)
    return _terms(small, n // 2, n // 2)


Box = tuple[int, int, int, int]


def paste(pixels: np.ndarray, sprite: Sprite, x: float, y: float) -> tuple[Box, tuple[int, int, int]]:
    """Blend `sprite` with its anchor at (x, y): out = (dst * (255 - a) + src * a + 127) // 255.
    Returns the box it covers and a key (sprite, x0, y0) that is equal when the same sprite lands on the same place."""
    inv, pre, ax, ay = sprite
    h, w = inv.shape[:2]
    x0, y0 = int(round(x)) - ax, int(round(y)) - ay
    key = (id(sprite), x0, y0)
    cx0, cy0 = max(x0, 0), max(y0, 0)
    cx1, cy1 = min(x0 + w, pixels.shape[1]), min(y0 + h, pixels.shape[0])
    if cx1 <= cx0 or cy1 <= cy0:
        return (0, 0, 0, 0), key
    sy, sx = slice(cy0 - y0, cy1 - y0), slice(cx0 - x0, cx1 - x0)
    region = pixels[cy0:cy1, cx0:cx1]
    region[...] = (region * inv[sy, sx] + pre[sy, sx] + 127) // 255
    return (cx0, cy0, cx1, cy1), key


def shuttle_screen(shuttle: tuple[float, float, float]) -> tuple[float, float, float, float, float]:
    """(x, y) of the shuttle, (x, y) of its shadow on the floor, pixels per metre there."""
    gx, gy, s = project(shuttle[0], shuttle[1], 0.0)
    sx, sy, _ = project(*shuttle)
    return sx, max(sy, EDGE), gx, gy, s


def draw_sprites(pixels: np.ndarray, sc: Scene) -> list[tuple[Box, tuple[int, int, int]]]:
    """Draw the scene's sprites in order (shadows, the far player, the near player, the shuttle)."""
    out = []
    sx, sy, gx, gy, s = shuttle_screen(sc.shuttle)
    rq = max(8, int(round(0.09 * s * 4)))
    out.append(paste(pixels, disc_sprite(rq + 2, SHADOW, 150, 0.45, False), gx, gy))
    order = sorted((("a", sc.a), ("b", sc.b)), key=lambda p: p[1][1])   # the far player first
    for side, (x, y) in order:
        px, py, ps = project(x, y, 0.0)
        out.append(paste(pixels, disc_sprite(max(8, int(round(0.35 * ps * 4))), SHADOW, 110, 0.35, False), px, py))
        out.append(paste(pixels, player_sprite(side, max(20, int(round(ps * 2)))), px, py))
    out.append(paste(pixels, disc_sprite(rq, SHUTTLE, 255, 1.0, True), sx, sy))
    return out


def draw_scene(sc: Scene) -> Image.Image:
    pixels = background_pixels().astype(np.uint32)
    draw_sprites(pixels, sc)
    return Image.fromarray(pixels.astype(np.uint8))


class Canvas:
    """One picture redrawn scene after scene; `draw` returns the boxes that may have changed (none when every
    sprite is the same sprite at the same place as before)."""

    def __init__(self) -> None:
        self.work = background_pixels().astype(np.uint32)
        self._drawn: list[tuple[Box, tuple[int, int, int]]] = []

    def draw(self, sc: Scene) -> list[Box]:
        bg = background_pixels()
        work = self.work
        old = self._drawn
        for (x0, y0, x1, y1), _ in old:
            work[y0:y1, x0:x1] = bg[y0:y1, x0:x1]
        new = draw_sprites(work, sc)
        self._drawn = new
        if [k for _, k in old] == [k for _, k in new]:
            return []
        return merge_boxes([b for b, _ in old + new if b[2] > b[0]])

    def pixels_u8(self, boxes: list[Box], out: np.ndarray) -> np.ndarray:
        for x0, y0, x1, y1 in boxes:
            out[y0:y1, x0:x1] = self.work[y0:y1, x0:x1]
        return out


def _area(b) -> int:
    return (b[2] - b[0]) * (b[3] - b[1])


def merge_boxes(boxes: list[Box]) -> list[Box]:
    """Overlapping boxes merged into their bounding box where that box is no larger than the two together."""
    out = [tuple(b) for b in boxes]
    merged = True
    while merged:
        merged = False
        for i in range(len(out)):
            for j in range(i + 1, len(out)):
                a, b = out[i], out[j]
                u = (min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))
                if a[0] <= b[2] and b[0] <= a[2] and a[1] <= b[3] and b[1] <= a[3] and _area(u) <= _area(a) + _area(b):
                    out[i] = u
                    del out[j]
                    merged = True
                    break
            if merged:
                break
    return out


__all__ = ["project", "background_image", "draw_scene", "Canvas", "shuttle_screen", "W", "H"]

