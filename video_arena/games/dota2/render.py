"""The DOTA 2 picture: the whole map from above, square, drawn by the toolkit from the record (no text, no HUD).

The map (drawn once): dark green ground, the river as a blue band from the top-left to the bottom-right,
the three lanes as brown paths, the two bases as tinted squares (radiant bottom left, dire top right), and
Roshan's pit, a dark disc on the river's north-west bank.  On it, in draw order:

- wards (context, not events), where and while the record has them: an observer ward a yellow disc, a
  sentry ward a light-blue disc, each ringed in its side's colour;
- every building of both sides at its place (POSITIONS, our own table of the 7.1x map in OpenDota's
  map cells): towers as squares, melee barracks as diamonds, ranged barracks as discs, the Ancient as a
  large square with a white ring, filled in the side's colour (radiant green, dire red).  In the last
  COLLAPSE_S seconds before it falls a building is filled white; from its fall on it is a grey
  outline of its shape;
- Roshan in his pit, a tan disc; from a kill on, the disc is the killer's colour until ROSHAN_RESPAWN_S
  later (match.py), then tan again.

Geometry: OpenDota's map grid (cells of 128 world units, 0-256) from cell MAP_LO to MAP_HI on both axes
fills the picture, map y up.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from PIL import Image, ImageDraw

from video_arena.games.dota2.match import BUILDINGS, ROSHAN_RESPAWN_S, Match

SIZE = 512
MAP_LO, MAP_HI = 64.0, 192.0
SCALE = SIZE / (MAP_HI - MAP_LO)          # pixels per map cell (4)
#: A building's look changes this many seconds before its fall (the "short visible change ending at t").
COLLAPSE_S = 3

GROUND = (30, 48, 32)
RIVER = (38, 78, 122)
LANE = (112, 98, 70)
BASE_TINT = {"radiant": (40, 70, 46), "dire": (74, 44, 40)}
PIT = (18, 18, 20)
SIDE_RGB = {"radiant": (60, 205, 90), "dire": (225, 60, 50)}
ROSHAN_RGB = (196, 170, 128)
COLLAPSE_RGB = (250, 250, 250)
RUBBLE_RGB = (120, 120, 120)
EDGE = (12, 12, 12)
RING = (245, 245, 245)
WARD_RGB = {"observer": (250, 220, 60), "sentry": (120, 200, 255)}

#: Where each building stands, in OpenDota map cells (x to the right, y up): our own table, read off the
#: map of the 7.1x patches (The International 2018 was played on 7.19).  Radiant's base is bottom left.
POSITIONS: dict[str, tuple[float, float]] = {
    "radiant_tower1_top": (78.5, 142.5), "radiant_tower2_top": (79.0, 121.0), "radiant_tower3_top": (76.5, 101.5),
    "radiant_tower1_mid": (116.0, 117.0), "radiant_tower2_mid": (100.5, 106.5), "radiant_tower3_mid": (91.75, 95.5),
    "radiant_tower1_bot": (166.5, 80.5), "radiant_tower2_bot": (123.5, 80.5), "radiant_tower3_bot": (97.0, 80.25),
    "radiant_melee_top": (74.0, 97.5), "radiant_ranged_top": (79.5, 97.5),
    "radiant_melee_mid": (90.5, 91.5), "radiant_ranged_mid": (87.5, 94.5),
    "radiant_melee_bot": (93.0, 82.5), "radiant_ranged_bot": (93.0, 77.5),
    "radiant_tower4_a": (83.0, 90.5), "radiant_tower4_b": (86.0, 87.5), "radiant_fort": (81.0, 85.5),
    "dire_tower1_top": (91.5, 175.0), "dire_tower2_top": (128.0, 175.0), "dire_tower3_top": (155.75, 173.5),
    "dire_tower1_mid": (132.0, 133.0), "dire_tower2_mid": (147.5, 144.5), "dire_tower3_mid": (161.5, 157.5),
    "dire_tower1_bot": (177.0, 114.5), "dire_tower2_bot": (178.0, 131.0), "dire_tower3_bot": (177.5, 151.75),
    "dire_melee_top": (160.0, 176.0), "dire_ranged_top": (160.0, 171.0),
    "dire_melee_mid": (162.5, 161.5), "dire_ranged_mid": (165.5, 158.5),
    "dire_melee_bot": (175.0, 156.0), "dire_ranged_bot": (180.5, 156.0),
    "dire_tower4_a": (166.5, 165.5), "dire_tower4_b": (169.5, 162.5), "dire_fort": (172.0, 168.0),
}
ROSHAN_PIT = (109.0, 142.5)
RIVER_LINE = ((66.0, 162.0), (190.0, 94.0))
RIVER_WIDTH = 7.0                               # cells
LANES_PATH = {
    "top": [(76.5, 101.5), (79.0, 121.0), (78.5, 142.5), (78.5, 168.0), (84.0, 175.0), (91.5, 175.0), (128.0, 175.0),
            (155.75, 173.5)],
    "mid": [(91.75, 95.5), (100.5, 106.5), (116.0, 117.0), (132.0, 133.0), (147.5, 144.5), (161.5, 157.5)],
    "bot": [(97.0, 80.25), (123.5, 80.5), (166.5, 80.5), (172.0, 82.0), (177.0, 88.0), (177.0, 114.5), (178.0, 131.0),
            (177.5, 151.75)],
}
LANE_WIDTH = 2.6                                # cells
BASES = {"radiant": (70.0, 74.0, 101.0, 105.0), "dire": (154.0, 150.0, 186.0, 181.0)}   # x0, y0, x1, y1 cells
#: Half sizes in pixels of the sprites.
HALF = {"tower": 5, "melee": 6, "ranged": 5, "fort": 9, "observer": 3, "sentry": 3, "roshan": 7}
PIT_RADIUS = 10


def px(x: float, y: float) -> tuple[float, float]:
    return (x - MAP_LO) * SCALE, (MAP_HI - y) * SCALE


@lru_cache(maxsize=1)
def map_layer() -> Image.Image:
    """The map without anything of a match: ground, bases, river, lanes, Roshan's pit (never drawn on: copy it)."""
    img = Image.new("RGB", (SIZE, SIZE), GROUND)
    d = ImageDraw.Draw(img)
    for side, (x0, y0, x1, y1) in BASES.items():
        (a, b), (c, e) = px(x0, y1), px(x1, y0)
        d.rounded_rectangle([round(a), round(b), round(c), round(e)], radius=round(4 * SCALE), fill=BASE_TINT[side])
    d.line([tuple(round(v) for v in px(*p)) for p in RIVER_LINE], fill=RIVER, width=round(RIVER_WIDTH * SCALE))
    for path in LANES_PATH.values():
        pts = [tuple(round(v) for v in px(*p)) for p in path]
        d.line(pts, fill=LANE, width=round(LANE_WIDTH * SCALE), joint="curve")
    cx, cy = (round(v) for v in px(*ROSHAN_PIT))
    d.ellipse([cx - PIT_RADIUS, cy - PIT_RADIUS, cx + PIT_RADIUS, cy + PIT_RADIUS], fill=PIT)
    return img


@dataclass(frozen=True)
class Sprite:
    """One thing drawn on the map: its shape at a pixel centre, with fill and outline colours."""

    shape: str                       # square | diamond | disc | fort | outline-square | outline-diamond | outline-disc | outline-fort
    x: int
    y: int
    half: int
    fill: tuple[int, int, int]
    edge: tuple[int, int, int]

    def box(self) -> tuple[int, int, int, int]:
        r = self.half + 3
        return (self.x - r, self.y - r, self.x + r + 1, self.y + r + 1)


SHAPE = {"tower": "square", "melee": "diamond", "ranged": "disc", "fort": "fort"}


def _centre(x: float, y: float) -> tuple[int, int]:
    a, b = px(x, y)
    return round(a), round(b)


@dataclass
class Timeline:
    """When each thing of the picture changes, in video frames (fps 1: frame k is video second k)."""

    fall: dict[str, int]                          # building id -> the frame of its fall (its event's frame)
    roshan_kills: list[tuple[int, str]]           # (frame, killer side)
    wards: list[tuple[int, int, str, str, int, int]]   # (first frame, first frame gone, side, kind, x, y)
    fps: int
    start: int                                    # video start, game seconds


def timeline(m: Match, event_frames: list[int], fps: int) -> Timeline:
    fall, kills = {}, []
    for e, f in zip(m.events, event_frames):
        if e.building:
            fall[e.building] = f
        elif e.type == "roshan":
            kills.append((f, e.actor))
    wards = []
    for w in m.wards:
        a, b = max(0, (w.placed - m.video_start) * fps), (w.removed - m.video_start) * fps
        if b > a:
            wards.append((a, b, w.side, w.kind, w.x, w.y))
    return Timeline(fall, kills, wards, fps, m.video_start)


def sprites(tl: Timeline, frame: int) -> dict[Any, Sprite]:
    """Everything drawn over the map at `frame`, keyed, in draw order (wards, buildings, Roshan)."""
    out: dict[Any, Sprite] = {}
    for k, (a, b, side, kind, x, y) in enumerate(tl.wards):
        if a <= frame < b:
            cx, cy = _centre(x, y)
            out[("w", k)] = Sprite("disc", cx, cy, HALF[kind], WARD_RGB[kind], SIDE_RGB[side])
    collapse = COLLAPSE_S * tl.fps
    for b in BUILDINGS:
        cx, cy = _centre(*POSITIONS[b.id])
        shape, half = SHAPE[b.kind], HALF[b.kind]
        f = tl.fall.get(b.id)
        if f is not None and frame >= f:
            out[b.id] = Sprite("outline-" + shape, cx, cy, half, RUBBLE_RGB, RUBBLE_RGB)
        elif f is not None and frame >= f - collapse:
            out[b.id] = Sprite(shape, cx, cy, half, COLLAPSE_RGB, SIDE_RGB[b.side])
        else:
            out[b.id] = Sprite(shape, cx, cy, half, SIDE_RGB[b.side], EDGE)
    colour = ROSHAN_RGB
    for f, killer in tl.roshan_kills:
        if f <= frame < f + ROSHAN_RESPAWN_S * tl.fps:
            colour = SIDE_RGB[killer]
    cx, cy = _centre(*ROSHAN_PIT)
    out["roshan"] = Sprite("disc", cx, cy, HALF["roshan"], colour, EDGE)
    return out


@lru_cache(maxsize=1)
def map_array() -> np.ndarray:
    out = np.asarray(map_layer()).copy()
    out.flags.writeable = False
    return out


@lru_cache(maxsize=None)
def _patch(shape: str, half: int, fill: tuple[int, int, int], edge: tuple[int, int, int]) -> tuple[np.ndarray, np.ndarray]:
    """(RGB pixels, mask) of one sprite drawn with PIL on its own square, centre at (r, r)."""
    r = half + 3
    n = 2 * r + 1
    rgb, alpha = Image.new("RGB", (n, n)), Image.new("L", (n, n))
    outline = shape.startswith("outline-")
    shape = shape.removeprefix("outline-")
    for img, f, e in ((rgb, None if outline else fill, edge), (alpha, None if outline else 255, 255)):
        d = ImageDraw.Draw(img)
        x, y, h = r, r, half
        if shape in ("square", "fort"):
            d.rectangle([x - h, y - h, x + h, y + h], fill=f, outline=e, width=2)
            if shape == "fort" and not outline:
                d.rectangle([x - h + 3, y - h + 3, x + h - 3, y + h - 3], outline=RING if img is rgb else 255, width=2)
        elif shape == "diamond":
            d.polygon([(x, y - h), (x + h, y), (x, y + h), (x - h, y)], fill=f, outline=e, width=2)
        else:
            d.ellipse([x - h, y - h, x + h, y + h], fill=f, outline=e, width=2)
    return np.asarray(rgb).copy(), np.asarray(alpha) > 0


def draw(sprs: dict[Any, Sprite]) -> np.ndarray:
    """The picture: the map with the sprites pasted in order, (SIZE, SIZE, 3) uint8 RGB."""
    out = map_array().copy()
    for s in sprs.values():
        rgb, mask = _patch(s.shape, s.half, s.fill, s.edge)
        r = mask.shape[0] // 2
        x0, y0 = s.x - r, s.y - r
        cx0, cy0, cx1, cy1 = max(x0, 0), max(y0, 0), min(x0 + mask.shape[1], SIZE), min(y0 + mask.shape[0], SIZE)
        if cx1 <= cx0 or cy1 <= cy0:
            continue
        sub = mask[cy0 - y0:cy1 - y0, cx0 - x0:cx1 - x0]
        out[cy0:cy1, cx0:cx1][sub] = rgb[cy0 - y0:cy1 - y0, cx0 - x0:cx1 - x0][sub]
    return out


def change_frames(tl: Timeline, n_frames: int) -> list[int]:
    """Every frame at which the picture may differ from the frame before (frame 0 included)."""
    out = {0}
    collapse = COLLAPSE_S * tl.fps
    for f in tl.fall.values():
        out |= {f - collapse, f}
    for f, _ in tl.roshan_kills:
        out |= {f, f + ROSHAN_RESPAWN_S * tl.fps}
    for a, b, *_ in tl.wards:
        out |= {a, b}
    return sorted(f for f in out if 0 <= f < n_frames)


def changed_boxes(old: dict[Any, Sprite], new: dict[Any, Sprite]) -> list[tuple[int, int, int, int]]:
    """The boxes of the sprites that appeared, changed or vanished: outside them the two pictures are equal."""
    return [s.box() for k in old.keys() | new.keys() if old.get(k) != new.get(k)
            for s in (old.get(k), new.get(k)) if s is not None]
