"""Drawing a board of stones on a square grid (Go, Gomoku): the grid, the star points and the stone
sprites, deterministic to the byte.

A game describes its board once (StoneBoard: geometry, colours, one StoneStyle per colour, any
decoration such as coordinate labels) and draws positions with it. Stones are drawn at SUPERSAMPLE x
and reduced with LANCZOS, so their edges are smooth and the pixels are the same on every build.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Hashable, Iterable

from PIL import Image, ImageDraw

from video_arena.games.pixel_reader import STONE_CHARS

RGB = tuple[int, int, int]


@dataclass(frozen=True)
class StoneStyle:
    """One colour of stone: a disc of `fill`; optionally a highlight disc (`highlight_box`, in the
    supersampled sprite's pixels) and an inner face `inset` supersampled pixels inside the disc."""
    fill: RGB
    highlight: RGB | None = None
    highlight_box: tuple[int, int, int, int] | None = None
    face: RGB | None = None
    inset: int = 0


class StoneBoard:
    """A size x size grid drawn on a render x render image, lines `spacing` px apart and centred.

    edge_width: width of the outermost lines; frame: also a 2 px frame 1 px outside them; disc_trim:
    pixels (supersampled) taken off the far edge of a stone's disc; decorate(draw, board) draws
    anything else onto the empty board once (labels)."""

    def __init__(self, size: int, render: int, spacing: int, stone_r: int, board_rgb: RGB, line_rgb: RGB,
                 star_points: Iterable[tuple[int, int]], styles: dict[Hashable, StoneStyle], *,
                 supersample: int = 4, edge_width: int = 1, frame: bool = False, disc_trim: int = 0,
                 decorate: Callable[[ImageDraw.ImageDraw, "StoneBoard"], None] | None = None) -> None:
        self.size, self.render, self.spacing, self.stone_r = size, render, spacing, stone_r
        self.margin = (render - (size - 1) * spacing) // 2
        self.board_rgb, self.line_rgb = board_rgb, line_rgb
        self.star_points = tuple(star_points)  # (column, row)
        self.styles = dict(styles)
        self.supersample, self.edge_width, self.frame, self.disc_trim = supersample, edge_width, frame, disc_trim
        self.decorate = decorate
        self._empty: Image.Image | None = None
        self._sprites: dict[Hashable, tuple[Image.Image, Image.Image]] = {}

    def px(self, i: int) -> int:
        """The pixel of line i (column from the left, row from the top)."""
        return self.margin + i * self.spacing

    def empty(self) -> Image.Image:
        """The empty board (made once; copy it before drawing on it)."""
        if self._empty is None:
            img = Image.new("RGB", (self.render, self.render), self.board_rgb)
            d = ImageDraw.Draw(img)
            lo, hi = self.px(0), self.px(self.size - 1)
            for i in range(self.size):
                w = self.edge_width if i in (0, self.size - 1) else 1
                d.line([(self.px(i), lo), (self.px(i), hi)], fill=self.line_rgb, width=w)
                d.line([(lo, self.px(i)), (hi, self.px(i))], fill=self.line_rgb, width=w)
            if self.frame:
                d.rectangle([lo - 1, lo - 1, hi + 1, hi + 1], outline=self.line_rgb, width=2)
            for c, r in self.star_points:
                x, y = self.px(c), self.px(r)
                d.ellipse([x - 3, y - 3, x + 3, y + 3], fill=self.line_rgb)
            if self.decorate is not None:
                self.decorate(d, self)
            self._empty = img
        return self._empty

    def sprite(self, colour: Hashable) -> tuple[Image.Image, Image.Image]:
        """(RGB sprite, alpha mask) of one stone, (2 * stone_r + 2) px square."""
        if colour not in self._sprites:
            style, s = self.styles[colour], self.supersample
            n = (2 * self.stone_r + 2) * s
            rgb = Image.new("RGB", (n, n), (0, 0, 0))
            mask = Image.new("L", (n, n), 0)
            dr, dm = ImageDraw.Draw(rgb), ImageDraw.Draw(mask)
            end = s + 2 * self.stone_r * s - self.disc_trim  # 1 px of padding on each side
            disc = [s, s, end, end]
            dm.ellipse(disc, fill=255)
            dr.ellipse(disc, fill=style.fill)
            if style.highlight is not None and style.highlight_box is not None:
                dr.ellipse(list(style.highlight_box), fill=style.highlight)
            if style.face is not None:
                k = style.inset
                dr.ellipse([disc[0] + k, disc[1] + k, disc[2] - k, disc[3] - k], fill=style.face)
            size = (n // s, n // s)
            self._sprites[colour] = (rgb.resize(size, Image.Resampling.LANCZOS),
                                     mask.resize(size, Image.Resampling.LANCZOS))
        return self._sprites[colour]

    def paste(self, img: Image.Image, col: int, row: int, colour: Hashable) -> None:
        """One stone on `img`, centred on the point (col, row)."""
        rgb, mask = self.sprite(colour)
        img.paste(rgb, (self.px(col) - rgb.width // 2, self.px(row) - rgb.height // 2), mask)

    def draw(self, stones: Iterable[tuple[int, int, Hashable]]) -> Image.Image:
        """A new image: the empty board and the stones (col, row, colour), in that order."""
        img = self.empty().copy()
        for col, row, colour in stones:
            self.paste(img, col, row, colour)
        return img


# -- the visible state of a stone board (what the games' readers return: video_arena/games/pixel_reader.py) --
#: one character per point, as the readers write a board: empty, black, white
VISIBLE_CHARS = STONE_CHARS


def visible_rows(size: int, stones: Iterable[tuple[int, int, bool]]) -> list[str]:
    """The board as the readers write it, top row first: `stones` are (col, row from the top, is_black)."""
    grid = [["."] * size for _ in range(size)]
    for col, row, black in stones:
        grid[row][col] = "X" if black else "O"
    return ["".join(r) for r in grid]


def placed_stones(features: list[dict], size: int) -> list[tuple[bool, int, int] | None]:
    """Per visible board (`{"board": rows}`), the stone it adds to the board before it (the first: to the
    empty board) as (is_black, col, row from the top), or None when it adds none or is not a size x size
    board of VISIBLE_CHARS (nothing a watcher could place)."""
    out: list[tuple[bool, int, int] | None] = []
    prev = ["." * size] * size
    for f in features:
        rows = f.get("board") if isinstance(f, dict) else None
        if not (isinstance(rows, list) and len(rows) == size and all(
                isinstance(r, str) and len(r) == size and set(r) <= set(VISIBLE_CHARS) for r in rows)):
            out.append(None)
            continue
        added = [(rows[r][c] == "X", c, r) for r in range(size) for c in range(size)
                 if rows[r][c] != "." and prev[r][c] == "."]
        out.append(added[0] if len(added) == 1 else None)
        prev = rows
    return out
